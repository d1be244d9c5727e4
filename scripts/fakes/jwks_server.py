#!/usr/bin/env python3
"""An authorization server's JWKS endpoint for pushfleet's OAuth tests: HTTPS (TLS 1.2+) on
127.0.0.1, `GET /jwks.json` answers the current contents of `--file` (re-read per request, so a
test rotates the keys by rewriting it) as application/json; anything else is 404. One JSON line per
request is appended to the log (path, status, at).

  jwks_server.py --file JWKS.json --cert PEM --key PEM --log FILE [--port 0] [--port-file FILE]
  SIGTERM/SIGINT stop it.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    args = ap.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            status, body = 404, b'{"error":"not found"}'
            if self.path == "/jwks.json":
                try:
                    with open(args.file, "rb") as f:
                        status, body = 200, f.read()
                except OSError:
                    status, body = 500, b'{"error":"unreadable"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            with lock, open(args.log, "a") as log:
                log.write(json.dumps({"path": self.path, "status": status, "at": time.time()}) + "\n")

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
