"""The provider-client part of scripts/bench (issue 18; docs/bench.md "Provider clients").

Worker CPU per request of APNsClient and FCMClient at batch sizes 1, 100 and 500, against the
project's fakes (scripts/fakes, which answer a read's streams together, as a provider's front end
does), in one run, for three clients:
  - "cur": the product client, NGHTTP2Client (`pushfleet bench apns|fcm --transport nghttp2`);
  - "curl": the libcurl client of the same binary (`--transport libcurl`, the fallback and Web Push's);
  - "base": the APNs client of the baseline commit (issue 18's starting point, libcurl before any of
    issue 18's changes, built by scripts/bench into .build-baseline), for the ratios "now / then"
    (that commit has no FCM bench);
and a perf profile (shared object shares) of each at batch 100.
Rounds are interleaved (nghttp2, libcurl, baseline, FCM nghttp2, FCM libcurl, then again) so that
the machine's load, shared with other jobs here, spreads over all of them; each figure is the median
round. Every run checks that every request was answered 200 and that the fake logged exactly the
pushes sent, so no answer is dropped or doubled unseen.
"""
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
TEAM, KEY, TOPIC = "TEAM123456", "KEY1234567", "com.example.bench"
EMAIL, PROJECT = "bench@example.iam.gserviceaccount.com", "bench-project"
SIZES = (1, 100, 500)


