#!/usr/bin/env python3
"""Offline checks of deploy/: one sub-command per check, run by scripts/check-deploy.

Usage: check_deploy.py CHECK --root REPO_ROOT
Each check prints what it found wrong, one line per problem, and exits 1 if anything was;
it exits 0 silently otherwise. Nothing here needs a container engine or a cluster.
"""
import argparse
import json
import os
import re
import sys

import yaml

# --- The worker's metric contract (issue 4, part 9). Alerts and the dashboard may only use these.
METRICS = {
    "pushfleet_queue_jobs": "gauge",
    "pushfleet_queue_due_jobs": "gauge",
    "pushfleet_queue_oldest_due_age_seconds": "gauge",
    "pushfleet_jobs_claimed_total": "counter",
    "pushfleet_deliveries_total": "counter",
    "pushfleet_refunds_total": "counter",
    "pushfleet_retries_total": "counter",
    "pushfleet_provider_request_duration_seconds": "histogram",
    "pushfleet_seal_duration_seconds": "histogram",
    "pushfleet_inflight_requests": "gauge",
    "pushfleet_db_errors_total": "counter",
    "pushfleet_credentials_invalid_total": "counter",
    "pushfleet_ready": "gauge",
    "pushfleet_sms_total": "counter",
    "pushfleet_sms_retries_total": "counter",
    "pushfleet_sms_request_duration_seconds": "histogram",
    # The HTTP API (`pushfleet api`, issue 14), from each replica's management address.
    "pushfleet_api_requests_total": "counter",
    "pushfleet_api_request_duration_seconds": "histogram",
    "pushfleet_api_rate_limited_total": "counter",
    "pushfleet_api_db_errors_total": "counter",
    "pushfleet_api_db_pool_connections": "gauge",
    "pushfleet_api_db_pool_max_connections": "gauge",
    "pushfleet_api_db_pool_waiting": "gauge",
    "pushfleet_api_connections": "gauge",
    "pushfleet_api_inflight_requests": "gauge",
    "pushfleet_api_deadline_closed_total": "counter",
    "pushfleet_api_ready": "gauge",
    # Webhooks (issue 19, part 7).
    "pushfleet_webhook_attempts_total": "counter",
    "pushfleet_webhook_deliveries_total": "counter",
    "pushfleet_webhook_request_duration_seconds": "histogram",
    "pushfleet_webhook_inflight_requests": "gauge",
    "pushfleet_webhook_endpoints_disabled_total": "counter",
    "pushfleet_webhook_endpoints_disabled": "gauge",
    "pushfleet_webhook_oldest_pending_age_seconds": "gauge",
    # Provider pauses (issue 23, R-KIND-4).
    "pushfleet_provider_paused": "gauge",
    "pushfleet_provider_pauses_total": "counter",
    "pushfleet_provider_resumes_total": "counter",
    "pushfleet_provider_probes_total": "counter",
    "pushfleet_deliveries_held_total": "counter",
    # Confirmed delivery (issue 24, R-IDS-4): sent by the workers, confirmed by the API replicas.
    "pushfleet_pushes_sent_total": "counter",
    "pushfleet_pushes_confirmed_total": "counter",
    "pushfleet_api_preview_rate_limited_total": "counter",
}
API_PORT = 8080
API_MANAGEMENT_PORT = 9465
METRICS_PORT = 9464
KEDA_GROUP = "keda.sh/"
K8S_VERSIONS = ("1.29.0", None)  # None: the newest schema kubernetes-validate ships
REQUIRED_ALERT_METRICS = {  # each alert topic of the brief, by the metric it must watch
    "oldest due job age": "pushfleet_queue_oldest_due_age_seconds",
    "delivery error rate": "pushfleet_deliveries_total",
    "credentials invalid": "pushfleet_credentials_invalid_total",
    "poison jobs": "pushfleet_queue_jobs",
    "worker not ready": "pushfleet_ready",
    "database errors": "pushfleet_db_errors_total",
    "SMS fallback outcome unknown": "pushfleet_sms_total",
    "api 5xx ratio": "pushfleet_api_requests_total",
    "api p99 latency": "pushfleet_api_request_duration_seconds",
    "api replica not ready": "pushfleet_api_ready",
    "webhook endpoints disabled": "pushfleet_webhook_endpoints_disabled_total",
    "provider paused": "pushfleet_provider_paused",
}
DASHBOARD_METRICS = set(METRICS) - {"pushfleet_credentials_invalid_total", "pushfleet_db_errors_total",
                                    "pushfleet_ready", "pushfleet_jobs_claimed_total", "pushfleet_api_db_errors_total",
                                    # SMS fallbacks: alerted on (PushfleetSMSOutcomeUnknown), no panel yet
                                    "pushfleet_sms_total", "pushfleet_sms_retries_total",
                                    "pushfleet_sms_request_duration_seconds"}


