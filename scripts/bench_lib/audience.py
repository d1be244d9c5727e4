"""The whole-app audience part of scripts/bench (issue 22; docs/bench.md "Whole-app audiences"),
`scripts/bench --only audience`: a live app of 1,000,000 active devices (half iOS, half Android;
--scale S takes S times as many) broadcast to with `pushfleet send --audience all` against the
project's fake APNs and FCM, in one run:

  1. split alone (no worker running): the split's steps exactly as a worker calls them
     (`push_split_audience`, 5,000 devices per step, batches of 500, one transaction each, with the
     claim's lease written before each step), then a plain `INSERT ... SELECT` of the same rows
     (the batch jobs of 500 device ids and one charge per device) in one transaction; PostgreSQL's
     CPU (pgcpu.py, every server process) for each, per device. Target: split <= 2x the plain one.
  2. the product path: the CLI's acceptance, two `pushfleet worker` processes under /usr/bin/time
     (peak RSS, target < 150 MB) with their default split settings, the fakes answering. Measured:
     acceptance to the last batch job created (the worker's `audience.split_done` line), to the last
     delivery; PostgreSQL's peak memory (the sum of its processes' PSS, sampled every 0.5 s, and
     the largest peak RSS of one of its processes); and, while the broadcast is delivered, another
     app's single-user notification every 0.1 s (test mode), acceptance to delivery (fairness).
  3. the fakes' own rate: `pushfleet bench apns|fcm` at batches of 500 against the same fakes
     (requests answered per second of wall time), which bounds the delivery time of step 2.

Devices are inserted in bulk SQL (rows as push_register_device writes them, without keys: this
measures the split and the delivery path, not registration or sealing), then VACUUM ANALYZE.
"""
import json
import os
import re
import subprocess
import threading
import time

import pgcpu
from providers import EMAIL, KEY, PROJECT, TEAM, TOPIC, Fake, run_json
from workloads import REPO, TMP, URL, VENV_PY, log, make_keys, psql, register_sql

CHUNK, BATCH = 5000, 500


def insert_devices(app, n):
    """`n` active live devices of `app` (odd: iOS production, even: Android), registered a day ago."""
    psql(f"""
INSERT INTO push_devices (app_id, mode, platform, token, user_id, apns_environment, last_registered_at, created_at)
SELECT '{app}', 'live', CASE WHEN g % 2 = 1 THEN 'ios' ELSE 'android' END,
       CASE WHEN g % 2 = 1 THEN md5('i' || g) || md5('j' || g) ELSE 'fcm-' || md5('a' || g) END,
       'user-' || g, CASE WHEN g % 2 = 1 THEN 'production' END, now() - interval '1 day', now() - interval '1 day'
  FROM generate_series(1, {n}) g""", timeout=3600)
    psql(f"INSERT INTO push_device_counts (app_id, mode, active_count) VALUES ('{app}', 'live', {n}) "
         "ON CONFLICT (app_id, mode) DO UPDATE SET active_count = excluded.active_count")


def enqueue_all(app):
    return psql(f"SELECT notification_id FROM push_enqueue('{app}', 'live', NULL, NULL, 'Service update', "
                "'Back to normal', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, now(), "
                "p_audience => 'all')")


