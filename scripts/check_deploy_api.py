"""Checks of the HTTP API's deployment files (issue 14): its Deployment, Service, PDB and
autoscaler in deploy/kubernetes, and its systemd unit.

Imported by check_deploy.py, which owns the command line; each check takes (root, problems).
"""
import os

from check_deploy import API_MANAGEMENT_PORT, API_PORT, by_kind, dig, env_value, manifests, rel
from check_deploy_more import check_long_running_unit, parse_unit

API = "pushfleet-api"


def check_api(root, p):
    docs = manifests(root)
    found = [(path, d) for path, d in by_kind(docs, "Deployment") if dig(d, "metadata", "name") == API]
    if not p.expect(found, "deploy/kubernetes", f"no Deployment {API}"):
        return
    path, deployment = found[0]
    where = rel(root, path)
    pod = dig(deployment, "spec", "template", "spec", default={})
    labels = dig(deployment, "spec", "template", "metadata", "labels", default={})
    p.expect(labels.get("app.kubernetes.io/component") == "api", where, "pods need app.kubernetes.io/component: api")
    p.expect((dig(deployment, "spec", "replicas") or 0) >= 2, where, "at least 2 replicas")
    container = dig(pod, "containers", 0, default={})
    p.expect(container.get("args") == ["api"], where, "the container must run `pushfleet api`")
    ports = {port.get("name"): port.get("containerPort") for port in container.get("ports", [])}
    p.expect(ports.get("http") == API_PORT, where, f"needs port 'http' = {API_PORT}")
    p.expect(ports.get("management") == API_MANAGEMENT_PORT, where, f"needs port 'management' = {API_MANAGEMENT_PORT}")
    p.expect(env_value(container, "PUSHFLEET_API_ADDR") == f"0.0.0.0:{API_PORT}", where,
             "PUSHFLEET_API_ADDR must listen on the http port")
    p.expect(env_value(container, "PUSHFLEET_API_MANAGEMENT_ADDR") == f"0.0.0.0:{API_MANAGEMENT_PORT}", where,
             "PUSHFLEET_API_MANAGEMENT_ADDR must listen on the management port")
    for probe, probe_path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = dig(container, probe, "httpGet", default={})
        p.expect(get.get("path") == probe_path, where, f"{probe} must GET {probe_path}")
        p.expect(get.get("port") in ("management", API_MANAGEMENT_PORT), where,
                 f"{probe} must use the management port, never the public one")
    annotations = dig(deployment, "spec", "template", "metadata", "annotations", default={})
    p.expect(annotations.get("prometheus.io/port") == str(API_MANAGEMENT_PORT), where,
             "prometheus.io/port must be the management port")
    try:
        drain = int(env_value(container, "PUSHFLEET_API_DRAIN_SECONDS") or 20)
    except ValueError:
        drain = None
        p.add(where, "PUSHFLEET_API_DRAIN_SECONDS must be an integer")
    command = dig(container, "lifecycle", "preStop", "exec", "command", default=[]) or []
    sleep = int(command[-1]) if len(command) >= 2 and str(command[-1]).isdigit() and "sleep" in str(command[0]) else None
    p.expect(sleep is not None and sleep >= 3, where,
             "a preStop sleep of 3 s or more, so endpoints stop routing to the pod before SIGTERM")
    grace = pod.get("terminationGracePeriodSeconds")
    if drain is not None and sleep is not None:
        p.expect(isinstance(grace, int) and grace >= sleep + drain + 5, where,
                 f"terminationGracePeriodSeconds ({grace}) must cover the preStop sleep ({sleep}) and the drain "
                 f"({drain}) plus 5 s")
    # The Service exposes the API port only.
    services = [(sp, s) for sp, s in by_kind(docs, "Service")
                if dig(s, "spec", "selector", "app.kubernetes.io/component") == "api"]
    if p.expect(services, "deploy/kubernetes", "no Service selects the API pods"):
        for sp, service in services:
            targets = {port.get("targetPort") for port in dig(service, "spec", "ports", default=[]) or []}
            p.expect(targets == {"http"}, rel(root, sp), "the API Service must target the http port only")
    pdbs = [d for _, d in by_kind(docs, "PodDisruptionBudget")
            if dig(d, "spec", "selector", "matchLabels", "app.kubernetes.io/component") == "api"]
    hpas = [(hp, h) for hp, h in by_kind(docs, "HorizontalPodAutoscaler")
            if dig(h, "spec", "scaleTargetRef", "name") == API]
    if p.expect(pdbs, "deploy/kubernetes", "no PodDisruptionBudget for the API") and \
            p.expect(hpas, "deploy/kubernetes", f"no HorizontalPodAutoscaler targets {API}"):
        hp, hpa = hpas[0]
        low, high = dig(hpa, "spec", "minReplicas"), dig(hpa, "spec", "maxReplicas")
        p.expect(isinstance(low, int) and isinstance(high, int) and 2 <= low <= high, rel(root, hp),
                 "need 2 <= minReplicas <= maxReplicas")
        p.expect(dig(hpa, "spec", "scaleTargetRef", "kind") == "Deployment", rel(root, hp), "scaleTargetRef must be a Deployment")
        p.expect((low or 0) > (dig(pdbs[0], "spec", "minAvailable") or 0), rel(root, hp),
                 "minReplicas must exceed the PDB's minAvailable, or drains block")


def check_api_unit(root, p):
    path = os.path.join(root, "deploy", "systemd", "pushfleet-api.service")
    where = "deploy/systemd/pushfleet-api.service"
    if not p.expect(os.path.isfile(path), where, "missing"):
        return
    try:
        entries = parse_unit(path)
    except ValueError as error:
        p.add(where, str(error))
        return
    values = {}
    for _, key, value in entries:
        values.setdefault(key, []).append(value)
    check_long_running_unit(p, where, values, "api", "PUSHFLEET_API_DRAIN_SECONDS", 20)

CHECKS = {"api": check_api, "api-unit": check_api_unit}
