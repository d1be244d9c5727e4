"""The workloads of scripts/bench: the throwaway database (psql helpers), apps, devices and
notifications made in SQL, and real `pushfleet worker` processes draining them, timed with
/usr/bin/time for the workers and /proc for PostgreSQL (pgcpu.py). Used by bench.py and dbcost.py.
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

import pgcpu

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
URL = os.environ.get("DATABASE_URL", "")  # not needed by --only providers
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
TMP = tempfile.mkdtemp(prefix="pushfleet-bench-")
COMMIT_EVERY = 1000
APP_LIMIT = 10_000_000  # test mode's 1,000-device app limit (R-DEV-6) is lifted for the bench apps


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def psql(sql, timeout=1800):
    r = subprocess.run(["psql", URL, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"psql failed: {r.stderr.strip()[:800]}\nSQL: {sql[:300]}")
    return r.stdout.strip()


def psql_parallel(sqls, timeout=1800):
    procs = [subprocess.Popen(["psql", URL, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", s],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in sqls]
    outs = []
    for p, s in zip(procs, sqls):
        out, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise SystemExit(f"psql failed: {err.strip()[:800]}\nSQL: {s[:300]}")
        outs.append(out.strip())
    return outs


# ---------------------------------------------------------------- setup

def make_keys(n=256):
    """P-256 public keys (65-byte uncompressed) and their kids (R-DEV-3), via `cryptography`."""
    code = (
        "import base64,hashlib,sys\n"
        "from cryptography.hazmat.primitives.asymmetric import ec\n"
        "from cryptography.hazmat.primitives import serialization as s\n"
        f"for i in range({n}):\n"
        "  raw=ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(s.Encoding.X962,s.PublicFormat.UncompressedPoint)\n"
        "  kid=base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).decode().rstrip('=')[:16]\n"
        "  print(i, raw.hex(), kid)\n")
    out = subprocess.run([VENV_PY, "-c", code], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines()]
    values = ",".join(f"({i},'\\x{h}'::bytea,'{k}')" for i, h, k in rows)
    psql("DROP TABLE IF EXISTS bench_keys")
    psql("CREATE TABLE bench_keys (i int PRIMARY KEY, pub bytea NOT NULL, kid text NOT NULL)")
    psql(f"INSERT INTO bench_keys VALUES {values}")


def create_app(name, require_encryption):
    return psql(f"INSERT INTO push_apps (name, require_encryption) VALUES ('{name}', {str(require_encryption).lower()}) "
                "RETURNING id")


def register_sql(app, prefix, users, key_share, platforms=("ios", "android")):
    """One DO block registering `users` users with one device of each of `platforms` (an iOS and
    an Android device by default) through push_register_device; each device has a key with
    probability `key_share`."""
    acts = ",".join(f"'{p}'" for p in platforms)
    return f"""
DO $$
DECLARE u int; k int; act text; pub bytea; kid text;
BEGIN
  FOR u IN 0..{users - 1} LOOP
    FOREACH act IN ARRAY ARRAY[{acts}] LOOP
      k := floor(random() * 256)::int;
      SELECT b.pub, b.kid INTO pub, kid FROM bench_keys b WHERE b.i = k;
      PERFORM push_register_device('{app}', 'test', act,
          CASE WHEN act = 'ios' THEN md5('{prefix}i' || u) || md5('{prefix}j' || u) ELSE '{prefix}a' || u END,
          NULL, NULL, NULL, '{prefix}' || u, CASE WHEN act = 'ios' THEN 'production' END,
          CASE WHEN random() < {key_share} THEN 'set' ELSE 'keep' END, pub, kid, {APP_LIMIT}, 20);
    END LOOP;
    IF u % {COMMIT_EVERY} = {COMMIT_EVERY - 1} THEN COMMIT; END IF;
  END LOOP;
END $$"""


def age_registrations():
    """Devices registered a day ago, as an audience is in production: the worker's send-time
    targeting check searches the audience only for devices registered since a minute before the
    notification started (JobQueries.loadBatchDevices); registering them seconds before the run
    would measure that rare path for every device."""
    psql("UPDATE push_devices SET last_registered_at = last_registered_at - interval '1 day'")


def enqueue_single_sql(app, prefix, users, scheduled_share):
    """One DO block: one notification per user (push_enqueue), a share scheduled 2-5 s ahead."""
    return f"""
