"""Checks of deploy/ beyond the Kubernetes manifests: alerts, systemd, dashboard, Dockerfile.

Imported by check_deploy.py, which owns the command line; each check takes (root, problems).
"""
import os
import re
import shutil
import subprocess
import tempfile

import yaml

from check_deploy import METRICS, REQUIRED_ALERT_METRICS, metric_names, rel

SEVERITIES = {"critical", "warning", "info"}
CLIENT_ERROR_CODES = ("ENCRYPTION_KEY_MISSING", "PUSH_PAYLOAD_TOO_LARGE")
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


# --- Prometheus alert rules ----------------------------------------------------------------------

def github_anchor(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def check_alerts_contract(root, p):
    path = os.path.join(root, "deploy", "prometheus", "alerts.yml")
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    readme = os.path.join(root, "deploy", "README.md")
    anchors = set()
    if p.expect(os.path.isfile(readme), "deploy/README.md", "missing (alert runbooks point there)"):
        with open(readme, encoding="utf-8") as handle:
            anchors = {github_anchor(line.lstrip("#")) for line in handle if line.startswith("#")}
    rules = [r for g in doc.get("groups") or [] for r in g.get("rules") or []]
    alerts = {}
    for rule in rules:
        name = rule.get("alert")
        if not name:
            continue
        where = f"alerts.yml {name}"
        alerts[name] = rule
        expr = str(rule.get("expr", ""))
        p.expect(DURATION.match(str(rule.get("for", ""))), where, "needs a 'for' duration")
        p.expect(dig_str(rule, "labels", "severity") in SEVERITIES, where, f"labels.severity must be one of {sorted(SEVERITIES)}")
        for key in ("summary", "description", "runbook"):
            p.expect(dig_str(rule, "annotations", key).strip(), where, f"annotations.{key} is required")
        runbook = dig_str(rule, "annotations", "runbook")
        if runbook:
            p.expect(runbook.startswith("deploy/README.md#") and runbook.split("#", 1)[1] in anchors, where,
                     f"runbook '{runbook}' is not a heading of deploy/README.md")
        for metric in metric_names(expr) - set(METRICS):
            p.add(where, f"uses '{metric}', which the worker does not export")
        if re.search(r'pushfleet_deliveries_total\{[^}]*status="failed"', expr):
            for code in CLIENT_ERROR_CODES:
                p.expect(code in expr, where, f"error rate must exclude the client error {code}")
    for topic, metric in REQUIRED_ALERT_METRICS.items():
        p.expect(any(metric in metric_names(str(r.get("expr", ""))) for r in alerts.values()), "alerts.yml",
                 f"no alert for {topic} ({metric})")
    test_path = os.path.join(root, "deploy", "prometheus", "alerts_test.yml")
    with open(test_path, encoding="utf-8") as handle:
        tests = yaml.safe_load(handle) or {}
    firing = {case.get("alertname") for t in tests.get("tests") or [] for case in t.get("alert_rule_test") or []
              if case.get("exp_alerts")}
    p.expect(len(firing & set(alerts)) >= 3, "alerts_test.yml", "must show at least 3 alerts firing")
    for name in firing - set(alerts):
        p.add("alerts_test.yml", f"tests unknown alert {name}")


def dig_str(obj, *keys):
    for key in keys:
        obj = obj.get(key, {}) if isinstance(obj, dict) else {}
    return obj if isinstance(obj, str) else ""


# --- systemd units -------------------------------------------------------------------------------

UNIT_KEYS = {
    "Unit": {"Description", "Documentation", "Wants", "Requires", "After", "Before", "BindsTo", "PartOf",
             "Conflicts", "StartLimitIntervalSec", "StartLimitBurst", "ConditionPathExists"},
    "Service": {"Type", "ExecStart", "ExecStartPre", "ExecReload", "EnvironmentFile", "Environment", "Restart",
                "RestartSec", "KillSignal", "KillMode", "TimeoutStopSec", "TimeoutStartSec", "SendSIGKILL",
                "RemainAfterExit", "DynamicUser", "User", "Group", "NoNewPrivileges", "CapabilityBoundingSet",
                "AmbientCapabilities", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
                "PrivateNetwork", "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
                "ProtectControlGroups", "ProtectClock", "ProtectHostname", "ProtectProc", "ProcSubset",
                "RestrictAddressFamilies", "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID",
                "LockPersonality", "MemoryDenyWriteExecute", "RemoveIPC", "SystemCallArchitectures",
                "SystemCallFilter", "UMask", "LimitNOFILE", "StateDirectory", "RuntimeDirectory",
                "WorkingDirectory", "SuccessExitStatus"},
    "Install": {"WantedBy", "RequiredBy", "Alias", "Also"},
}


def parse_unit(path):
    """[(section, key, value)] in file order; raises ValueError on a line that is not a setting."""
    entries, section = [], None
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1]
                continue
            if "=" not in line or section is None:
                raise ValueError(f"line {number} is neither a section nor key=value: {line!r}")
            key, value = line.split("=", 1)
            entries.append((section, key.strip(), value.strip()))
    return entries


