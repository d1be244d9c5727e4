"""scripts/bench driver: workloads against real `pushfleet worker` processes on a throwaway
PostgreSQL, in-process micro-benchmarks (`pushfleet bench ...`), the pyhpke peer, and one table.

Called by scripts/bench (which builds, starts PostgreSQL and exports DATABASE_URL). Usage:
  python3 bench.py --binary PATH --scale S --out docs/bench-results.md --cmdline "..."
Every figure and how it is measured is described in docs/bench.md.
"""
import argparse
import json
import os
import secrets
import subprocess
import time

import dbcost
import providers
from table import pct, write_table
from workloads import (BASELINE, HERE, REPO, TMP, URL, VENV_PY, age_registrations, create_app, enqueue_broadcast_sql,
                       enqueue_single_sql, log, make_keys, measure_baseline, psql, psql_parallel, register_sql,
                       reset_queue, run_workers, workload)


def round_trips(logs):
    values = []
    for lf in logs:
        for line in open(lf):
            if '"batch.record"' in line or '"claim.record"' in line:
                o = json.loads(line)
                if "round_trips" in o:
                    values.append(o["round_trips"])
    return values


def idle_fleet(binary, label, level):
    """Two `pushfleet worker` processes (logs in TMP/label-N.log), given 2 s to start, and one `psql`
    session to feed enqueues through; returns (workers, log paths, feed)."""
    env = dict(os.environ, PUSHFLEET_LOG_LEVEL=level)
    logs = [f"{TMP}/{label}-{i}.log" for i in range(2)]
    workers = [subprocess.Popen([binary, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=open(lf, "w"))
               for lf in logs]
    time.sleep(2)
    feed = subprocess.Popen(["psql", URL, "-X", "-q", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return workers, logs, feed


def stop_fleet(workers, feed):
    """Closes the feed, then SIGTERMs the workers and waits for them."""
    feed.stdin.close()
    feed.wait(timeout=60)
    for w in workers:
        w.terminate()
    for w in workers:
        w.wait(timeout=60)


def latency_run(binary, app, prefix, users, count, rate, scheduled_share):
    """Two idle workers; `count` single-user notifications enqueued one by one at `rate`/s."""
    reset_queue()
    workers, _, feed = idle_fleet(binary, "latency", "warn")
    rng = secrets.SystemRandom()
    for i in range(count):
        u = rng.randrange(users)
        send_at = "clock_timestamp() + interval '3 seconds'" if rng.random() < scheduled_share else "NULL"
        feed.stdin.write(f"SELECT push_enqueue('{app}', 'test', ARRAY['{prefix}{u}'], NULL, 'Ping', 'Latency probe {i}', "
                         f"NULL, NULL, NULL, NULL, NULL, NULL, {send_at}, NULL, NULL, NULL, NULL);\n")
        feed.stdin.flush()
        time.sleep(1.0 / rate)
    deadline = time.time() + 60
    while time.time() < deadline and int(psql("SELECT count(*) FROM push_notifications WHERE finished_at IS NULL")):
        time.sleep(0.5)
    stop_fleet(workers, feed)
    lat = [float(x) for x in psql(
        "SELECT extract(epoch FROM d.updated_at - n.accepted_at) FROM push_deliveries d "
        "JOIN push_notifications n ON n.id = d.notification_id WHERE n.send_at IS NULL AND d.status = 'sent'").split()]
    late = [float(x) for x in psql(
        "SELECT extract(epoch FROM started_at - send_at) FROM push_notifications WHERE send_at IS NOT NULL "
        "AND started_at IS NOT NULL").split()]
    return {"latency": lat, "lateness": late}


def fairness_run(binary, bcast_app, bcast_prefix, bcast_users, probe_app, probe_prefix, probe_users, rounds=3,
                 interval=0.1, enqueue_sql=None):
    """Issue 4, fairness: two idle workers; `rounds` times, one app enqueues a broadcast to
    `bcast_users` users (two devices each), and while it is being delivered another app enqueues a
    single-user notification (two devices) every `interval` seconds. A probe's time is from its
    acceptance to its last delivery row's commit (after the provider answered: an upper bound on
    reaching the provider); only probes delivered before their broadcast's last delivery count.
    Also returns each worker's share of the broadcasts' deliveries, from its claim.record /
    batch.record lines (info level). `enqueue_sql` replaces the broadcast's statement (one id a line;
    audience.py's whole-app broadcast)."""
    reset_queue()
    workers, logs, feed = idle_fleet(binary, "fairness", "info")
    rng = secrets.SystemRandom()
    sent, behind, broadcast_s, broadcasts = 0, [], [], []
    for _ in range(rounds):
        t0 = time.time()
        ids = ",".join(f"'{x}'" for x in psql(enqueue_sql or enqueue_broadcast_sql(bcast_app, bcast_prefix,
                                                                                  bcast_users)).split())
        broadcasts.append(ids)
        deadline = time.time() + 120
        while time.time() < deadline and int(psql(
                f"SELECT count(*) FROM push_deliveries WHERE notification_id IN ({ids})")) < 2000:
            time.sleep(0.05)
        deadline = time.time() + 1800
        while time.time() < deadline:
            if psql(f"SELECT bool_and(finished_at IS NOT NULL) FROM push_notifications WHERE id IN ({ids})") == "t":
                break
            u = rng.randrange(probe_users)
            feed.stdin.write(f"SELECT push_enqueue('{probe_app}', 'test', ARRAY['{probe_prefix}{u}'], NULL, 'Ping', "
                             f"'Fairness probe {sent}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);\n")
            feed.stdin.flush()
            sent += 1
            time.sleep(interval)
        deadline = time.time() + 600
        while time.time() < deadline and int(psql("SELECT count(*) FROM push_notifications WHERE finished_at IS NULL")):
            time.sleep(0.2)
        bcast_end = float(psql(f"SELECT extract(epoch FROM max(updated_at)) FROM push_deliveries "
                               f"WHERE notification_id IN ({ids})"))
        broadcast_s.append(bcast_end - t0)
        rows = psql(f"SELECT extract(epoch FROM max(d.updated_at) - n.accepted_at), extract(epoch FROM max(d.updated_at)) "
                    f"FROM push_notifications n JOIN push_deliveries d ON d.notification_id = n.id "
                    f"WHERE n.app_id = '{probe_app}' AND d.status = 'sent' AND n.accepted_at >= to_timestamp({t0}) "
                    f"GROUP BY n.id").split()
        behind += [float(lat) for lat, done in (r.split("|") for r in rows) if float(done) < bcast_end]
    stop_fleet(workers, feed)
    ids = ",".join(broadcasts)
    delivered = int(psql(f"SELECT count(*) FROM push_deliveries WHERE notification_id IN ({ids})"))
    probes_delivered = int(psql(f"SELECT count(DISTINCT n.id) FROM push_notifications n JOIN push_deliveries d "
                                f"ON d.notification_id = n.id WHERE n.app_id = '{probe_app}' AND d.status = 'sent'"))
    devices = []
    for lf in logs:
        total = 0
        for line in open(lf):
            if '"claim.record"' in line or '"batch.record"' in line:
                total += json.loads(line).get("devices", 0)
        devices.append(total)
    return {"latency": behind, "probes": sent, "probes_delivered": probes_delivered, "rounds": rounds,
            "broadcast_deliveries": delivered, "broadcast_s": broadcast_s, "worker_devices": devices}


# ---------------------------------------------------------------- in-process benchmarks

def bench_cmd(binary, *args):
    r = subprocess.run([binary, "bench", *args, "--json"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"pushfleet bench {args[0]} failed: {r.stderr.strip()[:500]}")
    return {k: float(v) for k, v in json.loads(r.stdout).items()}


def provider_bench(a, scale):
    """APNs / FCM client CPU per request (scripts/bench_lib/providers.py)."""
    subprocess.run([VENV_PY, f"{REPO}/scripts/fakes/mkcerts.py", f"{TMP}/fakes"], check=True, capture_output=True)
    count = max(500, int(2000 * min(1, scale * 2)))
    return providers.run(a.binary, TMP, log, rounds=a.provider_rounds, count=count,
                         baseline_binary=a.baseline_binary or None, perf=bool(a.perf))


def pyhpke(seconds, threads):
    r = subprocess.run([VENV_PY, f"{HERE}/pyhpke_seal.py", str(seconds), threads], capture_output=True, text=True,
                       timeout=600, check=True)
    return json.loads(r.stdout)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cmdline", default="scripts/bench")
    ap.add_argument("--seal-seconds", type=float, default=3.0)
    ap.add_argument("--durable", action="store_true", help="keep synchronous_commit on (disk-bound)")
    ap.add_argument("--only", choices=["fairness", "providers", "dbcost", "history", "api", "previews", "audience"],
                    help="run one phase: fairness prints its figures; providers and dbcost write their part of --out; "
                         "api writes docs/bench-api-results.md")
    ap.add_argument("--history-rows", type=float, default=10_000_000, help="--only history: delivery and ledger rows")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the database-cost runs (medians)")
    ap.add_argument("--baseline-binary", default="", help="pushfleet built from issue 18's starting commit")
    ap.add_argument("--perf", action="store_true", help="profile the APNs clients with perf")
    ap.add_argument("--provider-rounds", type=int, default=5)
    a = ap.parse_args()
    P, s = a.binary, a.scale
    n_single = max(100, int(100_000 * s))          # workload (a): notifications (one user each, 2 devices)
    n_bcast = max(100, int(50_000 * s))            # workload (b): users of the broadcast
    n_split = max(100, int(20_000 * s))            # all-encrypted and all-plaintext variants of (a)
    half = n_single // 2
    res = {}
    if a.only == "providers":
        res = provider_bench(a, s)
        text = "# pushfleet benchmark results: provider clients only\n\n" + providers.markdown(res, a.cmdline)
        with open(a.out, "w") as f:
            f.write(text)
        print(text)
        return

    if a.only == "previews":
        import preview_bench
        preview_bench.run(P, URL, psql, os.path.join(REPO, "docs", "bench-previews-results.md"))
        return
    if a.only == "api":
        import api_bench
        api_bench.run(P, URL, psql, os.path.join(REPO, "docs", "bench-api-results.md"))
        return
    if not a.durable:
        # Measure the workers, not this machine's disk (fdatasync about 2.4 ms here): commits return
        # before their WAL flush; a crash could lose the last ~0.6 s of commits, never corrupt.
        psql("ALTER SYSTEM SET synchronous_commit = off")
        psql("SELECT pg_reload_conf()")
    res["sync_commit"] = psql("SHOW synchronous_commit")
    if a.only == "audience":
        import audience
        text = audience.markdown(audience.run(P, s), a.cmdline)
        with open(a.out, "w") as f:
            f.write(text)
        print(text)
        return
    log(f"scale {s}: (a) {n_single} notifications, (b) {n_bcast} users, variants {n_split} notifications")
    make_keys()
    open_app, secure_app = create_app("bench open", False), create_app("bench secure", True)
    enc_app, plain_app = create_app("bench all-encrypted", False), create_app("bench all-plaintext", False)
    probe_app = create_app("bench probe", False)
    n_fair = max(100, n_bcast // 2)                # fairness: a broadcast of 50,000 deliveries (25,000 users)
    t = time.time()
    if a.only in ("history", "dbcost"):
        measure_baseline(P)
        if a.only == "history":
            text = dbcost.history_markdown(dbcost.history(P, s, rows=int(a.history_rows), rounds=a.rounds), a.cmdline)
        else:
            text = dbcost.markdown(dbcost.run(P, s, a.rounds), a.cmdline)
        with open(a.out, "w") as f:
            f.write(text)
        print(text)
        return
    if a.only == "fairness":
        psql_parallel([register_sql(open_app, "o", n_fair, 0.7), register_sql(probe_app, "q", 100, 0.7)])
        age_registrations()
        psql("VACUUM ANALYZE")
        r = fairness_run(P, open_app, "o", n_fair, probe_app, "q", 100)
        r["latency"] = sorted(r["latency"])
        print(json.dumps(r | {"latency_p50": pct(r["latency"], .5), "latency_p99": pct(r["latency"], .99),
                              "latency_max": max(r["latency"] or [float("nan")])}))
        return
    psql(register_sql(probe_app, "q", 100, 0.7))
    psql_parallel([register_sql(open_app, "o", max(half, n_bcast), 0.7), register_sql(secure_app, "s", half, 0.7)])
    psql_parallel([register_sql(enc_app, "e", n_split, 1.0), register_sql(plain_app, "p", n_split, 0.0)])
    age_registrations()
    psql("VACUUM ANALYZE")
    res["devices"] = int(psql("SELECT count(*) FROM push_devices"))
    log(f"registered {res['devices']} devices in {time.time() - t:.1f}s")

    measure_baseline(P)
    res["dbcost"] = dbcost.run(P, s, a.rounds)
    a_sqls = [enqueue_single_sql(open_app, "o", half, 0.1), enqueue_single_sql(secure_app, "s", n_single - half, 0.1)]
    res["a1"] = workload(P, "a-1w", 1, a_sqls)
    res["a2"] = workload(P, "a-2w", 2, a_sqls)
    res["enc"] = workload(P, "enc-1w", 1, [enqueue_single_sql(enc_app, "e", n_split, 0)])
    res["plain"] = workload(P, "plain-1w", 1, [enqueue_single_sql(plain_app, "p", n_split, 0)])
    res["plain_warn"] = workload(P, "plain-1w-warn", 1, [enqueue_single_sql(plain_app, "p", n_split, 0)], level="warn")
    res["enc_b"] = workload(P, "enc-bcast-1w", 1, [enqueue_broadcast_sql(enc_app, "e", n_split)])
    res["plain_b"] = workload(P, "plain-bcast-1w", 1, [enqueue_broadcast_sql(plain_app, "p", n_split)])
    b_sql = [enqueue_broadcast_sql(open_app, "o", n_bcast)]
    res["b1"] = workload(P, "b-1w", 1, b_sql)
    res["b2"] = workload(P, "b-2w", 2, b_sql)
    res["rt"] = {}
    for size in (50, 500, 2000):
        r = res["b1"] if size == 500 else workload(P, f"b-batch{size}", 1, b_sql, extra=("--batch-size", str(size)))
        res["rt"][size] = round_trips(r["logs"])
    log("latency run (idle fleet, one by one)")
    res["lat"] = latency_run(P, open_app, "o", half, count=max(50, int(400 * min(1, s * 4))), rate=20,
                             scheduled_share=0.1)
    log("fairness run (a single-user notification every 0.1 s behind another app's broadcast)")
    res["fair"] = fairness_run(P, open_app, "o", n_fair, probe_app, "q", 100)
    log("micro-benchmarks")
    res["floor"] = bench_cmd(P, "floor")
    res["plan"] = bench_cmd(P, "plan")
    res["seal1"] = bench_cmd(P, "seal", "--seconds", str(a.seal_seconds), "--threads", "1")
    res["sealN"] = bench_cmd(P, "seal", "--seconds", str(a.seal_seconds), "--threads", "all")
    res["py1"] = pyhpke(a.seal_seconds, "1")
    res["pyN"] = pyhpke(a.seal_seconds, "all")
    res["providers"] = provider_bench(a, s)
    write_table(res, a, n_single, n_bcast, n_split, BASELINE["cpu_s"])
    log("preview fetch: every 404 case side by side (docs/bench-previews-results.md)")
    import preview_bench
    preview_bench.run(P, URL, psql, os.path.join(REPO, "docs", "bench-previews-results.md"), requests=max(200, int(2000 * s)))


if __name__ == "__main__":
    main()
