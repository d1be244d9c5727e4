"""scripts/bench --only api (issue 14): the HTTP API against the bare SQL it stands on, in one run,
PostgreSQL on this machine with durable commits (synchronous_commit on).

For each route, wrk drives `pushfleet api` (release build) at a fixed concurrency, and pgbench runs
the SQL call the route ends in at the same concurrency (prepared statements): PUT /v1/push/devices
against push_register_device, POST /v1/push/notifications (one user, two devices) against
push_enqueue, GET /v1/push/notifications/{id} against the notification read. The API does more per
request than that one call (the key lookup, the acceptance checks, the answer's read back), so the
ratio says what the HTTP layer and the acceptance path cost. Each route is then run again paced to
half the API's own rate, and its p99 there is quoted. Both threading modes are measured.
Writes docs/bench-api-results.md and prints it. Never a timed test: nothing here passes or fails CI.
"""
import json
import os
import re
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TMP = tempfile.mkdtemp(prefix="pushfleet-api-bench-")
TARGET = 0.6


def log(msg):
    print(f"[bench api {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wrk(port, script, env, connections, seconds, threads=2):
    """(requests/s, p50 ms, p99 ms, non-2xx count) of one wrk run."""
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency",
                          "-s", os.path.join(HERE, "wrk", script), f"http://127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=seconds + 60, env=dict(os.environ, **env)).stdout

    def ms(label):
        m = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: .*", out)
    return {"rps": rps, "p50": ms("50%"), "p99": ms("99%"), "non2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(0) if errors else ""}


def pgbench(url, sql, variables, clients, seconds):
    path = os.path.join(TMP, f"pgbench-{abs(hash(sql))}.sql")
    with open(path, "w") as handle:
        handle.write(sql)
    args = ["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", str(seconds), "-f", path]
    for k, v in variables.items():
        args += ["-D", f"{k}={v}"]
    r = subprocess.run(args + [url], capture_output=True, text=True, timeout=seconds + 120)
    if r.returncode != 0:
        raise SystemExit(f"pgbench failed: {r.stderr[-800:]}")
    tps = float(re.search(r"tps = ([\d.]+)", r.stdout).group(1))
    lat = re.search(r"latency average = ([\d.]+) ms", r.stdout)
    return {"tps": tps, "latency_ms": float(lat.group(1)) if lat else float("nan")}


def start_api(binary, url, threading, pool):
    logf = os.path.join(TMP, f"api-{threading}.log")
    env = dict(os.environ, DATABASE_URL=url, PUSHFLEET_API_THREADING=threading, PUSHFLEET_API_POOL_SIZE=str(pool))
    p = subprocess.Popen([binary, "api", "--addr", "127.0.0.1:0", "--management-addr", "off"], env=env,
                         stdout=subprocess.DEVNULL, stderr=open(logf, "w"))
    deadline = time.time() + 20
    while time.time() < deadline:
        for line in open(logf):
            if '"api.start"' in line:
                return p, json.loads(line)["port"], logf
        time.sleep(0.1)
    p.kill()
    raise SystemExit("pushfleet api did not start")


def cli(binary, url, *args):
    r = subprocess.run([binary, *args, "--json"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, DATABASE_URL=url))
    if r.returncode != 0:
        raise SystemExit(f"pushfleet {' '.join(args)} failed: {r.stderr[-500:]}")
    return json.loads(r.stdout)


def http(port, method, path, key, body):
    r = subprocess.run(["curl", "-s", "-X", method, f"http://127.0.0.1:{port}{path}", "-H", f"Authorization: Bearer {key}",
                        "-H", "Content-Type: application/json", "-d", json.dumps(body)], capture_output=True, text=True,
                       timeout=30)
    return json.loads(r.stdout)


def run(binary, url, psql, out, connections=16, seconds=10):
    psql("ALTER SYSTEM SET synchronous_commit = on")
    psql("SELECT pg_reload_conf()")
    sync = psql("SHOW synchronous_commit")
    account = cli(binary, url, "accounts", "create", "--name", "bench")["id"]
    perms = "push_devices:wd,push:rw,push_apps:rw"
    live = cli(binary, url, "api-keys", "create", "--account", account, "--mode", "live", "--permissions", perms,
               "--rate-limit", "1000000")["key"]
    test = cli(binary, url, "api-keys", "create", "--account", account, "--mode", "test", "--permissions", perms,
               "--rate-limit", "1000000")["key"]
    api, port, _ = start_api(binary, url, "event-loop", connections)
    app = http(port, "POST", "/v1/push/apps", live, {"name": "bench api"})["id"]
    app_uuid = psql(f"SELECT id FROM push_apps WHERE name = 'bench api'")
    for mode, key in (("live", live), ("test", test)):
        for platform, token in (("ios", f"{'ab' * 32}"), ("android", "bench_android_token")):
            body = {"app_id": app, "platform": platform, "token": token + mode, "user_id": "bench_user"}
            if platform == "ios":
                body["apns_environment"] = "production"
            http(port, "PUT", "/v1/push/devices", key, body)
    # The notification GET reads: delivered by a worker (test mode, the simulator): two deliveries.
    target = http(port, "POST", "/v1/push/notifications", test, {"app_id": app, "user_ids": ["bench_user"], "title": "t",
                                                                 "body": "b"})["id"]
    subprocess.run([binary, "worker", "--until-drained", "--metrics-addr", "off"], env=dict(os.environ, DATABASE_URL=url,
                   PUSHFLEET_LOG_LEVEL="error"), timeout=120, check=True)
    deliveries = len(http(port, "GET", f"/v1/push/notifications/{target}", test, {}).get("deliveries", []))
    api.terminate()
    api.wait(timeout=60)
    psql("VACUUM ANALYZE")

    routes = [
        ("PUT /v1/push/devices", "put_device.lua", {"BENCH_KEY": live, "BENCH_APP": app}),
        ("POST /v1/push/notifications", "post_notification.lua", {"BENCH_KEY": live, "BENCH_APP": app}),
        ("GET /v1/push/notifications/{id}", "get_notification.lua", {"BENCH_KEY": test, "BENCH_NOTIFICATION": target}),
    ]
    # The bare SQL each route ends in (the notification read is APIQueries.notificationGet's text).
    bare = [
        ("push_register_device", "\\set n random(1, 2000000000)\n"
         "SELECT device_id FROM push_register_device(:app::uuid, 'live', 'android', 'pgb' || :client_id || 'n' || :n, NULL, "
         "NULL, NULL, 'pgb' || :client_id || 'n' || :n, NULL, 'keep', NULL, NULL, NULL, 20);\n"),
        ("push_enqueue", "SELECT notification_id FROM push_enqueue(:app::uuid, 'live', ARRAY['bench_user'], NULL, "
         "'Your order shipped', 'Order 42 is on its way', '{\"order\":\"42\"}', 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
         "NULL, NULL);\n"),
        ("notification read", "SELECT n.id, n.app_id, n.status, n.encrypted, n.device_count, n.error_code, n.send_at, "
         "n.accepted_at, n.finished_at, v.device_id, v.status, v.encrypted, v.error_code, v.attempts "
         "FROM push_notifications n JOIN push_apps a ON a.id = n.app_id LEFT JOIN push_deliveries v ON v.notification_id = n.id "
         "WHERE n.id = :nid::uuid AND n.mode = 'test' AND a.account_id = :acct::uuid AND a.deleted_at IS NULL "
         "ORDER BY v.created_at, v.device_id;\n"),
    ]
    variables = {"app": app_uuid, "nid": psql(f"SELECT id FROM push_notifications WHERE mode = 'test' LIMIT 1"),
                 "acct": psql("SELECT account_id FROM push_apps WHERE name = 'bench api'")}
    results = []
    for (label, script, env), (call, sql) in zip(routes, bare):
        log(f"{label}: pgbench of {call}, {connections} clients, {seconds} s")
        pg = pgbench(url, sql, variables, connections, seconds)
        row = {"route": label, "call": call, "pgbench": pg}
        for threading in ("event-loop", "thread-per-connection"):
            api, port, logf = start_api(binary, url, threading, connections)
            try:
                log(f"{label}: wrk, {threading}, {connections} connections, {seconds} s")
                row[threading] = wrk(port, script, env, connections, seconds)
                if threading == "event-loop":
                    half = row[threading]["rps"] / 2
                    delay = max(1, int(1000 * connections / half))
                    log(f"{label}: wrk paced to half that rate ({half:,.0f}/s: {delay} ms between a connection's requests)")
                    row["half"] = wrk(port, script, dict(env, BENCH_DELAY_MS=str(delay)), connections, seconds)
                    row["half"]["target"] = half
            finally:
                api.terminate()
                api.wait(timeout=60)
        results.append(row)
        log(json.dumps(row))

    lines = [
        "# scripts/bench --only api",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `synchronous_commit = {sync}`, {connections} connections / "
        f"pgbench clients, {seconds} s per run, wrk -t2, pgbench -M prepared -j2, the API's pool {connections} sessions; "
        f"the GET reads a notification with {deliveries} deliveries. Both on this machine with PostgreSQL and the load "
        "generator (2 shared cores).",
        "",
        "| route | API req/s (event loop) | p50 / p99 ms | bare SQL (pgbench) tps | ratio | target | API req/s (thread per connection) | ratio | p99 ms at half rate (achieved req/s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ev, tpc, pg, half = r["event-loop"], r["thread-per-connection"], r["pgbench"], r["half"]
        ratio, ratio_t = ev["rps"] / pg["tps"], tpc["rps"] / pg["tps"]
        bad = ev["non2xx"] + tpc["non2xx"] + half["non2xx"]
        lines.append(f"| {r['route']} ({r['call']}) | {ev['rps']:,.0f} | {ev['p50']:.2f} / {ev['p99']:.2f} | {pg['tps']:,.0f} | "
                     f"{ratio:.2f}x | >= {TARGET}x {'PASS' if ratio >= TARGET else 'MISS'} | {tpc['rps']:,.0f} | {ratio_t:.2f}x | "
                     f"{half['p99']:.2f} ({half['rps']:,.0f}){'' if bad == 0 else f' — {bad} non-2xx answers!'} |")
    text = "\n".join(lines) + "\n"
    with open(out, "w") as handle:
        handle.write(text)
    print(text)