class Problems:
    """Collects problems; the check fails when any were recorded."""

    def __init__(self):
        self.items = []

    def add(self, where, message):
        self.items.append(f"{where}: {message}")

    def expect(self, condition, where, message):
        if not condition:
            self.add(where, message)
        return bool(condition)


# --- helpers ---------------------------------------------------------------------------------

def deploy_files(root, suffixes):
    base = os.path.join(root, "deploy")
    found = []
    for directory, _, names in os.walk(base):
        for name in sorted(names):
            if name.endswith(suffixes):
                found.append(os.path.join(directory, name))
    return sorted(found)


def rel(root, path):
    return os.path.relpath(path, root)


def load_docs(path):
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def manifests(root):
    """(path, document) for every Kubernetes document under deploy/kubernetes."""
    out = []
    for path in deploy_files(root, (".yaml", ".yml")):
        if os.sep + "kubernetes" + os.sep in path:
            out.extend((path, doc) for doc in load_docs(path))
    return out


def by_kind(docs, kind):
    return [(p, d) for p, d in docs if isinstance(d, dict) and d.get("kind") == kind]


def dig(obj, *keys, default=None):
    for key in keys:
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, (list, tuple)) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
    return obj


def env_value(container, name):
    for item in container.get("env", []) or []:
        if item.get("name") == name:
            return item.get("value")
    return None


def metric_names(expr):
    """Metric names an expression uses, histogram/counter suffixes folded onto their family."""
    names = set(re.findall(r"\bpushfleet_[a-z0-9_]+", expr))
    folded = set()
    for name in names:
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        folded.add(base if base in METRICS and METRICS[base] == "histogram" else name)
    return folded


# --- checks ------------------------------------------------------------------------------------

def check_yaml(root, p):
    files = deploy_files(root, (".yaml", ".yml"))
    p.expect(files, "deploy/", "no YAML files found")
    for path in files:
        try:
            docs = load_docs(path)
            p.expect(docs, rel(root, path), "no YAML document in file")
        except yaml.YAMLError as error:
            p.add(rel(root, path), f"YAML does not parse: {error}".replace("\n", " "))


def check_k8s(root, p):
    import kubernetes_validate
    from kubernetes_validate import utils as kv
    versions = [v or kv.latest_version() + ".0" for v in K8S_VERSIONS]
    checked = 0
    for path, doc in manifests(root):
        where = f"{rel(root, path)} {doc.get('kind')}/{dig(doc, 'metadata', 'name')}"
        if not p.expect(isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc, where,
                        "not a Kubernetes object (apiVersion and kind required)"):
            continue
        if doc["kind"] == "Kustomization" or str(doc["apiVersion"]).startswith(KEDA_GROUP):
            continue  # checked by the kustomization and keda checks
        for version in versions:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
                checked += 1
            except kv.ValidationError as error:
                path_text = "/".join(str(x) for x in error.path)
                p.add(where, f"invalid for Kubernetes {version} at '{path_text}': {error.message}")
            except kv.SchemaNotFoundError:
                p.add(where, f"unknown kind {doc['kind']} ({doc['apiVersion']}) for Kubernetes {version}")
    p.expect(checked, "deploy/kubernetes", "no core Kubernetes object validated")


