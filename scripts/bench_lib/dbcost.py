"""The database's cost per notification (issue 17): worker CPU and PostgreSQL CPU (pgcpu.py: every
PostgreSQL process, exited ones included) per delivery for workloads (a), (b) and (c), with durable
commits (synchronous_commit on, the headline) and with synchronous_commit off, beside two floors
measured in the same run with pgbench at the workers' concurrency:

- the queue floor: a bare SQL statement that claims a batch of the claim size from push_jobs with
  FOR UPDATE SKIP LOCKED (the claim's index and order), inserts one push_deliveries row per job and
  completes the jobs, in one transaction; its PostgreSQL CPU per job;
- enqueue: single-user push_enqueue calls, one transaction each (the API's hot path), prepared;
  PostgreSQL CPU per notification.

Workload (c) is single-device notifications: each of its users has one iOS device (no key, test
mode), each notification goes to one user. What each figure means: docs/bench.md ("Database cost").
"""
import math
import os
import statistics
import subprocess
import time

import pgcpu
from workloads import (BASELINE, TMP, URL, create_app, drain, enqueue_broadcast_sql, enqueue_single_sql, log, pg,
                       psql, psql_parallel, register_sql, reset_queue, workload)

PGBENCH = "/usr/lib/postgresql/15/bin/pgbench"
CLAIM = 128      # the worker's default claim limit (WorkerConfig.claimLimit)
CLIENTS = 2      # the workers' concurrency in the headline runs

FLOOR_SQL = """\
WITH claimed AS (
    SELECT id, notification_id FROM push_jobs
     WHERE state = 'available' AND run_at <= now()
     ORDER BY priority DESC, run_at, id
     LIMIT :claim
       FOR UPDATE SKIP LOCKED
), delivered AS (
    INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, attempts, updated_at, finished_at)
    SELECT c.notification_id, c.notification_id, 'sent', c.notification_id, 1, now(), now() FROM claimed c
    RETURNING notification_id
)
UPDATE push_jobs j SET state = 'completed', attempt = j.attempt + 1, finalized_at = now()
  FROM claimed c WHERE j.id = c.id;
"""

ENQUEUE_SQL = """\
\\set u random(0, :users - 1)
SELECT notification_id FROM push_enqueue(:app::uuid, 'test', ARRAY[:prefix::text || :u::text], NULL, 'Your code',
    'Your sign-in code is 123456', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
"""


def set_sync_commit(value):
    psql(f"ALTER SYSTEM SET synchronous_commit = {value}")
    psql("SELECT pg_reload_conf()")
    time.sleep(0.2)
    return psql("SHOW synchronous_commit")


def pgbench(name, script, clients, transactions, defines, prepared=True):
    """Runs `script` with pgbench (`clients` connections, `transactions` each); returns its wall
    seconds and PostgreSQL's CPU seconds over the run (pgbench's own CPU is not counted)."""
    path = f"{TMP}/{name}.pgbench"
    with open(path, "w") as f:
        f.write(script)
    args = [PGBENCH, "-n", "-c", str(clients), "-j", str(clients), "-t", str(transactions),
            "-f", path, "-M", "prepared" if prepared else "simple"]
    for k, v in defines.items():
        args += ["-D", f"{k}={v}"]
    t = time.time()
    with pgcpu.Span(pg()) as span:
        r = subprocess.run(args + [URL], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"pgbench {name} failed: {r.stderr.strip()[-800:]}")
    return time.time() - t, span.seconds


