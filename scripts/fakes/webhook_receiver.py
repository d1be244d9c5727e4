#!/usr/bin/env python3
"""A webhook receiver for pushfleet tests and the demo, verifying Standard Webhooks signatures with
the `standardwebhooks` package from PyPI (the receivers' reference library, not pushfleet's code).

HTTP/1.1 (keep-alive) on 127.0.0.1. Each `POST /hooks/<name>` is checked against every secret
listed in `<secrets-dir>/<name>.secrets` (one `whsec_...` per line, re-read per request):
`Webhook(secret).verify(body, headers)` for each, and, with the first secret that verifies, two
tampered copies that must be refused (the body with one byte changed, the timestamp moved by one
second). It then answers by the plan in `<secrets-dir>/<name>.plan` (optional; re-read per request):
comma-separated answers used one per request to that name, in order, the last one repeated:
a status code (`500`, `410`, `200`...), `hang` (answer nothing, hold the connection until the
server stops or 60 s pass), `redirect` (307 to `/hooks/<name>-redirected`, which a client must not
follow) or `endless` (200 with a chunked body that never ends: 1 KiB chunks until the client
closes the connection, the server stops or 60 s pass; then a line named `<name>#stream` logs
`streamed`, the bytes written). Without a plan every request gets 200.

One JSON line per request is appended to the log: name, webhook_id, timestamp, verified (one bool
per secret, in file order), tampered_body_refused, tampered_timestamp_refused, status, type,
event_id (the body's id), received_at (Unix seconds, float).

  webhook_receiver.py --secrets-dir DIR --log FILE [--port 0] [--port-file FILE] [--cert PEM --key PEM]
                      [--delay-ms N]   (wait N ms before every answer: keeps requests in flight)
  prints {"port": N} when ready; SIGTERM/SIGINT stop it. With --cert/--key it speaks HTTPS (TLS 1.2+).
"""
import argparse
import json
import os
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

STOP = threading.Event()


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def refused(secret, body, headers):
    try:
        Webhook(secret).verify(body, headers)
        return False
    except WebhookVerificationError:
        return True


class Receiver(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, secrets_dir, log_path, delay):
        super().__init__(address, Handler)
        self.delay = delay
        self.secrets_dir = secrets_dir
        self.log_path = log_path
        self.lock = threading.Lock()
        self.counts = {}

    def next_answer(self, name):
        plan = ",".join(read_lines(os.path.join(self.secrets_dir, name + ".plan")))
        steps = [s.strip() for s in plan.split(",") if s.strip()] or ["200"]
        with self.lock:
            n = self.counts.get(name, 0)
            self.counts[name] = n + 1
        return steps[min(n, len(steps) - 1)]

    def record(self, entry):
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        name = self.path.rstrip("/").split("/")[-1]
        headers = {k.lower(): v for k, v in self.headers.items()}
        secrets = read_lines(os.path.join(server.secrets_dir, name + ".secrets"))
        verified = []
        for secret in secrets:
            try:
                Webhook(secret).verify(body, headers)
                verified.append(True)
            except WebhookVerificationError:
                verified.append(False)
        body_refused = ts_refused = None
        good = next((s for s, ok in zip(secrets, verified) if ok), None)
        if good is not None:
            tampered = bytearray(body)
            tampered[len(tampered) // 2] ^= 0x01
            body_refused = refused(good, bytes(tampered), headers)
            moved = dict(headers)
            moved["webhook-timestamp"] = str(int(headers.get("webhook-timestamp", "0")) + 1)
            ts_refused = refused(good, body, moved)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = {}
        answer = server.next_answer(name)
        entry = {"name": name, "webhook_id": headers.get("webhook-id"), "timestamp": headers.get("webhook-timestamp"),
                 "signature": headers.get("webhook-signature"), "verified": verified,
                 "tampered_body_refused": body_refused, "tampered_timestamp_refused": ts_refused,
                 "status": None if answer == "hang" else {"endless": 200, "redirect": 307}.get(answer) or int(answer),
                 "type": parsed.get("type"),
                 "event_id": parsed.get("id"), "data": parsed.get("data"), "received_at": time.time()}
        server.record(entry)
        if answer == "hang":
            STOP.wait(60)
            self.close_connection = True
            return
        if answer == "endless":
            self.stream_forever(name)
            return
        if answer == "redirect":
            self.send_response(307)
            self.send_header("location", "/hooks/%s-redirected" % name)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if server.delay:
            time.sleep(server.delay)
        reply = b'{"ok":true}'
        self.send_response(int(answer))
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def stream_forever(self, name):
        self.close_connection = True
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
        written, end = 0, time.time() + 60
        try:
            while not STOP.is_set() and time.time() < end:
                self.wfile.write(chunk)
                self.wfile.flush()
                written += 1024
                time.sleep(0.001)
        except OSError:
            pass   # the client stopped reading and closed
        self.server.record({"name": name + "#stream", "streamed": written, "received_at": time.time()})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--secrets-dir", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--delay-ms", type=int, default=0)
    args = p.parse_args()
    server = Receiver(("127.0.0.1", args.port), args.secrets_dir, args.log, args.delay_ms / 1000.0)
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]

    def stop(*_):
        STOP.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print(json.dumps({"port": port}), flush=True)
    server.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
