"""Checks of the Grafana dashboard, the Dockerfile and .dockerignore (no engine runs here).

Imported by check_deploy.py, which owns the command line; each check takes (root, problems).
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from check_deploy import DASHBOARD_METRICS, METRICS, METRICS_PORT, metric_names

# --- Grafana dashboard ---------------------------------------------------------------------------

DASHBOARD = ("deploy", "grafana", "pushfleet-dashboard.json")


def load_dashboard(root):
    with open(os.path.join(root, *DASHBOARD), encoding="utf-8") as handle:
        return json.load(handle)


def dashboard_targets(dashboard):
    for panel in dashboard.get("panels") or []:
        for target in panel.get("targets") or []:
            yield panel, target


def check_dashboard(root, p):
    where = "/".join(DASHBOARD)
    try:
        dashboard = load_dashboard(root)
    except json.JSONDecodeError as error:
        p.add(where, f"not valid JSON: {error}")
        return
    for key in ("uid", "title", "schemaVersion", "panels"):
        p.expect(dashboard.get(key), where, f"'{key}' is required")
    panels = dashboard.get("panels") or []
    ids = [panel.get("id") for panel in panels]
    p.expect(len(set(ids)) == len(ids) and None not in ids, where, "panel ids must be present and unique")
    used = set()
    for panel in panels:
        at = f"{where} panel '{panel.get('title')}'"
        if panel.get("type") == "row":
            continue
        grid = panel.get("gridPos") or {}
        p.expect(all(isinstance(grid.get(k), int) for k in "hwxy") and grid.get("x", 0) + grid.get("w", 0) <= 24,
                 at, "gridPos needs integer h, w, x, y within 24 columns")
        targets = panel.get("targets") or []
        if not p.expect(targets, at, "has no targets"):
            continue
        ref_ids = [t.get("refId") for t in targets]
        p.expect(len(set(ref_ids)) == len(ref_ids) and None not in ref_ids, at, "refIds must be unique")
        for target in targets:
            expr = str(target.get("expr") or "").strip()
            if not p.expect(expr, at, f"target {target.get('refId')} has no expr"):
                continue
            names = metric_names(expr)
            used |= names
            for metric in names - set(METRICS):
                p.add(at, f"uses '{metric}', which the worker does not export")
    for metric in sorted(DASHBOARD_METRICS - used):
        p.add(where, f"no panel shows {metric}")
    exprs = [t.get("expr", "") for _, t in dashboard_targets(dashboard)]
    for quantile in ("0.5", "0.99"):
        p.expect(any(f"histogram_quantile({quantile}" in e and "provider_request_duration" in e for e in exprs),
                 where, f"provider latency p{quantile[2:] or '50'} panel missing")


def check_dashboard_promql(root, p):
    """Every dashboard query parses as PromQL (Grafana variables replaced), via promtool."""
    tool = shutil.which("promtool")
    if not p.expect(tool, "promtool", "not installed (scripts/check-deploy installs the Debian package)"):
        return
    rules = []
    for index, (panel, target) in enumerate(dashboard_targets(load_dashboard(root))):
        expr = str(target.get("expr") or "")
        expr = expr.replace("$__rate_interval", "5m").replace("$__range", "1h").replace("$__interval", "1m")
        rules.append({"record": f"dashboard:panel{panel.get('id')}:{target.get('refId')}:{index}", "expr": expr})
    with tempfile.TemporaryDirectory(prefix="pushfleet-dash-") as tmp:
        path = os.path.join(tmp, "dashboard-queries.yml")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, handle)
        run = subprocess.run([tool, "check", "rules", path], capture_output=True, text=True, timeout=60, check=False)
        p.expect(run.returncode == 0, "dashboard queries", (run.stdout + run.stderr).strip().replace("\n", " | "))


# --- Dockerfile ----------------------------------------------------------------------------------

INSTRUCTIONS = {"FROM", "ARG", "RUN", "COPY", "ADD", "ENV", "WORKDIR", "USER", "EXPOSE", "ENTRYPOINT", "CMD",
                "LABEL", "STOPSIGNAL", "VOLUME", "SHELL", "ONBUILD", "HEALTHCHECK"}
RUNTIME_PACKAGES = ("libpq5", "libssl3", "libcurl4", "libmicrohttpd12", "ca-certificates")


def dockerfile_instructions(path):
    """[(line_number, INSTRUCTION, arguments)], continuation lines joined, comments dropped."""
    out, pending, start = [], "", 0
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\n")
            if line.strip().startswith("#"):
                continue
            if not pending:
                start = number
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            text = (pending + line).strip()
            pending = ""
            if text:
                word, _, rest = text.partition(" ")
                out.append((start, word.upper(), rest.strip()))
    if pending.strip():
        out.append((start, "<EOF>", pending))
    return out


def expand(text, variables):
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), text)


def check_dockerfile(root, p):
    where = "deploy/Dockerfile"
    steps = dockerfile_instructions(os.path.join(root, "deploy", "Dockerfile"))
    global_args, stages = {}, []
    for number, word, rest in steps:
        at = f"{where}:{number}"
        if not p.expect(word in INSTRUCTIONS, at, f"unknown instruction '{word}'"):
            continue
        if word == "ARG" and not stages:
            name, _, default = rest.partition("=")
            global_args[name] = default
        elif word == "FROM":
            parts = expand(rest, global_args).split()
            image = parts[-3] if len(parts) >= 3 and parts[-2].upper() == "AS" else parts[-1]
            name = parts[-1] if len(parts) >= 3 and parts[-2].upper() == "AS" else None
            stages.append({"image": image, "name": name, "steps": []})
        elif stages:
            stages[-1]["steps"].append((number, word, rest))
        else:
            p.add(at, f"{word} before the first FROM")
    if not p.expect(len(stages) >= 2, where, "must be multi-stage (build, runtime)"):
        return
    build, final = stages[0], stages[-1]
    p.expect(build["image"].startswith("swift:") and "bookworm" in build["image"], where,
             f"build stage must be an official Swift bookworm image, got {build['image']}")
    p.expect(final["image"] == "debian:12-slim", where, f"runtime stage must be debian:12-slim, got {final['image']}")
    runs = lambda stage: " ".join(r for _, w, r in stage["steps"] if w == "RUN")  # noqa: E731
    for flag in ("swift build", "-c release", "--product pushfleet", "--static-swift-stdlib"):
        p.expect(flag in runs(build), where, f"build stage must run swift build with '{flag}'")
    for package in RUNTIME_PACKAGES:
        p.expect(re.search(rf"(?<![\w.-]){re.escape(package)}(?![\w.-])", runs(final)), where,
                 f"runtime stage must install {package}")
    users = [r for _, w, r in final["steps"] if w == "USER"]
    p.expect(users and users[-1].split(":")[0] not in ("root", "0"), where, "runtime stage must end as a non-root USER")
    p.expect(not any(w == "HEALTHCHECK" for s in stages for _, w, _ in s["steps"]), where,
             "no HEALTHCHECK: Kubernetes probes /healthz and /readyz")
    names = [s["name"] for s in stages if s["name"]]
    for stage in stages:
        for number, word, rest in stage["steps"]:
            if word not in ("COPY", "ADD"):
                continue
            source_stage = re.search(r"--from=(\S+)", rest)
            args = [a for a in rest.split() if not a.startswith("--")]
            if source_stage:
                p.expect(source_stage.group(1) in names, f"{where}:{number}", f"unknown stage {source_stage.group(1)}")
            else:
                for source in args[:-1]:
                    p.expect(os.path.exists(os.path.join(root, source)), f"{where}:{number}",
                             f"'{source}' is not in the build context (repository root)")
    final_text = " ".join(f"{w} {r}" for _, w, r in final["steps"])
    p.expect(re.search(r"COPY sql /app/sql\b", final_text) and "PUSHFLEET_SQL_DIR=/app/sql" in final_text, where,
             "runtime stage must ship sql/ at /app/sql and set PUSHFLEET_SQL_DIR")
    p.expect(f"EXPOSE {METRICS_PORT}" in final_text, where, f"runtime stage must EXPOSE {METRICS_PORT}")
    entry = [r for _, w, r in final["steps"] if w == "ENTRYPOINT"]
    try:
        p.expect(entry and json.loads(entry[-1])[0] == "/usr/local/bin/pushfleet", where,
                 "ENTRYPOINT must be the exec form of /usr/local/bin/pushfleet")
    except (json.JSONDecodeError, IndexError):
        p.add(where, "ENTRYPOINT must be a JSON array (exec form, so SIGTERM reaches the worker)")


def dockerignore_excludes(patterns, path):
    """Whether the build context drops `path`, following Docker's last-match-wins rule."""
    excluded = False
    parts = path.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern[1:] if negate else pattern
        body = body.strip("/")
        regex = re.escape(body).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        regex = regex.replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, c) for c in candidates):
            excluded = not negate
    return excluded


def check_dockerignore(root, p):
    path = os.path.join(root, ".dockerignore")
    if not p.expect(os.path.isfile(path), ".dockerignore", "missing at the repository root"):
        return
    with open(path, encoding="utf-8") as handle:
        patterns = [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]
    needed = ["Package.swift", "sql/0001_schema.up.sql"]
    for directory, _, names in os.walk(os.path.join(root, "Sources")):
        needed += [os.path.relpath(os.path.join(directory, n), root) for n in names][:1]
    for item in needed:
        p.expect(not dockerignore_excludes(patterns, item), ".dockerignore", f"excludes '{item}', which the build needs")
    for item in (".build/release/pushfleet", ".git/HEAD", ".venv/bin/python", ".pgdata/PG_VERSION", "deploy/README.md"):
        p.expect(dockerignore_excludes(patterns, item), ".dockerignore", f"should keep '{item}' out of the context")


CHECKS = {"dashboard": check_dashboard, "dashboard-promql": check_dashboard_promql,
          "dockerfile": check_dockerfile, "dockerignore": check_dockerignore}