def queue_floor(app, prefix, jobs, clients=CLIENTS, claim=CLAIM):
    """The queue floor: `jobs` notification jobs enqueued (not measured, one per user of `prefix`), then claimed, delivered
    and completed by FLOOR_SQL from `clients` pgbench connections; PostgreSQL CPU per job."""
    reset_queue()
    psql_parallel([enqueue_single_sql(app, prefix, jobs, 0)])
    psql("VACUUM ANALYZE push_notifications, push_jobs, push_ledger")
    per_client = math.ceil(jobs / (claim * clients))
    wall, cpu = pgbench("floor", FLOOR_SQL, clients, per_client, {"claim": claim})
    done = int(psql("SELECT count(*) FROM push_jobs WHERE state = 'completed'"))
    rows = int(psql("SELECT count(*) FROM push_deliveries"))
    if done != jobs or rows != jobs:
        raise SystemExit(f"queue floor: {done} jobs completed and {rows} deliveries, expected {jobs}")
    log(f"queue floor: {jobs} jobs by {clients} pgbench clients, claims of {claim}: {wall:.1f}s, "
        f"{cpu * 1e6 / jobs:.1f} us PostgreSQL CPU per job")
    return {"jobs": jobs, "wall": wall, "pg_cpu_s": cpu, "pg_us_per_job": cpu * 1e6 / jobs, "jobs_per_s": jobs / wall}


def enqueue_c(app, prefix, users, count, clients=CLIENTS):
    """`count` single-user push_enqueue calls (one transaction each, prepared) from `clients`
    pgbench connections; PostgreSQL CPU per notification."""
    reset_queue()
    per_client = count // clients
    wall, cpu = pgbench("enqueue", ENQUEUE_SQL, clients, per_client,
                        {"app": app, "prefix": prefix, "users": users})
    n = int(psql("SELECT count(*) FROM push_notifications"))
    if n != per_client * clients:
        raise SystemExit(f"enqueue: {n} notifications, expected {per_client * clients}")
    log(f"enqueue: {n} single-user notifications by {clients} pgbench clients: {wall:.1f}s, "
        f"{cpu * 1e6 / n:.1f} us PostgreSQL CPU per notification")
    return {"count": n, "wall": wall, "pg_cpu_s": cpu, "pg_us_per_notification": cpu * 1e6 / n}