DO $$
DECLARE u int;
BEGIN
  FOR u IN 0..{users - 1} LOOP
    PERFORM push_enqueue('{app}', 'test', ARRAY['{prefix}' || u], NULL, 'Your order shipped',
        'Order ' || u || ' is on its way', '{{"order":"' || u || '"}}', 1, NULL, NULL, NULL, NULL,
        CASE WHEN random() < {scheduled_share} THEN clock_timestamp() + (2 + 3 * random()) * interval '1 second' END,
        NULL, NULL, NULL, NULL);
    IF u % {COMMIT_EVERY} = {COMMIT_EVERY - 1} THEN COMMIT; END IF;
  END LOOP;
END $$"""


def enqueue_broadcast_sql(app, prefix, users):
    """A broadcast to `users` users: push_enqueue takes at most 1,000 user ids per notification
    (R-LIM-1), so one notification per 1,000 users, in one statement; returns their ids, one a line."""
    return (f"SELECT (push_enqueue('{app}', 'test', "
            f"ARRAY(SELECT '{prefix}' || u FROM generate_series(g * 1000, least(g * 1000 + 999, {users - 1})) u), NULL, "
            "'Flash sale', 'Everything 20% off today', '{\"campaign\":\"spring\"}', NULL, NULL, NULL, NULL, NULL, NULL, "
            f"NULL, NULL, NULL, NULL)).notification_id FROM generate_series(0, {(users - 1) // 1000}) g")


def reset_queue():
    psql("TRUNCATE push_notifications, push_jobs, push_deliveries, push_ledger, push_events, push_sms_outbox")


# ---------------------------------------------------------------- workers

def anon_peak(time_pid, out):
    """Samples the worker under /usr/bin/time (`time_pid`'s child) every 5 ms until it exits and
    keeps its largest RssAnon (kB, /proc/PID/status): the memory it allocates (heap, stacks), apart
    from the file-backed pages of its binary and libraries that VmHWM (`%M`) counts too."""
    child = None
    while child is None:
        try:
            kids = open(f"/proc/{time_pid}/task/{time_pid}/children").read().split()
        except OSError:
            return
        child = kids[0] if kids else None
        if child is None:
            time.sleep(0.001)
    peak = 0
    while True:
        try:
            for line in open(f"/proc/{child}/status"):
                if line.startswith("RssAnon:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            break
        time.sleep(0.005)
    out.append(peak)


def run_workers(binary, count, label, extra=(), level="info", timeout=1800):
    """Starts `count` workers with --until-drained under /usr/bin/time; returns CPU, RSS (peak, and
    peak anonymous), wall, logs."""
    env = dict(os.environ, PUSHFLEET_LOG_LEVEL=level)
    procs, files, samplers, anon = [], [], [], []
    start = time.time()
    for i in range(count):
        tf, lf = f"{TMP}/{label}-{i}.time", f"{TMP}/{label}-{i}.log"
        err = open(lf, "w")
        procs.append(subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", tf, binary, "worker", "--until-drained",
                                       "--poll-interval", "0.2", *extra], env=env, stdout=subprocess.DEVNULL,
                                      stderr=err))
        samplers.append(threading.Thread(target=anon_peak, args=(procs[-1].pid, anon), daemon=True))
        samplers[-1].start()
        files.append((tf, lf, err))
    for p in procs:
        p.wait(timeout=timeout)
    for t in samplers:
        t.join(timeout=5)
    cpu, rss, logs = 0.0, 0, []
    for tf, lf, err in files:
        err.close()
        u, s, m = open(tf).read().split()[-3:]
        cpu += float(u) + float(s)
        rss = max(rss, int(m))
        logs.append(lf)
    return {"cpu_s": cpu, "rss_kb": rss, "anon_kb": max(anon, default=0), "start": start, "logs": logs}


BASELINE = {"cpu_s": 0.0, "pg_cpu_s": 0.0}
PG = {}


def pg():
    """The bench server's CPU meter (pgcpu.PGCPU), found once through its data directory."""
    if "cpu" not in PG:
        PG["cpu"] = pgcpu.PGCPU(pgcpu.postmaster_pid(psql("SHOW data_directory")))
    return PG["cpu"]


def run_measured(binary, count, label, extra=(), level="info"):
    """run_workers, with PostgreSQL's CPU over the same span (pg_cpu_s)."""
    with pgcpu.Span(pg()) as span:
        w = run_workers(binary, count, label, extra, level)
    w["pg_cpu_s"] = span.seconds
    return w


def measure_baseline(binary):
    """CPU of a worker that starts, finds the queue empty and exits (--until-drained): process start,
    connections, migrations check and the idle tail; and PostgreSQL's CPU meanwhile. Both are
    subtracted once per worker from each run."""
    reset_queue()
    runs = [run_measured(binary, 1, f"baseline-{i}") for i in range(3)]
    BASELINE["cpu_s"] = min(r["cpu_s"] for r in runs)
    BASELINE["pg_cpu_s"] = min(r["pg_cpu_s"] for r in runs)
    log(f"baseline worker CPU (start, empty queue, exit): {BASELINE['cpu_s'] * 1000:.0f} ms, "
        f"PostgreSQL meanwhile {BASELINE['pg_cpu_s'] * 1000:.0f} ms")


def delivery_stats(start, scope="true"):
    """Deliveries recorded since `start` by the run; `scope` (SQL over push_deliveries) leaves out
    rows the run did not make (bench --only history keeps earlier notifications' rows)."""
    row = psql("SELECT count(*), count(*) FILTER (WHERE encrypted), count(*) FILTER (WHERE status = 'sent'), "
               "count(*) FILTER (WHERE status = 'sent' AND NOT encrypted), "
               f"coalesce(extract(epoch FROM max(updated_at)), 0) FROM push_deliveries WHERE {scope}")
    total, enc, sent, plain_sent, last = row.split("|")
    pending = int(psql("SELECT count(*) FROM push_notifications WHERE finished_at IS NULL"))
    wall = max(float(last) - start, 1e-3)
    return {"recorded": int(total), "encrypted": int(enc), "sent": int(sent), "plain_sent": int(plain_sent),
            "wall": wall, "unfinished": pending}


def workload(binary, label, workers, enqueue_sqls, extra=(), level="info"):
    reset_queue()
    t = time.time()
    psql_parallel(enqueue_sqls)
    return drain(binary, label, workers, time.time() - t, extra, level)


def drain(binary, label, workers, enq, extra=(), level="info", scope="true", checkpoint=False):
    """Runs `workers` workers over what is queued until it is drained; returns the run's figures:
    worker and PostgreSQL CPU per delivery (each net of the empty-queue baseline), deliveries/s.
    `checkpoint`: a CHECKPOINT before the workers start, so that the drain does not pay for
    writing out what was loaded before it (the history's gigabytes: the checkpointer's writes and
    the full-page images of the first change to each page after a checkpoint)."""
    psql("VACUUM ANALYZE push_notifications, push_jobs, push_ledger")
    if checkpoint:
        psql("CHECKPOINT", timeout=1800)
    # A pure drain: every scheduled notification is due before the workers start.
    wait = float(psql("SELECT coalesce(extract(epoch FROM max(send_at) - clock_timestamp()), 0) FROM push_notifications"))
    if wait > 0:
        time.sleep(wait + 0.1)
    log(f"{label}: enqueued in {enq:.1f}s; {workers} worker(s)")
    w = run_measured(binary, workers, label, extra, level)
    d = delivery_stats(w["start"], scope)
    d.update(w)
    d["enqueue_s"] = enq
    d["cpu_us_per_delivery"] = max(w["cpu_s"] - BASELINE["cpu_s"] * workers, 0) * 1e6 / max(d["recorded"], 1)
    d["pg_us_per_delivery"] = max(w["pg_cpu_s"] - BASELINE["pg_cpu_s"] * workers, 0) * 1e6 / max(d["recorded"], 1)
    d["deliveries_per_s"] = d["sent"] / d["wall"]
    d["seals_per_s"] = d["encrypted"] / d["wall"]
    log(f"{label}: {d['recorded']} recorded ({d['encrypted']} encrypted, {d['sent']} sent) in {d['wall']:.1f}s, "
        f"{d['cpu_us_per_delivery']:.1f} us worker + {d['pg_us_per_delivery']:.1f} us PostgreSQL CPU/delivery, RSS {d['rss_kb'] / 1024:.1f} MB (anonymous {d['anon_kb'] / 1024:.1f}), unfinished {d['unfinished']}")
    return d