KEDA_SCALED_OBJECT_SPEC = {"scaleTargetRef", "minReplicaCount", "maxReplicaCount", "pollingInterval",
                           "cooldownPeriod", "idleReplicaCount", "initialCooldownPeriod", "advanced",
                           "fallback", "triggers"}
KEDA_TRIGGER_KEYS = {"type", "name", "metadata", "authenticationRef", "metricType", "useCachedMetrics"}
KEDA_AUTH_SPEC = {"secretTargetRef", "env", "hashiCorpVault", "podIdentity", "azureKeyVault",
                  "gcpSecretManager", "awsSecretManager", "configMapTargetRef", "boundServiceAccountToken"}


def check_keda(root, p):
    docs = manifests(root)
    auths = {dig(d, "metadata", "name"): (path, d) for path, d in by_kind(docs, "TriggerAuthentication")}
    deployments = {dig(d, "metadata", "name") for _, d in by_kind(docs, "Deployment")}
    scaled = by_kind(docs, "ScaledObject")
    p.expect(scaled, "deploy/kubernetes", "no KEDA ScaledObject found")
    for path, auth in auths.values():
        where = f"{rel(root, path)} TriggerAuthentication/{dig(auth, 'metadata', 'name')}"
        p.expect(auth.get("apiVersion") == "keda.sh/v1alpha1", where, "apiVersion must be keda.sh/v1alpha1")
        spec = auth.get("spec") or {}
        p.expect(isinstance(spec, dict) and spec, where, "spec is required")
        for key in set(spec) - KEDA_AUTH_SPEC:
            p.add(where, f"unknown spec field '{key}'")
        for ref in spec.get("secretTargetRef", []) or []:
            for field in ("parameter", "name", "key"):
                p.expect(isinstance(ref.get(field), str) and ref.get(field), where,
                         f"secretTargetRef entry needs a string '{field}'")
    for path, obj in scaled:
        where = f"{rel(root, path)} ScaledObject/{dig(obj, 'metadata', 'name')}"
        p.expect(obj.get("apiVersion") == "keda.sh/v1alpha1", where, "apiVersion must be keda.sh/v1alpha1")
        p.expect(dig(obj, "metadata", "name"), where, "metadata.name is required")
        spec = obj.get("spec")
        if not p.expect(isinstance(spec, dict), where, "spec is required"):
            continue
        for key in set(spec) - KEDA_SCALED_OBJECT_SPEC:
            p.add(where, f"unknown spec field '{key}'")
        target = spec.get("scaleTargetRef") or {}
        p.expect(target.get("name") in deployments, where,
                 f"scaleTargetRef.name '{target.get('name')}' is not a Deployment of deploy/kubernetes")
        low, high = spec.get("minReplicaCount"), spec.get("maxReplicaCount")
        if p.expect(isinstance(low, int) and isinstance(high, int), where,
                    "minReplicaCount and maxReplicaCount must be integers"):
            p.expect(1 <= low <= high, where, f"need 1 <= minReplicaCount ({low}) <= maxReplicaCount ({high})")
        triggers = spec.get("triggers")
        if not p.expect(isinstance(triggers, list) and triggers, where, "spec.triggers must be a non-empty list"):
            continue
        for index, trigger in enumerate(triggers):
            at = f"{where} triggers[{index}]"
            for key in set(trigger) - KEDA_TRIGGER_KEYS:
                p.add(at, f"unknown trigger field '{key}'")
            meta = trigger.get("metadata")
            p.expect(isinstance(trigger.get("type"), str), at, "type is required")
            if not p.expect(isinstance(meta, dict), at, "metadata must be a map"):
                continue
            for key, value in meta.items():
                p.expect(isinstance(value, str), at, f"metadata.{key} must be a string (KEDA reads strings)")
            if trigger.get("type") == "postgresql":
                p.expect(re.search(r"\bFROM\s+push_queue_stats\b", str(meta.get("query", "")), re.I), at,
                         "postgresql query must read the push_queue_stats view")
                try:
                    p.expect(float(meta.get("targetQueryValue")) > 0, at, "targetQueryValue must be > 0")
                except (TypeError, ValueError):
                    p.add(at, "targetQueryValue must be a number in a string")
                ref = dig(trigger, "authenticationRef", "name")
                has_connection = ref or meta.get("connectionFromEnv") or meta.get("host")
                p.expect(has_connection, at, "needs authenticationRef, connectionFromEnv or host")
                if ref:
                    p.expect(ref in auths, at, f"authenticationRef '{ref}' is not a TriggerAuthentication here")
                    params = {r.get("parameter") for r in dig(auths.get(ref, (None, {}))[1], "spec",
                                                               "secretTargetRef", default=[]) or []}
                    p.expect(params & {"connection", "password"}, at,
                             "its TriggerAuthentication must supply 'connection' (or 'password')")