def setup(scale):
    """Apps and devices of the database-cost runs: (c) single-device users (one iOS device, no key),
    (a)/(b) users with an iOS and an Android device, 70% with keys, half in an app that requires
    encryption (as in bench.py's workload (a))."""
    n = max(500, int(20_000 * scale))
    apps = {"c": create_app("dbcost single-device", False), "a_open": create_app("dbcost open", False),
            "a_secure": create_app("dbcost secure", True)}
    psql_parallel([register_sql(apps["c"], "c", n, 0.0, platforms=("ios",)),
                   register_sql(apps["a_open"], "ao", n // 2, 0.7), register_sql(apps["a_secure"], "as", n - n // 2, 0.7)])
    psql("UPDATE push_devices SET last_registered_at = last_registered_at - interval '1 day'")
    psql("VACUUM ANALYZE")
    return apps, n


def one_mode(binary, apps, n, rounds):
    """Every run of one synchronous_commit setting; medians over `rounds` where repeated."""
    res = {"floor": [], "floor1": [], "enqueue": [], "c2": [], "c1": [], "a2": [], "b2": []}
    half = n // 2
    for _ in range(rounds):
        res["floor"].append(queue_floor(apps["c"], "c", CLAIM * CLIENTS * max(1, n // (CLAIM * CLIENTS))))
        res["floor1"].append(queue_floor(apps["c"], "c", CLAIM * max(1, n // CLAIM), clients=1))
        res["enqueue"].append(enqueue_c(apps["c"], "c", n, n))
        res["c2"].append(drain(binary, "c-2w", 2, res["enqueue"][-1]["wall"]))
        res["enqueue"].append(enqueue_c(apps["c"], "c", n, n))
        res["c1"].append(drain(binary, "c-1w", 1, res["enqueue"][-1]["wall"]))
        res["a2"].append(workload(binary, "a-2w-dbcost", 2, [enqueue_single_sql(apps["a_open"], "ao", half, 0),
                                                             enqueue_single_sql(apps["a_secure"], "as", n - half, 0)]))
        res["b2"].append(workload(binary, "b-2w-dbcost", 2, [enqueue_broadcast_sql(apps["a_open"], "ao", half)]))
    return res


def run(binary, scale, rounds=1):
    """Both synchronous_commit settings (on first: the headline); leaves the server's setting as found."""
    before = psql("SHOW synchronous_commit")
    apps, n = setup(scale)
    out = {"n": n, "rounds": rounds}
    for mode in ("on", "off"):
        out[f"sync_{mode}"] = set_sync_commit(mode)
        log(f"database cost, synchronous_commit = {mode}: {n} notifications per workload, {rounds} round(s)")
        out[mode] = one_mode(binary, apps, n, rounds)
    set_sync_commit(before)
    return out


def med(runs, key):
    values = [r[key] for r in runs]
    return statistics.median(values) if values else float("nan")


def figures(r):
    """The headline numbers of one run of `run`, per synchronous_commit setting."""
    f = {}
    for mode in ("on", "off"):
        m = r[mode]
        floor = med(m["floor"], "pg_us_per_job")
        x = {"floor": floor, "floor1": med(m["floor1"], "pg_us_per_job"),
             "floor_jobs_per_s": med(m["floor"], "jobs_per_s"),
             "enqueue": med(m["enqueue"], "pg_us_per_notification")}
        for w in ("a2", "b2", "c2", "c1"):
            x[w] = {k: med(m[w], k) for k in ("cpu_us_per_delivery", "pg_us_per_delivery", "deliveries_per_s")}
        x["c_ratio"] = x["c2"]["pg_us_per_delivery"] / floor
        x["c1_ratio"] = x["c1"]["pg_us_per_delivery"] / x["floor1"]
        x["c_total"] = x["c2"]["cpu_us_per_delivery"] + x["c2"]["pg_us_per_delivery"]
        x["enqueue_ratio"] = x["enqueue"] / floor
        f[mode] = x
    return f


SYGNAL_US = 860  # Sygnal's CPU per notification relaying the same pushes (issue 17, measured 2026-12-01 here)


def rows(r):
    """Table rows (figure, measured, target, verdict) for table.py / markdown."""
    f = figures(r)
    on, off = f["on"], f["off"]

    def pair(k1, k2=None, fmt="{:.1f}"):
        a = on[k1] if k2 is None else on[k1][k2]
        b = off[k1] if k2 is None else off[k1][k2]
        return f"{fmt.format(a)} / {fmt.format(b)}"

    out = [("Database cost (issue 17): figures as durable commits / synchronous_commit off", "", "", "")]
    names = {"a2": "(a) single-user, 2 devices, mixed", "b2": "(b) broadcast", "c2": "(c) single-device, plaintext",
             "c1": "(c) single-device, 1 worker"}
    for w in ("a2", "b2", "c2", "c1"):
        workers = "1 worker" if w == "c1" else "2 workers"
        out.append((f"  {names[w]}, {workers}: worker CPU per delivery (µs)", pair(w, "cpu_us_per_delivery"), "-", ""))
        out.append((f"  {names[w]}, {workers}: PostgreSQL CPU per delivery (µs)", pair(w, "pg_us_per_delivery"), "-", ""))
        out.append((f"  {names[w]}, {workers}: deliveries/s", pair(w, "deliveries_per_s", "{:,.0f}"), "-", ""))
    out += [
        (f"  queue floor (pgbench, {CLIENTS} clients, claims of {CLAIM}): PostgreSQL CPU per job (µs)", pair("floor"), "-", ""),
        (f"  queue floor, 1 client (µs)", pair("floor1"), "-", ""),
        ("  (c) 2 workers: PostgreSQL CPU per delivery / floor", pair("c_ratio", fmt="{:.2f}x"), "≤ 3x (durable)",
         verdict(on["c_ratio"] <= 3)),
        ("  (c) 1 worker / floor with 1 client", pair("c1_ratio", fmt="{:.2f}x"), "-", ""),
        ("  (c) 2 workers: worker + PostgreSQL CPU per delivery (µs)", pair("c_total"),
         f"≤ {SYGNAL_US / 5:.0f} (durable)", verdict(on["c_total"] <= SYGNAL_US / 5)),
        ("  (c) 2 workers, test mode: deliveries/s", pair("c2", "deliveries_per_s", "{:,.0f}"), "≥ 4,000 (durable)",
         verdict(on["c2"]["deliveries_per_s"] >= 4000)),
        ("  enqueue, single-user push_enqueue (pgbench, 2 clients): PostgreSQL CPU per notification (µs)",
         pair("enqueue"), "-", ""),
        ("    / floor", pair("enqueue_ratio", fmt="{:.2f}x"), "≤ 2x (durable)", verdict(on["enqueue_ratio"] <= 2)),
    ]
    return out


def verdict(ok):
    return "PASS" if ok else "MISS"


def markdown(r, cmdline):
    """The database-cost section of the results, alone (scripts/bench --only dbcost)."""
    import datetime
    load = os.getloadavg()
    head = ["# pushfleet benchmark results: database cost", "",
            f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
            f"- Command: `{cmdline}`",
            f"- {r['n']:,} notifications per workload ((a): 2 devices each; (b): one notification to "
            f"{r['n'] // 2:,} users × 2 devices; (c): 1 device each), {r['rounds']} round(s), medians",
            f"- Machine: {os.cpu_count()} cores shared with PostgreSQL and the driver, load average at the end "
            f"{load[0]:.2f}; PostgreSQL 15; worker and PostgreSQL CPU net of a worker that starts on an empty "
            f"queue and exits ({BASELINE['cpu_s'] * 1000:.0f} ms / {BASELINE['pg_cpu_s'] * 1000:.0f} ms per worker)",
            "- What each figure means: docs/bench.md (\"Database cost\")", "",
            "| Figure | Measured | Target | |", "|---|---|---|---|"]
    body = [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows(r)]
    return "\n".join(head + body) + "\n"


# ---------------------------------------------------------------- history (part 6, opt-in)

HISTORY_SQL = """
-- Earlier notifications' history, as retention keeps it: {notifications:,} final notifications of the
-- (c) app, {rows:,} delivery rows and {rows:,} ledger rows (a charge each), spread over them. Loaded
-- with session_replication_role = replica (no per-row foreign-key checks or triggers: a restore's
-- speed); the rows are what the fleet writes: notification ids made as push_enqueue makes them
-- (push_uuid_v7, sql/0026), accepted 100 ms apart over the 28 hours before the run, their content
-- already erased as retention does at its first pass after they are final.
SET session_replication_role = replica;
INSERT INTO push_notifications (id, app_id, mode, user_ids, status, accepted_at, expires_at, started_at,
                                finished_at, content_erased_at, device_count)
SELECT push_uuid_v7(now() - interval '3 days' + g * interval '100 milliseconds'), '{app}', 'test', ARRAY['h' || g], 'sent',
       now() - interval '2 days', now() + interval '26 days', now() - interval '2 days', now() - interval '2 days',
       now() - interval '2 days', {per}
  FROM generate_series(1, {notifications}) g;
INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, attempts, created_at, updated_at, finished_at)
SELECT n.id, d.device_id, 'sent', d.device_id, 1, n.accepted_at, n.finished_at, n.finished_at
  FROM push_notifications n, LATERAL (SELECT gen_random_uuid() AS device_id FROM generate_series(1, {per})) d
 WHERE n.user_ids[1] LIKE 'h%';
INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason, created_at)
SELECT d.notification_id, d.device_id, 'charge', '{app}', 'test', 'accepted', d.created_at
  FROM push_deliveries d JOIN push_notifications n ON n.id = d.notification_id WHERE n.user_ids[1] LIKE 'h%';
RESET session_replication_role;
"""


# The deliveries of the run, not the history's (whose notifications' users are 'h...').
HISTORY_SCOPE = ("notification_id IN (SELECT n.id FROM push_notifications n WHERE NOT (n.user_ids[1] LIKE 'h%'))")


def keep_history():
    """reset_queue without TRUNCATE: deletes the workload's own rows, keeping the loaded history."""
    psql("DELETE FROM push_notifications WHERE NOT (user_ids[1] LIKE 'h%')")
    psql("TRUNCATE push_jobs, push_events, push_sms_outbox")


def history(binary, scale, rows=10_000_000, rounds=1):
    """Workload (c), 2 workers, durable commits, on the empty database and then on one holding
    `rows` delivery rows and `rows` ledger rows of earlier notifications (10 per notification);
    each drain after a CHECKPOINT, both sides alike (the load's own writes are not the history's
    cost)."""
    before = psql("SHOW synchronous_commit")
    set_sync_commit("on")
    apps, n = setup(scale)
    out = {"n": n, "rows": rows, "empty": [], "full": []}
    for _ in range(rounds):
        e = enqueue_c(apps["c"], "c", n, n)
        out["empty"].append(drain(binary, "c-2w-empty", 2, e["wall"], checkpoint=True))
    per = 10
    t = time.time()
    log(f"history: loading {rows:,} delivery and {rows:,} ledger rows")
    psql(HISTORY_SQL.format(app=apps["c"], notifications=rows // per, rows=rows, per=per), timeout=14400)
    psql("VACUUM ANALYZE push_notifications, push_deliveries, push_ledger", timeout=7200)
    out["load_s"] = time.time() - t
    out["sizes"] = psql("SELECT string_agg(c.relname || ' ' || pg_size_pretty(pg_total_relation_size(c.oid)), ', ') "
                        "FROM pg_class c WHERE c.relname IN ('push_deliveries', 'push_ledger', 'push_notifications')")
    out["shared_buffers"] = psql("SHOW shared_buffers")
    log(f"history loaded in {out['load_s']:.0f}s: {out['sizes']}")
    for _ in range(rounds):
        keep_history()
        wall, _ = pgbench("enqueue", ENQUEUE_SQL, CLIENTS, n // CLIENTS, {"app": apps["c"], "prefix": "c", "users": n})
        out["full"].append(drain(binary, "c-2w-history", 2, wall, scope=HISTORY_SCOPE, checkpoint=True))
    set_sync_commit(before)
    return out


def rounds_of(runs):
    """Each run's PostgreSQL CPU per delivery, µs, in order: '307, 312, 298'."""
    return ", ".join(f"{x['pg_us_per_delivery']:.0f}" for x in runs)


def history_markdown(r, cmdline):
    import datetime
    e, f = med(r["empty"], "pg_us_per_delivery"), med(r["full"], "pg_us_per_delivery")
    we, wf = med(r["empty"], "cpu_us_per_delivery"), med(r["full"], "cpu_us_per_delivery")
    return "\n".join([
        "# pushfleet benchmark results: cost with history", "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Command: `{cmdline}`",
        f"- Workload (c): {r['n']:,} single-device notifications, 2 workers, durable commits; history: {r['rows']:,} "
        f"delivery rows and {r['rows']:,} ledger rows (loaded in {r['load_s']:.0f} s: {r['sizes']}; shared_buffers "
        f"{r['shared_buffers']}); each drain after a CHECKPOINT",
        f"- PostgreSQL CPU per delivery of each round (µs): empty {rounds_of(r['empty'])}; with history "
        f"{rounds_of(r['full'])}", "",
        "| Figure | Empty database | With history | Ratio | Target |", "|---|---|---|---|---|",
        f"| PostgreSQL CPU per delivery (µs) | {e:.1f} | {f:.1f} | {f / e:.2f}x | ≤ 1.2x {verdict(f / e <= 1.2)} |",
        f"| worker CPU per delivery (µs) | {we:.1f} | {wf:.1f} | {wf / max(we, 1e-9):.2f}x | |",
        f"| deliveries/s | {med(r['empty'], 'deliveries_per_s'):,.0f} | {med(r['full'], 'deliveries_per_s'):,.0f} | | |",
    ]) + "\n"
