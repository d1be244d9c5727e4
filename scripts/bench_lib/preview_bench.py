"""scripts/bench --only previews (issue 24, R-IDS-3): the median time of every 404 case of the
preview fetch, side by side, with the served fetch beside them.

The cases are made through the CLI (devices, notifications, a worker run in test mode with content
kept, revocation, deletion, a device moved to another user, a refused delivery) and two SQL updates
(content erased, preview window over). `pushfleet api` (release build, rate limits lifted) is then
asked each case `requests` times over one keep-alive connection, the cases interleaved round by
round so that drift hits them alike; each request is timed from its first byte sent to its last
byte read. Equal work is what `PreviewFetchTests` proves (statement counts and executed plans); this
shows what it costs and how close the cases' times are. Writes docs/bench-previews-results.md and
prints it. Never a timed test: nothing here passes or fails CI.
"""
import http.client
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

TMP = tempfile.mkdtemp(prefix="pushfleet-preview-bench-")


def log(msg):
    print(f"[bench previews {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(binary, url, psql, out, requests=2000):
    env = dict(os.environ, DATABASE_URL=url, PUSHFLEET_RETENTION_CONTENT="keep")

    def cli(*args):
        r = subprocess.run([binary, *args, "--json"], capture_output=True, text=True, env=env, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"pushfleet {' '.join(args[:3])} failed: {r.stderr[-400:]}")
        return json.loads(r.stdout) if r.stdout.strip() else {}

    account = cli("accounts", "create", "--name", "preview-bench")["id"]
    # Only a notification sent ids_only is served (sql/0022); a sealed app's is one more refusal.
    ids = ("--content-mode", "ids_only")
    app = cli("apps", "create", "--name", "preview bench", "--account", account, *ids)["id"]
    strict = cli("apps", "create", "--name", "preview bench strict", "--account", account,
                 "--require-encryption", "true", *ids)["id"]
    other = cli("apps", "create", "--name", "preview bench other", "--account", account, *ids)["id"]
    sealed = cli("apps", "create", "--name", "preview bench sealed", "--account", account)["id"]

    def device(app_id, token, user):
        r = cli("devices", "register", "--app", app_id, "--mode", "test", "--platform", "ios",
                "--apns-environment", "sandbox", "--token", token, "--user", user)
        return r["device"]["id"], r.get("preview_token")  # absent when the registration updated a device

    served, served_tok = device(app, "test_accept_served", "u1")
    _, revoked_tok = device(app, "test_accept_revoked", "u1")
    _, moved_tok = device(app, "test_accept_moved", "u1")
    deleted, deleted_tok = device(app, "test_accept_deleted", "u1")
    _, stranger_tok = device(app, "test_accept_stranger", "u2")
    _, refused_tok = device(strict, "test_app_mismatch", "u1")   # the simulator refuses it (APP_MISMATCH)
    _, other_tok = device(other, "test_accept_other", "u1")
    _, sealed_tok = device(sealed, "test_accept_sealed", "u1")

    def send(app_id):
        return cli("send", "--app", app_id, "--mode", "test", "--user", "u1", "--title", "Lunch at 12",
                   "--body", "Table for two", "--data", '{"order":"42"}')["notification_id"]

    n, n_revoked, n_strict, n_erased, n_window = send(app), send(app), send(strict), send(app), send(app)
    n_sealed = send(sealed)
    send(other)
    r = subprocess.run([binary, "worker", "--until-drained"], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"pushfleet worker failed: {r.stderr[-400:]}")
    cli("notifications", "revoke", n_revoked)
    device(app, "test_accept_moved", "u9")
    cli("devices", "delete", "--app", app, "--mode", "test", deleted)
    uuid = lambda text: text.split("_", 1)[1]
    hexid = lambda h: f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    psql(f"UPDATE push_notifications SET content_erased_at = now(), title = NULL, body = NULL, data = NULL "
         f"WHERE id = '{hexid(uuid(n_erased))}'")
    psql(f"UPDATE push_notifications SET preview_until = now() - interval '1 second' WHERE id = '{hexid(uuid(n_window))}'")

    cases = [
        ("served (200)", n, served_tok, 200),
        ("revoked", n_revoked, revoked_tok, 404),
        ("moved to another user", n, moved_tok, 404),
        ("deactivated", n, deleted_tok, 404),
        ("never addressed", n, stranger_tok, 404),
        ("delivery refused", n_strict, refused_tok, 404),
        ("wrong token", n, "ppt_" + "x" * 43, 404),
        ("another app's token", n, other_tok, 404),
        ("malformed id", "pnot_not-an-id", served_tok, 404),
        ("unknown notification", "pnot_" + "0" * 31 + "1", served_tok, 404),
        ("no token", n, None, 404),
        ("content erased", n_erased, served_tok, 404),
        ("preview window over", n_window, served_tok, 404),
        ("sent sealed", n_sealed, sealed_tok, 404),
    ]

    api_log = open(os.path.join(TMP, "api.log"), "w")
    api = subprocess.Popen([binary, "api", "--addr", "127.0.0.1:0", "--management-addr", "off"], stderr=api_log,
                           env=dict(env, PUSHFLEET_PREVIEW_RATE_PER_TOKEN="1000000", PUSHFLEET_PREVIEW_BURST_PER_TOKEN="1000000",
                                    PUSHFLEET_PREVIEW_RATE_PER_ADDRESS="1000000", PUSHFLEET_PREVIEW_BURST_PER_ADDRESS="1000000",
                                    PUSHFLEET_PREVIEW_RATE_OVERALL="10000000", PUSHFLEET_PREVIEW_BURST_OVERALL="10000000",
                                    PUSHFLEET_LOG_LEVEL="info"))   # api.start (info) names the port
    try:
        port = None
        for _ in range(100):
            m = re.search(r'"event":"api.start".*?"port":(\d+)', open(os.path.join(TMP, "api.log")).read())
            if m:
                port = int(m.group(1))
                break
            time.sleep(0.1)
        if port is None:
            raise SystemExit("pushfleet api did not start")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        times = {name: [] for name, *_ in cases}
        statuses = {name: set() for name, *_ in cases}
        bodies = {name: set() for name, *_ in cases}
        warm = max(50, requests // 20)
        log(f"{len(cases)} cases x {requests} fetches (+{warm} warm-up each), interleaved")
        for round_ in range(requests + warm):
            for name, nid, token, _ in cases:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                t = time.perf_counter()
                conn.request("GET", f"/v1/push/previews/{nid}", headers=headers)
                resp = conn.getresponse()
                body = resp.read()
                dt = time.perf_counter() - t
                if round_ >= warm:
                    times[name].append(dt)
                    statuses[name].add(resp.status)
                    if resp.status == 404:
                        bodies[name].add(body)
        conn.close()
    finally:
        api.terminate()
        api.wait(timeout=30)

    rows = []
    for name, _, _, want in cases:
        t = sorted(times[name])
        rows.append((name, sorted(statuses[name]), statistics.median(t) * 1e6, t[int(len(t) * 0.9)] * 1e6, want))
    not_found = [r for r in rows if r[4] == 404]
    medians = [r[2] for r in not_found]
    one_body = len(set().union(*[bodies[r[0]] for r in not_found])) == 1
    lines = ["# pushfleet benchmark results: preview fetch, every 404 case side by side (R-IDS-3)", "",
             f"`scripts/bench --only previews`, {requests} fetches per case over one keep-alive connection, cases "
             "interleaved round by round, release build, loopback, this machine's PostgreSQL (2 shared cores).", "",
             "| case | status | median µs | p90 µs |", "|---|---|---|---|"]
    for name, st, med, p90, _ in rows:
        lines.append(f"| {name} | {', '.join(map(str, st))} | {med:.0f} | {p90:.0f} |")
    lines += ["", f"404 medians: lowest {min(medians):.0f} µs, highest {max(medians):.0f} µs, spread "
                  f"{(max(medians) - min(medians)):.0f} µs ({100 * (max(medians) / min(medians) - 1):.1f} % of the lowest); "
                  f"one 404 body for every case: {'yes' if one_body else 'NO'}.", ""]
    text = "\n".join(lines)
    with open(out, "w") as f:
        f.write(text)
    print(text)
    return rows