def check_kustomization(root, p):
    base = os.path.join(root, "deploy", "kubernetes")
    path = os.path.join(base, "kustomization.yaml")
    if not p.expect(os.path.isfile(path), "deploy/kubernetes", "kustomization.yaml is missing"):
        return
    doc = load_docs(path)[0]
    where = rel(root, path)
    p.expect(doc.get("kind") == "Kustomization", where, "kind must be Kustomization")
    p.expect(str(doc.get("apiVersion", "")).startswith("kustomize.config.k8s.io/"), where, "bad apiVersion")
    listed = doc.get("resources") or []
    p.expect(len(set(listed)) == len(listed), where, "a resource is listed twice")
    for name in listed:
        p.expect(os.path.isfile(os.path.join(base, name)), where, f"resource '{name}' does not exist")
        p.expect(".example." not in name, where, f"'{name}' is an example and must not be applied")
    for name in sorted(os.listdir(base)):
        if name.endswith((".yaml", ".yml")) and name != "kustomization.yaml" and ".example." not in name:
            p.expect(name in listed, where, f"'{name}' is not listed in resources")
    namespaces = [dig(d, "metadata", "name") for _, d in by_kind(manifests(root), "Namespace")]
    p.expect(doc.get("namespace") in namespaces, where, "namespace must be the one namespace.yaml creates")
    images = {img.get("name") for img in doc.get("images") or []}
    for path2, workload in by_kind(manifests(root), "Deployment") + by_kind(manifests(root), "Job"):
        for container in dig(workload, "spec", "template", "spec", "containers", default=[]) or []:
            image = str(container.get("image", "")).split(":")[0]
            p.expect(image in images, where, f"no images entry rewrites '{image}' ({rel(root, path2)})")


def component(doc):
    """The app.kubernetes.io/component label of a workload's pods (worker, api)."""
    return dig(doc, "spec", "template", "metadata", "labels", "app.kubernetes.io/component")