class Fake:
    """One fake provider process on 127.0.0.1 with a JSONL log."""

    def __init__(self, tmp, kind):
        self.tmp, self.kind = tmp, kind
        d = f"{tmp}/fakes"
        self.port_file, self.log = f"{d}/{kind}.port", f"{d}/{kind}.jsonl"
        for f in (self.port_file, self.log):
            if os.path.exists(f):
                os.remove(f)
        common = ["--cert", f"{d}/server.pem", "--key", f"{d}/server.key", "--port-file", self.port_file, "--log", self.log]
        if kind == "apns":
            args = [f"{REPO}/scripts/fakes/fake_apns.py", "--public-key", f"{d}/apns_pub.pem", "--team-id", TEAM,
                    "--key-id", KEY, "--topic", TOPIC]
        else:
            args = [f"{REPO}/scripts/fakes/fake_fcm.py", "--sa-public-key", f"{d}/sa_pub.pem", "--client-email", EMAIL,
                    "--project-id", PROJECT]
        self.proc = subprocess.Popen([VENV_PY] + args + common, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline and not (os.path.exists(self.port_file) and open(self.port_file).read().strip()):
            time.sleep(0.1)
        self.port = open(self.port_file).read().strip()
        self.url = f"https://127.0.0.1:{self.port}"

    def pushes(self):
        return sum(1 for line in open(self.log) if '"kind":"push"' in line)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def run_json(cmd, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {r.stderr.strip()[:500]}")
    return json.loads(r.stdout)


def current(binary, kind, fake, tmp, count, perf_out=None, sizes=SIZES, transport="nghttp2"):
    d = f"{tmp}/fakes"
    if kind == "apns":
        args = ["apns", "--url", fake.url, "--ca-file", f"{d}/ca.pem", "--key-file", f"{d}/apns_key.p8",
                "--team-id", TEAM, "--key-id", KEY, "--topic", TOPIC]
    else:
        args = ["fcm", "--url", fake.url, "--ca-file", f"{d}/ca.pem", "--sa-key-file", f"{d}/sa_key.pem",
                "--client-email", EMAIL, "--project-id", PROJECT]
    cmd = [binary, "bench"] + args + ["--batch-sizes", ",".join(map(str, sizes)), "--rounds", "1",
                                       "--count", str(count), "--transport", transport, "--json"]
    if perf_out:
        cmd = ["perf", "record", "-q", "-F", "2000", "-o", perf_out, "--"] + cmd
    before = fake.pushes()
    j = run_json(cmd)
    if j.get("transport") != transport:
        raise SystemExit(f"bench {kind}: asked for {transport}, the binary ran {j.get('transport')}")
    out = {s: float(j[f"{s}_cpu_us"]) for s in sizes}
    for s in sizes:
        if j[f"{s}_ok"] != j[f"{s}_requests"]:
            raise SystemExit(f"bench {kind}: batch {s}: {j[f'{s}_ok']} of {j[f'{s}_requests']} answered 200")
    logged = fake.pushes() - before
    if logged != int(j["requests_total"]):
        raise SystemExit(f"bench {kind}: the fake logged {logged} pushes for {j['requests_total']} requests sent")
    return out


def baseline(binary, fake, tmp, count, batch, perf_out=None):
    """The baseline commit's `bench apns` (multiplexed at `batch`, then one at a time)."""
    d = f"{tmp}/fakes"
    cmd = [binary, "bench", "apns", "--url", fake.url, "--ca-file", f"{d}/ca.pem", "--key-file", f"{d}/apns_key.p8",
           "--team-id", TEAM, "--key-id", KEY, "--topic", TOPIC, "--count", str(count), "--batch-size", str(batch),
           "--json"]
    if perf_out:
        cmd = ["perf", "record", "-q", "-F", "2000", "-o", perf_out, "--"] + cmd
    j = run_json(cmd)
    if j["multiplexed_ok"] != j["requests"] or j["sequential_ok"] != j["requests"]:
        raise SystemExit(f"baseline bench apns: not every request answered 200: {j}")
    return float(j["multiplexed_cpu_us"]), float(j["sequential_cpu_us"])


def perf_dsos(data, top=8):
    """The shared objects' shares of a perf profile: [(share %, object)]."""
    r = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso", "-g", "none", "--stdio", "-q"],
                       capture_output=True, text=True, timeout=300)
    rows = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith("%"):
            rows.append((float(parts[0][:-1]), parts[1]))
    return rows[:top]


def run(binary, tmp, log, rounds=5, count=2000, baseline_binary=None, perf=True):
    """Every provider figure; see the module doc."""
    apns, fcm = Fake(tmp, "apns"), Fake(tmp, "fcm")
    keys = ("cur", "curl", "base", "fcm", "fcmcurl")
    res = {"rounds": rounds, "count": count, "perf": {}}
    res.update({k: {s: [] for s in SIZES} for k in keys})
    try:
        for r in range(rounds):
            log(f"provider clients, round {r + 1} of {rounds}")
            for s, v in current(binary, "apns", apns, tmp, count).items():
                res["cur"][s].append(v)
            for s, v in current(binary, "apns", apns, tmp, count, transport="libcurl").items():
                res["curl"][s].append(v)
            if baseline_binary:
                for batch in (100, 500):
                    mux, seq = baseline(baseline_binary, apns, tmp, count, batch)
                    res["base"][batch].append(mux)
                    res["base"][1].append(seq)
            for s, v in current(binary, "fcm", fcm, tmp, count).items():
                res["fcm"][s].append(v)
            for s, v in current(binary, "fcm", fcm, tmp, count, transport="libcurl").items():
                res["fcmcurl"][s].append(v)
        if perf:
            runs = [("nghttp2", lambda p: current(binary, "apns", apns, tmp, 10 * count, p, sizes=(100,))),
                    ("libcurl", lambda p: current(binary, "apns", apns, tmp, 10 * count, p, sizes=(100,),
                                                  transport="libcurl"))]
            if baseline_binary:
                runs.append(("baseline", lambda p: baseline(baseline_binary, apns, tmp, 4 * count, 100, p)))
            for name, fn in runs:
                data = f"{tmp}/perf-{name}.data"
                fn(data)
                res["perf"][name] = perf_dsos(data)
    finally:
        apns.stop()
        fcm.stop()
    res["median"] = {k: {s: (statistics.median(v) if v else float("nan")) for s, v in res[k].items()} for k in keys}
    return res


def rows(res):
    """Table rows (figure, measured, target, verdict) of `run`'s result."""
    m = res["median"]
    cur, curl, base = m["cur"], m["curl"], m["base"]
    have_base = bool(res["base"][1])
    out = []
    for s in SIZES:
        target, ok = "-", ""
        if s >= 100:
            target, ok = "≤ 40", ("PASS" if cur[s] <= 40 else "MISS")
        out.append((f"APNs client CPU per request, batch {s}, fake APNs, nghttp2 (µs)", f"{cur[s]:.1f}", target, ok))
    if have_base:
        for s in SIZES:
            ratio = cur[s] / base[s]
            target, ok = ("≤ 0.6x", "PASS" if ratio <= 0.6 else "MISS") if s == 1 else ("-", "")
            out.append((f"  baseline client (issue 18's start) at batch {s} (µs), nghttp2 now / then",
                        f"{base[s]:.1f}, {ratio:.2f}x", target, ok))
    out.append(("  libcurl client (fallback), batch 1 / 100 / 500 (µs)", " / ".join(f"{curl[s]:.1f}" for s in SIZES),
                "-", ""))
    if have_base:
        out.append(("  libcurl client now / then, batch 1 / 100 / 500",
                    " / ".join(f"{curl[s] / base[s]:.2f}x" for s in SIZES), "-", ""))
    out.append(("FCM client CPU per request, batch 1 / 100 / 500, fake FCM, nghttp2 (µs)",
                " / ".join(f"{m['fcm'][s]:.1f}" for s in SIZES), "-", ""))
    out.append(("  FCM over libcurl, batch 1 / 100 / 500 (µs)", " / ".join(f"{m['fcmcurl'][s]:.1f}" for s in SIZES),
                "-", ""))
    return out


def markdown(res, cmdline):
    """The provider part of docs/bench-results.md (or the whole file with --only providers)."""
    lines = [f"Provider clients: {res['rounds']} interleaved rounds of {res['count']:,} requests per batch size "
             f"(batch 1: {max(200, res['count'] // 4):,}); medians; load average at the end "
             f"{os.getloadavg()[0]:.2f}; command `{cmdline}`.", "",
             "| Figure | Measured | Target | |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows(res)]
    names = {"cur": "nghttp2", "curl": "libcurl", "base": "baseline", "fcm": "fcm nghttp2", "fcmcurl": "fcm libcurl"}
    lines += ["", "Every round: " + "; ".join(
        f"{names[k]} " + ", ".join(f"batch {s}: " + "/".join(f"{v:.0f}" for v in res[k][s]) for s in SIZES)
        for k in names if res[k][1]) + " (µs)."]
    for name, dsos in res["perf"].items():
        what = "batch 100" if name != "baseline" else "batch 100 then one at a time (that client's bench runs both)"
        lines.append(f"- perf, {name} client, {what}: " + ", ".join(f"{d} {p:.1f}%" for p, d in dsos))
    return "\n".join(lines) + "\n"