def unit_files(root):
    base = os.path.join(root, "deploy", "systemd")
    return [os.path.join(base, n) for n in sorted(os.listdir(base)) if n.endswith(".service")]


def seconds(value):
    match = re.fullmatch(r"(\d+)\s*(s|sec|min|m)?", value or "")
    if not match:
        return None
    return int(match.group(1)) * (60 if match.group(2) in ("min", "m") else 1)


def check_systemd_structure(root, p):
    for path in unit_files(root):
        try:
            entries = parse_unit(path)
        except ValueError as error:
            p.add(rel(root, path), str(error))
            continue
        for section, key, _ in entries:
            p.expect(key in UNIT_KEYS.get(section, set()), rel(root, path), f"unknown [{section}] key '{key}'")


def check_systemd_verify(root, p):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        print("systemd-analyze not available: structural check only")
        check_systemd_structure(root, p)
        return
    with tempfile.TemporaryDirectory(prefix="pushfleet-units-") as tmp:
        stub = os.path.join(tmp, "pushfleet")
        with open(stub, "w", encoding="utf-8") as handle:
            handle.write("#!/bin/sh\nexit 0\n")
        os.chmod(stub, 0o755)
        copies = []
        for path in unit_files(root):
            with open(path, encoding="utf-8") as handle:
                text = handle.read().replace("/usr/local/bin/pushfleet", stub)  # the binary is not installed here
            copy = os.path.join(tmp, os.path.basename(path))
            with open(copy, "w", encoding="utf-8") as handle:
                handle.write(text)
            copies.append(copy)
        if not p.expect(copies, "deploy/systemd", "no .service files"):
            return
        run = subprocess.run([tool, "verify", *copies], capture_output=True, text=True, timeout=60, check=False)
        output = (run.stdout + run.stderr).replace(tmp + "/", "deploy/systemd/").strip()
        # systemd-analyze only warns (exit 0) on unknown keys and bad values: any output is a failure.
        p.expect(run.returncode == 0 and not output, "systemd-analyze verify", output or f"exit {run.returncode}")


def check_systemd_policy(root, p):
    check_systemd_structure(root, p)
    units = {}
    for path in unit_files(root):
        try:
            units[os.path.basename(path)] = parse_unit(path)
        except ValueError:
            pass  # reported by the structure check
    worker, migrate = units.get("pushfleet-worker.service"), units.get("pushfleet-migrate.service")
    p.expect(worker is not None and migrate is not None, "deploy/systemd",
             "needs pushfleet-worker.service and pushfleet-migrate.service")
    for name, entries in units.items():
        values = {}
        for section, key, value in entries:
            values.setdefault(key, []).append(value)
        one = {k: v[-1] for k, v in values.items()}
        where = f"deploy/systemd/{name}"
        p.expect(one.get("EnvironmentFile"), where, "EnvironmentFile= required (secrets stay out of the unit)")
        p.expect(one.get("DynamicUser") == "yes" or one.get("User") not in (None, "root", "0"), where,
                 "run as DynamicUser=yes or a non-root User=")
        for key, wanted in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                            ("PrivateTmp", "yes"), ("CapabilityBoundingSet", "")):
            p.expect(one.get(key) == wanted, where, f"{key}={wanted} required")
        exec_start = one.get("ExecStart", "")
        if name == "pushfleet-worker.service":
            check_long_running_unit(p, where, values, "worker", "PUSHFLEET_DRAIN_SECONDS", 25)
        elif name == "pushfleet-migrate.service":
            p.expect(exec_start.endswith(" migrate"), where, "ExecStart must run `pushfleet migrate`")
            p.expect(one.get("Type") == "oneshot", where, "Type=oneshot required")


def check_long_running_unit(p, where, values, command, drain_variable, default_drain):
    """A `pushfleet <command>` service that drains on SIGTERM: restarted always, stopped by SIGTERM
    with TimeoutStopSec 5 s or more beyond its drain, started after the migration."""
    one = {k: v[-1] for k, v in values.items()}
    p.expect(one.get("ExecStart", "").endswith(f" {command}"), where, f"ExecStart must run `pushfleet {command}`")
    p.expect(one.get("Restart") == "always", where, "Restart=always required")
    p.expect(one.get("KillSignal") == "SIGTERM", where, "KillSignal=SIGTERM required")
    drain = default_drain
    for env in values.get("Environment", []):
        if env.startswith(f"{drain_variable}="):
            drain = int(env.split("=", 1)[1])
    stop = seconds(one.get("TimeoutStopSec"))
    p.expect(stop is not None and stop >= drain + 5, where,
             f"TimeoutStopSec ({one.get('TimeoutStopSec')}) must exceed the drain ({drain} s) by 5 s or more")
    p.expect("pushfleet-migrate.service" in " ".join(values.get("After", [])), where,
             "must start After=pushfleet-migrate.service")


CHECKS = {"alerts-contract": check_alerts_contract, "systemd-verify": check_systemd_verify,
          "systemd-policy": check_systemd_policy}