def split_alone(app, n, cpu):
    """Phase 1: the split by SQL as the worker calls it, then the plain INSERT ... SELECT."""
    nid = enqueue_all(app)
    job = psql(f"SELECT id FROM push_jobs WHERE notification_id = '{nid}'")
    lease = "'00000000-0000-0000-0000-0000000000b1'"
    claim = (f"UPDATE push_jobs SET state = 'running', lease_token = {lease}, lease_expires_at = now() + interval "
             f"'30 seconds', attempt = attempt + 1 WHERE id = {job};")
    psql(claim + f"SELECT outcome FROM push_start_notifications(ARRAY[{job}]::bigint[], ARRAY[{lease}]::uuid[], {BATCH}, "
         "'refund');")
    steps = n // CHUNK + 1
    script = "".join(f"{claim}\nSELECT outcome FROM push_split_audience({job}, {lease}, {CHUNK}, {BATCH}, 1000000000, 0);\n"
                     for _ in range(steps))
    path = f"{TMP}/split.sql"
    with open(path, "w") as f:
        f.write(script)
    t0 = time.time()
    with pgcpu.Span(cpu) as s:
        out = subprocess.run(["psql", URL, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-f", path],
                             capture_output=True, text=True, timeout=3600)
    wall = time.time() - t0
    if out.returncode != 0:
        raise SystemExit(f"split failed: {out.stderr[:500]}")
    outcomes = out.stdout.split()
    if outcomes[-1:] != ["lease_lost"] and outcomes[-1:] != ["done"] or outcomes.count("done") != 1:
        log(f"audience: split outcomes unexpected: {outcomes[:3]} ... {outcomes[-3:]}")
    done_step = outcomes.index("done") + 1 if "done" in outcomes else None
    split_rows = int(psql(f"SELECT sum(cardinality(device_ids)) FROM push_jobs WHERE notification_id = '{nid}'"))
    split_dups = int(psql(f"SELECT count(*) - count(DISTINCT d) FROM push_jobs j, unnest(j.device_ids) d "
                          f"WHERE j.notification_id = '{nid}'"))
    charges = int(psql(f"SELECT count(*) FROM push_ledger WHERE notification_id = '{nid}'"))
    jobs = int(psql(f"SELECT count(*) FROM push_jobs WHERE notification_id = '{nid}'"))
    # The plain INSERT ... SELECT of the same rows, for a second (never started) notification.
    other = enqueue_all(app)
    t1 = time.time()
    with pgcpu.Span(cpu) as b:
        psql(f"""BEGIN;
INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
SELECT 'batch', '{other}', '{app}', array_agg(x.id ORDER BY x.id), 0, now()
  FROM (SELECT d.id, (row_number() OVER (ORDER BY d.id) - 1) / {BATCH} AS g FROM push_devices d
         WHERE d.app_id = '{app}' AND d.mode = 'live' AND d.active) x GROUP BY x.g;
INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
SELECT '{other}', d.id, 'charge', '{app}', 'live', 'send_time' FROM push_devices d
 WHERE d.app_id = '{app}' AND d.mode = 'live' AND d.active;
COMMIT;""", timeout=3600)
    plain_wall = time.time() - t1
    plain_rows = int(psql(f"SELECT sum(cardinality(device_ids)) FROM push_jobs WHERE notification_id = '{other}' "
                          "AND kind = 'batch'"))
    psql(f"DELETE FROM push_notifications WHERE id IN ('{nid}', '{other}')", timeout=3600)
    psql("VACUUM ANALYZE push_jobs", timeout=3600)
    psql("VACUUM ANALYZE push_ledger", timeout=3600)
    return {"split_cpu_s": s.seconds, "split_wall_s": wall, "split_steps": done_step or len(outcomes),
            "split_rows": split_rows,
            "split_duplicates": split_dups, "split_charges": charges, "split_jobs": jobs,
            "plain_cpu_s": b.seconds, "plain_wall_s": plain_wall, "plain_rows": plain_rows}


def pg_memory(pid):
    """(sum of PSS over the postmaster and its children, largest VmHWM of one of them), kB."""
    total, hwm = 0, 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                raw = f.read()
            ppid = int(raw[raw.rindex(")") + 2:].split()[1])
            if int(name) != pid and ppid != pid:
                continue
            with open(f"/proc/{name}/smaps_rollup") as f:
                total += sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
            with open(f"/proc/{name}/status") as f:
                hwm = max([hwm] + [int(line.split()[1]) for line in f if line.startswith("VmHWM:")])
        except (FileNotFoundError, ProcessLookupError, ValueError, PermissionError):
            continue
    return total, hwm


def fakes_and_credentials(binary, app, env):
    d = f"{TMP}/fakes"
    os.makedirs(d, exist_ok=True)
    subprocess.run([VENV_PY, f"{REPO}/scripts/fakes/mkcerts.py", d], check=True, capture_output=True, timeout=120)
    apns, fcm = Fake(TMP, "apns"), Fake(TMP, "fcm")
    sa = f"{d}/service-account.json"
    with open(sa, "w") as f:
        json.dump({"type": "service_account", "project_id": PROJECT, "private_key_id": "bench-key-1",
                   "private_key": open(f"{d}/sa_key.pem").read(), "client_email": EMAIL}, f)
    for args in (["--kind", "apns", "--team-id", TEAM, "--key-id", KEY, "--topic", TOPIC, "--p8-file", f"{d}/apns_key.p8",
                  "--apns-base-url-production", apns.url, "--apns-base-url-sandbox", apns.url],
                 ["--kind", "fcm", "--service-account-file", sa, "--fcm-base-url", fcm.url,
                  "--fcm-token-uri", fcm.url + "/token"]):
        subprocess.run([binary, "apps", "credentials", "set", app] + args, env=env, check=True, capture_output=True,
                       timeout=60)
    return apns, fcm


def fake_rate(binary, apns, fcm, count):
    """Requests per second of wall time each fake answered to `pushfleet bench` at batches of 500."""
    d = f"{TMP}/fakes"
    out = {}
    for kind, fake, args in (("apns", apns, ["--key-file", f"{d}/apns_key.p8", "--team-id", TEAM, "--key-id", KEY,
                                             "--topic", TOPIC]),
                             ("fcm", fcm, ["--sa-key-file", f"{d}/sa_key.pem", "--client-email", EMAIL,
                                           "--project-id", PROJECT])):
        t0 = time.time()
        r = subprocess.run([binary, "bench", kind, "--url", fake.url, "--ca-file", f"{d}/ca.pem"] + args
                           + ["--batch-sizes", "500", "--rounds", "1", "--count", str(count), "--json"],
                           capture_output=True, text=True, timeout=600)
        wall = time.time() - t0
        if r.returncode != 0:
            out[kind] = f"not measured: {r.stdout.strip()[:160] or r.stderr.strip()[:160]}"
            continue
        j = json.loads(r.stdout)
        if j["500_ok"] != j["500_requests"]:
            raise SystemExit(f"bench {kind}: {j['500_ok']} of {j['500_requests']} answered 200")
        out[kind] = int(j["requests_total"]) / wall
    return out


def product_run(binary, app, probe_app, n, cpu, env, apns, fcm, label, extra=(), max_seconds=7200, probe=True):
    """Phase 2: CLI acceptance, two workers (`extra` worker options), the fakes; fairness probes
    meanwhile. Stops after the notification ends or `max_seconds` after the acceptance."""
    logs = [f"{TMP}/audience-{label}-{i}.log" for i in range(2)]
    times = [f"{TMP}/audience-{label}-{i}.time" for i in range(2)]
    workers = [subprocess.Popen(["/usr/bin/time", "-v", "-o", t, binary, "worker", "--metrics-addr", "off"] + list(extra),
                                env=env,
                                stdout=subprocess.DEVNULL, stderr=open(lf, "w")) for lf, t in zip(logs, times)]
    time.sleep(2)
    peak = {"pss": 0, "hwm": 0}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            pss, hwm = pg_memory(cpu.pid)
            peak["pss"], peak["hwm"] = max(peak["pss"], pss), max(peak["hwm"], hwm)
            stop.wait(0.5)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = subprocess.run([binary, "send", "--app", app, "--mode", "live", "--audience", "all", "--title", "Service update",
                          "--body", "Back to normal", "--json"], env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"send --audience all failed: {out.stderr[:500]}")
    nid = json.loads(out.stdout)["notification_id"]
    nid = nid.split("_", 1)[1] if nid.startswith("pnot_") else nid
    nid = f"{nid[0:8]}-{nid[8:12]}-{nid[12:16]}-{nid[16:20]}-{nid[20:32]}" if "-" not in nid else nid
    feed = subprocess.Popen(["psql", URL, "-X", "-q", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    probes, t_probe0 = 0, time.time()
    with pgcpu.Span(cpu) as span:
        deadline = time.time() + max_seconds
        while time.time() < deadline:
            if psql(f"SELECT finished_at IS NOT NULL FROM push_notifications WHERE id = '{nid}'") == "t":
                break
            if not probe:
                # The split run stops once the split job has become the last batch job.
                if psql(f"SELECT count(*) FROM push_jobs WHERE notification_id = '{nid}' "
                        "AND kind IN ('notification', 'split')") == "0":
                    break
                time.sleep(0.2)
                continue
            feed.stdin.write(f"SELECT push_enqueue('{probe_app}', 'test', ARRAY['q{probes % 100}'], NULL, 'Ping', "
                             f"'Fairness probe {probes}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
                             "NULL);\n")
            feed.stdin.flush()
            probes += 1
            time.sleep(0.1)
    feed.stdin.close()
    feed.wait(timeout=60)
    deadline = time.time() + 30
    while time.time() < deadline and int(psql(f"SELECT count(*) FROM push_notifications WHERE finished_at IS NULL "
                                             f"AND app_id = '{probe_app}'")):
        time.sleep(0.2)
    finished = psql(f"SELECT finished_at IS NOT NULL FROM push_notifications WHERE id = '{nid}'") == "t"
    stop.set()
    sampler.join()
    stop_workers(workers)
    accepted = float(psql(f"SELECT extract(epoch FROM accepted_at) FROM push_notifications WHERE id = '{nid}'"))
    last_delivery = float(psql(f"SELECT coalesce(extract(epoch FROM max(updated_at)), 0) FROM push_deliveries "
                               f"WHERE notification_id = '{nid}'"))
    split_done = None
    for lf in logs:
        for line in open(lf):
            if '"audience.split_done"' in line:
                split_done = json.loads(line)
    done_at = parse_ts(split_done["ts"]) if split_done else float("nan")
    rss = []
    for t in times:
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(t).read())
        rss.append(int(m.group(1)) / 1024 if m else float("nan"))
    delivered = int(psql(f"SELECT count(*) FROM push_deliveries WHERE notification_id = '{nid}' AND status = 'sent'"))
    rows = int(psql(f"SELECT count(*) FROM push_deliveries WHERE notification_id = '{nid}'"))
    charged = int(psql(f"SELECT count(*) FROM push_ledger WHERE notification_id = '{nid}' AND kind = 'charge'"))
    behind = [float(x) for x in psql(
        f"SELECT extract(epoch FROM max(d.updated_at) - n.accepted_at) FROM push_notifications n "
        f"JOIN push_deliveries d ON d.notification_id = n.id WHERE n.app_id = '{probe_app}' AND d.status = 'sent' "
        f"AND n.accepted_at >= to_timestamp({t_probe0}) GROUP BY n.id HAVING max(d.updated_at) < to_timestamp({last_delivery})"
    ).split()]
    seen = {}
    for row in psql(f"SELECT d.provider, count(*) / greatest(extract(epoch FROM max(d.updated_at) - min(d.updated_at)), 0.001) "
                    f"FROM push_deliveries d WHERE d.notification_id = '{nid}' AND d.status = 'sent' GROUP BY 1").split():
        name, value = row.split("|")
        seen["apns" if "apns" in name else "fcm" if "fcm" in name else name] = float(value)
    split_jobs = int(psql(f"SELECT count(*) FROM push_jobs WHERE notification_id = '{nid}' AND kind = 'batch'"))
    psql(f"DELETE FROM push_notifications WHERE id = '{nid}'", timeout=3600)
    return {"finished": finished, "split_batch_jobs": split_jobs, "to_last_batch_s": done_at - accepted, "to_last_delivery_s": last_delivery - accepted,
            "delivered": delivered, "rows": rows, "charged": charged, "worker_rss_mb": rss,
            "pg_peak_pss_mb": peak["pss"] / 1024, "pg_peak_process_mb": peak["hwm"] / 1024,
            "pg_cpu_s": span.seconds, "probes": probes, "fair": sorted(behind), "fake_seen": seen}


def stop_workers(workers):
    """SIGTERM to each worker under /usr/bin/time (its child), so that time reports its peak RSS."""
    import signal
    for w in workers:
        try:
            with open(f"/proc/{w.pid}/task/{w.pid}/children") as f:
                for child in f.read().split():
                    os.kill(int(child), signal.SIGTERM)
        except (FileNotFoundError, ProcessLookupError):
            pass
    for w in workers:
        w.wait(timeout=120)


def fairness_all(binary, n_test):
    """The fairness phase (bench.py's fairness_run: two idle workers, three rounds, another app's
    single-user notification every 0.1 s) with a whole-app broadcast in test mode (the simulator)
    to `n_test` devices instead of a user-list broadcast (the bench lifts R-DEV-6's test cap)."""
    from bench import fairness_run
    app = psql("INSERT INTO push_apps (name, require_encryption) VALUES ('bench audience test', false) RETURNING id")
    probe = psql("INSERT INTO push_apps (name, require_encryption) VALUES ('bench audience test probe', false) RETURNING id")
    psql(f"""
INSERT INTO push_devices (app_id, mode, platform, token, user_id, apns_environment, last_registered_at, created_at)
SELECT '{app}', 'test', CASE WHEN g % 2 = 1 THEN 'ios' ELSE 'android' END,
       CASE WHEN g % 2 = 1 THEN md5('ti' || g) || md5('tj' || g) ELSE 'tfcm-' || md5('ta' || g) END,
       'tuser-' || g, CASE WHEN g % 2 = 1 THEN 'production' END, now() - interval '1 day', now() - interval '1 day'
  FROM generate_series(1, {n_test}) g""", timeout=3600)
    psql(register_sql(probe, "q", 100, 0.0))
    psql("VACUUM ANALYZE push_devices")
    enqueue = (f"SELECT notification_id FROM push_enqueue('{app}', 'test', NULL, NULL, 'Service update', 'Back', NULL, "
               "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, now(), p_audience => 'all')")
    r = fairness_run(binary, app, None, None, probe, "q", 100, enqueue_sql=enqueue)
    r["latency"] = sorted(r["latency"])
    return r


def parse_ts(text):
    """An RFC 3339 UTC timestamp of a log line (`2026-12-01T20:00:00.123Z`) as epoch seconds."""
    import calendar
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z", text)
    if not m:
        raise SystemExit(f"unreadable log timestamp {text!r}")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    return calendar.timegm((y, mo, d, h, mi, s)) + float(m.group(7) or 0)


def run(binary, scale, split_seconds=900,
        deliver_seconds=float(os.environ.get("PUSHFLEET_BENCH_AUDIENCE_DELIVER_SECONDS", "240"))):
    """Both phases on `scale` x 1,000,000 devices; the default-settings run delivers for at most
    `deliver_seconds` (PUSHFLEET_BENCH_AUDIENCE_DELIVER_SECONDS, default 240)."""
    n = max(10_000, int(1_000_000 * scale))
    cpu = pgcpu.PGCPU(pgcpu.postmaster_pid(psql("SHOW data_directory")))
    app = psql("INSERT INTO push_apps (name, require_encryption) VALUES ('bench audience', false) RETURNING id")
    probe_app = psql("INSERT INTO push_apps (name, require_encryption) VALUES ('bench audience probe', false) RETURNING id")
    t = time.time()
    insert_devices(app, n)
    make_keys()
    psql(register_sql(probe_app, "q", 100, 0.0))
    psql("VACUUM ANALYZE", timeout=3600)
    log(f"audience: {n} live devices in {time.time() - t:.1f}s")
    return measure(binary, scale, app, probe_app, n, cpu, split_seconds, deliver_seconds)


def measure(binary, scale, app, probe_app, n, cpu, split_seconds, deliver_seconds):
    """The three parts on the devices `run` made (also callable again on the same cluster)."""
    res = {"devices": n}
    log("audience: the split alone, then the plain INSERT ... SELECT")
    res |= split_alone(app, n, cpu)
    log(f"audience: split {res['split_cpu_s']:.2f} s CPU, plain {res['plain_cpu_s']:.2f} s; the product path")
    key = subprocess.run(["python3", "-c", "import base64,os;print(base64.urlsafe_b64encode(os.urandom(32))"
                          ".rstrip(b'=').decode())"], capture_output=True, text=True, check=True).stdout.strip()
    env = dict(os.environ, PUSHFLEET_CREDENTIALS_KEY=key, PUSHFLEET_PROVIDER_CA_FILE=f"{TMP}/fakes/ca.pem",
               PUSHFLEET_LOG_LEVEL="info", PUSHFLEET_WEBHOOKS="off",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    apns, fcm = fakes_and_credentials(binary, app, env)
    # 2a: the split at its own pace (no pause for unfinished batches), to the last batch job.
    log("audience: product path, split unthrottled (--split-pending 1000000), until the split is done")
    res["fast"] = product_run(binary, app, probe_app, n, cpu, env, apns, fcm, "fast", ("--split-pending", "1000000"),
                              max_seconds=split_seconds, probe=False)
    # 2b: the default settings, delivering for at most `deliver_seconds`.
    log(f"audience: product path, default split settings, delivering (at most {deliver_seconds:.0f} s)")
    res["default"] = product_run(binary, app, probe_app, n, cpu, env, apns, fcm, "default", (),
                                 max_seconds=deliver_seconds)
    # 3: fairness with a whole-app broadcast in test mode (the fakes' pace would measure the fakes).
    log("audience: fairness behind a test-mode whole-app broadcast (simulator)")
    res["fairness"] = fairness_all(binary, max(100, int(50_000 * min(1.0, scale * 50))))
    res["fake_rate"] = fake_rate(binary, apns, fcm, count=20000)
    apns.stop()
    fcm.stop()
    return res


def rate(x):
    return f"{x:,.0f}/s" if isinstance(x, float) else x


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def markdown(r, cmdline):
    n = r["devices"]
    ratio = r["split_cpu_s"] / r["plain_cpu_s"] if r["plain_cpu_s"] else float("nan")
    f, d = r["fast"], r["default"]
    fair = d["fair"]
    fa = r["fairness"]
    ff = fa["latency"]
    rss = f["worker_rss_mb"] + d["worker_rss_mb"]
    lines = [
        "# pushfleet benchmark results: whole-app audiences\n",
        f"`{cmdline}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {n:,} live devices (half iOS, half Android), "
        "2 cores shared with other jobs, synchronous_commit off. What each figure means: docs/bench.md, "
        "\"Whole-app audiences\".\n",
        "| figure | measured | target |", "|---|---|---|",
        f"| split alone: PostgreSQL CPU | {r['split_cpu_s']:.2f} s = {1e6 * r['split_cpu_s'] / n:.2f} µs/device "
        f"({r['split_steps']} steps of {CHUNK:,}, {r['split_jobs']:,} batch jobs, {r['split_charges']:,} charges, "
        f"{r['split_wall_s']:.1f} s wall) | |",
        f"| plain `INSERT ... SELECT` of the same rows | {r['plain_cpu_s']:.2f} s = {1e6 * r['plain_cpu_s'] / n:.2f} µs/device "
        f"({r['plain_wall_s']:.1f} s wall) | |",
        f"| split / plain, PostgreSQL CPU per device | {ratio:.2f}x | ≤ 2x: {'PASS' if ratio <= 2 else 'MISS'} |",
        f"| every device split once (split alone) | {r['split_rows']:,} device ids, {r['split_duplicates']} twice | {n:,}, 0 |",
        f"| product path, split unthrottled: acceptance to last batch job created | {f['to_last_batch_s']:.1f} s "
        f"({f['split_batch_jobs']:,} batch jobs; {f['delivered']:,} delivered meanwhile; PostgreSQL CPU {f['pg_cpu_s']:.1f} s) | |",
        f"| product path, default settings (100 unfinished batches pause the split): "
        f"{'ended' if d['finished'] else 'stopped after the time bound'} | {d['delivered']:,} sent of {d['rows']:,} rows "
        f"in {d['to_last_delivery_s']:.1f} s after acceptance ({d['delivered'] / max(d['to_last_delivery_s'], 1e-9):,.0f} "
        f"deliveries/s), {d['charged']:,} charges, last batch job at {d['to_last_batch_s']:.1f} s | |",
        f"| worker peak RSS (both runs, 2 workers each) | {' / '.join(f'{x:.1f}' for x in rss)} MB | < 150 MB: "
        f"{'PASS' if max(rss) < 150 else 'MISS'} |",
        f"| PostgreSQL peak memory (sum of PSS; largest process RSS) | unthrottled {f['pg_peak_pss_mb']:.0f} MB, "
        f"{f['pg_peak_process_mb']:.0f} MB; default {d['pg_peak_pss_mb']:.0f} MB, {d['pg_peak_process_mb']:.0f} MB | |",
        f"| the fakes' own rate (`pushfleet bench`, batches of 500, wall time) | APNs {rate(r['fake_rate']['apns'])}, FCM "
        f"{rate(r['fake_rate']['fcm'])}; answered during the default run: "
        + ", ".join(f"{k} {v:,.0f}/s" for k, v in d['fake_seen'].items()) + " | |",
        f"| live: another app's test notification behind the live broadcast (default run; the fakes bound the batches) "
        f"| p50 {1000 * pct(fair, .5):.0f} ms, p99 {1000 * pct(fair, .99):.0f} ms, max "
        f"{1000 * max(fair or [float('nan')]):.0f} ms ({len(fair)} of {d['probes']} probes) | |",
        f"| fairness phase with a whole-app broadcast (test mode, {fa['broadcast_deliveries'] // max(fa['rounds'], 1):,} "
        f"devices, 3 rounds) | p50 {1000 * pct(ff, .5):.0f} ms, p99 {1000 * pct(ff, .99):.0f} ms, max "
        f"{1000 * max(ff or [float('nan')]):.0f} ms ({len(ff)} probes behind it; broadcasts "
        f"{', '.join(f'{x:.1f}' for x in fa['broadcast_s'])} s) | < 1 s: {'PASS' if ff and max(ff) < 1 else 'MISS'} |",
    ]
    return "\n".join(lines) + "\n"