def check_consistency(root, p):
    docs = manifests(root)
    deployment = next((d for _, d in by_kind(docs, "Deployment") if component(d) == "worker"), None)
    if not p.expect(deployment, "deploy/kubernetes", "no Deployment"):
        return
    where = "deployment.yaml"
    pod = dig(deployment, "spec", "template", "spec", default={})
    labels = dig(deployment, "spec", "template", "metadata", "labels", default={})
    p.expect(dig(deployment, "spec", "replicas") == 2, where, "replicas must be 2")
    containers = pod.get("containers") or []
    worker = containers[0] if containers else {}
    p.expect(worker.get("args") == ["worker"], where, "the container must run `pushfleet worker`")
    port_names = {port.get("name"): port.get("containerPort") for port in worker.get("ports", [])}
    p.expect(port_names.get("metrics") == METRICS_PORT, where, f"needs port 'metrics' = {METRICS_PORT}")
    p.expect(env_value(worker, "PUSHFLEET_METRICS_ADDR") == f"0.0.0.0:{METRICS_PORT}", where,
             "PUSHFLEET_METRICS_ADDR must listen on the metrics port")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = dig(worker, probe, "httpGet", default={})
        p.expect(get.get("path") == path, where, f"{probe} must GET {path}")
        p.expect(get.get("port") in ("metrics", METRICS_PORT), where, f"{probe} must use the metrics port")
    try:
        drain = int(env_value(worker, "PUSHFLEET_DRAIN_SECONDS") or 25)
    except ValueError:
        drain = None
        p.add(where, "PUSHFLEET_DRAIN_SECONDS must be an integer")
    grace = pod.get("terminationGracePeriodSeconds")
    if drain is not None:
        p.expect(isinstance(grace, int) and grace >= drain + 5, where,
                 f"terminationGracePeriodSeconds ({grace}) must exceed PUSHFLEET_DRAIN_SECONDS ({drain}) by 5 s or more")
    annotations = dig(deployment, "spec", "template", "metadata", "annotations", default={})
    p.expect(annotations.get("prometheus.io/scrape") == "true", where, "pod needs prometheus.io/scrape: \"true\"")
    p.expect(annotations.get("prometheus.io/port") == str(METRICS_PORT), where, "prometheus.io/port must be the metrics port")
    for kind in ("Deployment", "Job"):
        for path, workload in by_kind(docs, kind):
            at = f"{rel(root, path)} {kind}"
            spec = dig(workload, "spec", "template", "spec", default={})
            p.expect(dig(spec, "securityContext", "runAsNonRoot") is True, at, "pod securityContext.runAsNonRoot: true")
            for container in spec.get("containers") or []:
                sc = container.get("securityContext") or {}
                p.expect(sc.get("readOnlyRootFilesystem") is True, at, "readOnlyRootFilesystem: true")
                p.expect(sc.get("allowPrivilegeEscalation") is False, at, "allowPrivilegeEscalation: false")
                p.expect("ALL" in (dig(sc, "capabilities", "drop", default=[]) or []), at, "capabilities.drop: [ALL]")
                for bound in ("requests", "limits"):
                    p.expect(dig(container, "resources", bound), at, f"resources.{bound} required")
    job = dig(by_kind(docs, "Job"), 0, 1)
    if p.expect(job, "deploy/kubernetes", "no migrate Job"):
        p.expect(dig(job, "spec", "template", "spec", "containers", 0, "args") == ["migrate"], "migrate-job.yaml",
                 "the Job must run `pushfleet migrate`")
        p.expect(dig(job, "spec", "template", "spec", "restartPolicy") == "Never", "migrate-job.yaml",
                 "restartPolicy Never (the Job's backoffLimit retries)")
    # Secrets: every non-optional key a workload or KEDA reads exists in the example Secret.
    secret = {}
    for path, doc in by_kind(docs, "Secret"):
        secret.setdefault(dig(doc, "metadata", "name"), set()).update((doc.get("stringData") or {}).keys(),
                                                                       (doc.get("data") or {}).keys())
    for kind in ("Deployment", "Job"):
        for path, workload in by_kind(docs, kind):
            for container in dig(workload, "spec", "template", "spec", "containers", default=[]) or []:
                for item in container.get("env", []) or []:
                    ref = dig(item, "valueFrom", "secretKeyRef")
                    if ref and not ref.get("optional"):
                        p.expect(ref.get("key") in secret.get(ref.get("name"), set()), rel(root, path),
                                 f"secret {ref.get('name')}/{ref.get('key')} is not in secret.example.yaml")
    for path, auth in by_kind(docs, "TriggerAuthentication"):
        for ref in dig(auth, "spec", "secretTargetRef", default=[]) or []:
            p.expect(ref.get("key") in secret.get(ref.get("name"), set()), rel(root, path),
                     f"secret {ref.get('name')}/{ref.get('key')} is not in secret.example.yaml")
    # Each Service and PDB picks the pods of exactly one Deployment (the worker's or the API's),
    # and a Service's target ports are ports that Deployment's container names.
    pods = {dig(d, "metadata", "name"): d for _, d in by_kind(docs, "Deployment")}
    for kind in ("Service", "PodDisruptionBudget"):
        for path, doc in by_kind(docs, kind):
            selector = dig(doc, "spec", "selector", "matchLabels") if kind != "Service" else dig(doc, "spec", "selector")
            picked = [d for d in pods.values()
                      if selector and all(dig(d, "spec", "template", "metadata", "labels", default={}).get(k) == v
                                          for k, v in selector.items())]
            if not p.expect(len(picked) == 1, rel(root, path), f"{kind} selector must match the pods of one Deployment"):
                continue
            if kind == "Service":
                container = dig(picked[0], "spec", "template", "spec", "containers", 0, default={})
                names = {port.get("name") for port in container.get("ports", [])}
                numbers = {port.get("containerPort") for port in container.get("ports", [])}
                for port in dig(doc, "spec", "ports", default=[]) or []:
                    p.expect(port.get("targetPort") in names | numbers, rel(root, path),
                             f"targetPort {port.get('targetPort')} is not a port of {dig(picked[0], 'metadata', 'name')}")
    for path, service in by_kind(docs, "Service"):
        if dig(service, "spec", "selector", "app.kubernetes.io/component") == "worker":
            for port in dig(service, "spec", "ports", default=[]) or []:
                p.expect(port.get("targetPort") in ("metrics", METRICS_PORT), rel(root, path), "targetPort must be metrics")
    pdb = next((d for _, d in by_kind(docs, "PodDisruptionBudget")
                if dig(d, "spec", "selector", "matchLabels", "app.kubernetes.io/component") == "worker"), None)
    scaled = dig(by_kind(docs, "ScaledObject"), 0, 1)
    if p.expect(pdb and scaled, "deploy/kubernetes", "needs a PodDisruptionBudget and a ScaledObject"):
        p.expect(dig(pdb, "spec", "minAvailable") == 1, "pdb.yaml", "minAvailable must be 1")
        p.expect((dig(scaled, "spec", "minReplicaCount") or 0) > (dig(pdb, "spec", "minAvailable") or 0),
                 "keda-scaledobject.yaml", "minReplicaCount must exceed the PDB's minAvailable, or drains block")
    # The view KEDA queries exists in the migrations with the column it reads.
    sql = ""
    for name in sorted(os.listdir(os.path.join(root, "sql"))) if os.path.isdir(os.path.join(root, "sql")) else []:
        if name.endswith(".sql"):
            with open(os.path.join(root, "sql", name), encoding="utf-8") as handle:
                sql += handle.read()
    # The last definition in migration order is the one in force (sql/0013 restates it).
    views = re.findall(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+push_queue_stats\s+AS(.*?);", sql, re.S | re.I)
    if p.expect(views, "sql/", "no CREATE VIEW push_queue_stats in the migrations"):
        for column in ("due", "running", "available", "discarded", "completed", "cancelled", "oldest_due_age_seconds"):
            p.expect(re.search(rf"\b(?:AS\s+|q\.){column}\b", views[-1]), "sql/", f"push_queue_stats lacks column {column}")


if __name__ == "__main__":
    # Split by topic to keep files small; they import the helpers above from this module.
    from check_deploy_artifacts import CHECKS as ARTIFACT_CHECKS
    from check_deploy_more import CHECKS as MORE_CHECKS
    from check_deploy_api import CHECKS as API_CHECKS
    checks = {"yaml": check_yaml, "k8s": check_k8s, "keda": check_keda, "kustomization": check_kustomization,
              "consistency": check_consistency, **MORE_CHECKS, **ARTIFACT_CHECKS, **API_CHECKS}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=sorted(checks))
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    problems = Problems()
    try:
        checks[args.check](os.path.abspath(args.root), problems)
    except (OSError, yaml.YAMLError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        problems.add(args.check, f"could not complete: {type(error).__name__}: {error}")
    for item in problems.items:
        print(item)
    sys.exit(1 if problems.items else 0)
