#!/usr/bin/env python3
"""Deliberate breakages for `scripts/check-deploy --self-test`.

Usage: check_deploy_mutations.py list          -> "NAME STEP" per line
       check_deploy_mutations.py apply NAME ROOT -> breaks one file of the copy at ROOT
Each mutation names the check step that must then fail. A mutation that finds nothing to change
exits 1, so the self-test can never pass by breaking nothing.
"""
import os
import sys

# name: (check step that must fail, file under ROOT, text to find, replacement)
MUTATIONS = {
    "yaml-unclosed-flow": ("yaml", "deploy/kubernetes/pdb.yaml", "minAvailable: 1", "minAvailable: [1"),
    "k8s-unknown-field": ("k8s", "deploy/kubernetes/deployment.yaml", "containerPort: 9464", "containerPorts: 9464"),
    "k8s-wrong-type": ("k8s", "deploy/kubernetes/service.yaml", "port: 9464", "port: metrics-port"),
    "keda-no-triggers": ("keda", "deploy/kubernetes/keda-scaledobject.yaml", "  triggers:", "  triggerz:"),
    "keda-bad-target": ("keda", "deploy/kubernetes/keda-scaledobject.yaml", "name: pushfleet-worker\n  minReplicaCount",
                        "name: pushfleet-wrker\n  minReplicaCount"),
    "stats-view-loses-column": ("consistency", "sql/0013_database_cost.up.sql", "::bigint AS completed", "::bigint AS finished"),
    "kustomize-missing-resource": ("kustomization", "deploy/kubernetes/kustomization.yaml", "  - pdb.yaml",
                                   "  - pdb.yaml\n  - hpa.yaml"),
    "grace-below-drain": ("consistency", "deploy/kubernetes/deployment.yaml", "terminationGracePeriodSeconds: 40",
                          "terminationGracePeriodSeconds: 20"),
    "probe-wrong-path": ("consistency", "deploy/kubernetes/deployment.yaml", "path: /readyz", "path: /healthz"),
    "secret-key-unknown": ("consistency", "deploy/kubernetes/migrate-job.yaml", "key: DATABASE_URL",
                           "key: DATABASE_URI"),
    "promql-syntax": ("promtool-check", "deploy/prometheus/alerts.yml",
                      "max(pushfleet_queue_oldest_due_age_seconds) > 60", "max(pushfleet_queue_oldest_due_age_seconds > 60"),
    "alert-test-expectation": ("promtool-test", "deploy/prometheus/alerts_test.yml", "9.091%", "9.09%"),
    "alert-without-for": ("alerts-contract", "deploy/prometheus/alerts.yml",
                          "> 60\n        for: 5m\n", "> 60\n"),
    "alert-unknown-metric": ("alerts-contract", "deploy/prometheus/alerts.yml", "increase(pushfleet_db_errors_total",
                             "increase(pushfleet_db_error_total"),
    "unit-unknown-key": ("systemd-verify", "deploy/systemd/pushfleet-worker.service", "Restart=always",
                         "Restart=always\nRestartSecs=2s"),
    "unit-stop-timeout-short": ("systemd-policy", "deploy/systemd/pushfleet-worker.service", "TimeoutStopSec=40s",
                                "TimeoutStopSec=10s"),
    "dashboard-panel-no-targets": ("dashboard", "deploy/grafana/pushfleet-dashboard.json", '"targets": [',
                                   '"targets_disabled": ['),
    "dashboard-bad-promql": ("dashboard-promql", "deploy/grafana/pushfleet-dashboard.json",
                             '"max(pushfleet_queue_due_jobs)"', '"max(pushfleet_queue_due_jobs"'),
    "dockerfile-root-user": ("dockerfile", "deploy/Dockerfile", "USER 10001:10001", "USER root"),
    "dockerfile-dynamic-stdlib": ("dockerfile", "deploy/Dockerfile", "--product pushfleet --static-swift-stdlib",
                                  "--product pushfleet"),
    "api-probe-public-port": ("api", "deploy/kubernetes/api-deployment.yaml",
                              "path: /readyz\n              port: management", "path: /readyz\n              port: http"),
    "api-grace-below-drain": ("api", "deploy/kubernetes/api-deployment.yaml", "terminationGracePeriodSeconds: 30",
                              "terminationGracePeriodSeconds: 20"),
    "api-service-management-port": ("api", "deploy/kubernetes/api-service.yaml", "targetPort: http",
                                    "targetPort: management"),
    "api-unit-runs-worker": ("api-unit", "deploy/systemd/pushfleet-api.service", "ExecStart=/usr/local/bin/pushfleet api",
                             "ExecStart=/usr/local/bin/pushfleet worker"),
    "alert-api-unknown-metric": ("alerts-contract", "deploy/prometheus/alerts.yml", "pushfleet_api_ready == 0",
                                 "pushfleet_api_readiness == 0"),
    "dockerignore-drops-sources": ("dockerignore", ".dockerignore", "!Sources", "!Sources\nSources/**"),
}


def apply(name, root):
    _, relative, find, replace = MUTATIONS[name]
    path = os.path.join(root, relative)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if find not in text:
        print(f"mutation {name}: '{find}' not found in {relative}", file=sys.stderr)
        return 1
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(find, replace, 1))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["list"]:
        for mutation, (step, *_rest) in MUTATIONS.items():
            print(mutation, step)
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "apply" and sys.argv[2] in MUTATIONS:
        sys.exit(apply(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
