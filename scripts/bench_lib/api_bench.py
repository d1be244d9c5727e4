"""scripts/bench --only api (issue 14): the HTTP API against the bare SQL it stands on, in one run,
PostgreSQL on this machine with durable commits (synchronous_commit on).

For each route, wrk drives `pushfleet api` (release build) at a fixed concurrency, and pgbench runs
the SQL call the route ends in at the same concurrency (prepared statements): PUT /v1/push/devices
against push_register_device_v2 (the registration the acceptance service calls), POST /v1/push/notifications (one user, two devices) against
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


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """CPU seconds (user + system) of one process, and of its reaped children when `children`."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


def pg_cpu(postmaster):
    """CPU seconds of the whole PostgreSQL server: the postmaster, its live backends, and the
    backends that exited (reaped into the postmaster's children time)."""
    own, reaped = proc_cpu(postmaster)
    live = 0.0
    for child in subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split():
        try:
            live += proc_cpu(int(child))[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return own + reaped + live


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def wrk(port, script, env, connections, seconds, threads=2):
    """(requests/s, p50 ms, p99 ms, non-2xx count) of one wrk run."""
    env = dict(env, BENCH_RUN=str(time.time_ns()))   # each run registers tokens of its own (put_device.lua)
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency",
                          "-s", os.path.join(HERE, "wrk", script), f"http://127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=seconds + 60, env=dict(os.environ, **env)).stdout

    def ms(label):
        m = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    count = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: .*", out)
    return {"rps": rps, "count": count, "p50": ms("50%"), "p99": ms("99%"), "non2xx": int(bad.group(1)) if bad else 0,
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
    count = int(re.search(r"number of transactions actually processed: (\d+)", r.stdout).group(1))
    lat = re.search(r"latency average = ([\d.]+) ms", r.stdout)
    return {"tps": tps, "count": count, "latency_ms": float(lat.group(1)) if lat else float("nan")}


def start_api(binary, url, threading, pool):
    logf = os.path.join(TMP, f"api-{threading}-{time.time():.0f}.log")
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


def run(binary, url, psql, out, connections=16, seconds=8, reps=3):
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
        ("push_register_device_v2", "\\set n random(1, 2000000000)\n"
         "SELECT device_id FROM push_register_device_v2(:app::uuid, 'live', 'android', 'pgb' || :client_id || 'n' || :n, NULL, "
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
    postmaster = int(open(os.path.join(psql("SHOW data_directory"), "postmaster.pid")).readline())
    results = []
    for (label, script, env), (call, sql) in zip(routes, bare):
        row = {"route": label, "call": call, "pgbench": [], "event-loop": [], "statuses": {}}
        api, port, logf = start_api(binary, url, "event-loop", connections)
        try:
            # pgbench and the API in turn, so that drift in this shared machine's load falls on both.
            for rep in range(reps):
                log(f"{label}: pgbench of {call} ({rep + 1}/{reps}), {connections} clients, {seconds} s")
                before = pg_cpu(postmaster)
                pg = pgbench(url, sql, variables, connections, seconds)
                time.sleep(1)   # pgbench's backends exit and are reaped into the postmaster's children time
                pg["pg_us"] = (pg_cpu(postmaster) - before) * 1e6 / max(pg["count"], 1)
                row["pgbench"].append(pg)
                log(f"{label}: wrk, event loop ({rep + 1}/{reps}), {connections} connections, {seconds} s")
                before_pg, before_api = pg_cpu(postmaster), proc_cpu(api.pid)[0]
                w = wrk(port, script, env, connections, seconds)
                w["pg_us"] = (pg_cpu(postmaster) - before_pg) * 1e6 / max(w["count"], 1)
                w["api_us"] = (proc_cpu(api.pid)[0] - before_api) * 1e6 / max(w["count"], 1)
                row["event-loop"].append(w)
            half = median([w["rps"] for w in row["event-loop"]]) / 2
            delay = max(1, int(1000 * connections / half))
            log(f"{label}: wrk paced to half that rate ({half:,.0f}/s: {delay} ms between a connection's requests)")
            row["half"] = wrk(port, script, dict(env, BENCH_DELAY_MS=str(delay)), connections, seconds)
        finally:
            api.terminate()
            api.wait(timeout=60)
        for line in open(logf):
            if '"api.request"' in line:
                o = json.loads(line)
                # "unsent": answered after wrk had closed the connection at the end of a run.
                status = f"{o['status']} {o['abort']}" if o.get("abort") else str(o["status"])
                row["statuses"][status] = row["statuses"].get(status, 0) + 1
        api, port, _ = start_api(binary, url, "thread-per-connection", connections)
        try:
            log(f"{label}: wrk, thread per connection, {connections} connections, {seconds} s")
            before_api = proc_cpu(api.pid)[0]
            w = wrk(port, script, env, connections, seconds)
            w["api_us"] = (proc_cpu(api.pid)[0] - before_api) * 1e6 / max(w["count"], 1)
            row["thread-per-connection"] = w
        finally:
            api.terminate()
            api.wait(timeout=60)
        results.append(row)
        log(json.dumps(row))

    load = open("/proc/loadavg").read().split()[:3]
    lines = [
        "# scripts/bench --only api",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `synchronous_commit = {sync}`, {connections} connections / "
        f"pgbench clients, {seconds} s per run, {reps} runs of each side in turn (medians shown), wrk -t2, pgbench -M "
        f"prepared -j2, the API's pool {connections} sessions; the GET reads a notification with {deliveries} deliveries. "
        f"Everything on this machine (2 cores, shared; load average {' '.join(load)} at the end). CPU per request: "
        "the API process and the whole PostgreSQL server, from /proc.",
        "",
        "| route (bare SQL) | API req/s | p50 / p99 ms | pgbench tps | ratio | target | API CPU µs/req | PostgreSQL CPU µs/req (API / pgbench) | thread per connection req/s (API CPU µs/req) | p99 ms at half rate (achieved req/s) | answers |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ev = {k: median([w[k] for w in r["event-loop"]]) for k in ("rps", "p50", "p99", "api_us", "pg_us")}
        pg = {k: median([p[k] for p in r["pgbench"]]) for k in ("tps", "pg_us")}
        tpc, half = r["thread-per-connection"], r["half"]
        ratio = ev["rps"] / pg["tps"]
        target = f">= {TARGET}x {'PASS' if ratio >= TARGET else 'MISS'}" if r["call"] != "notification read" else "(no target)"
        statuses = ", ".join(f"{k}: {v:,}" for k, v in sorted(r["statuses"].items()))
        lines.append(f"| {r['route']} ({r['call']}) | {ev['rps']:,.0f} | {ev['p50']:.2f} / {ev['p99']:.2f} | {pg['tps']:,.0f} | "
                     f"{ratio:.2f}x | {target} | {ev['api_us']:.0f} | {ev['pg_us']:.0f} / {pg['pg_us']:.0f} | "
                     f"{tpc['rps']:,.0f} ({tpc['api_us']:.0f}) | {half['p99']:.2f} ({half['rps']:,.0f}) | {statuses} |")
    text = "\n".join(lines) + "\n"
    with open(out, "w") as handle:
        handle.write(text)
    print(text)
