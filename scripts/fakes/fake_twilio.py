"""Fake Twilio Programmable Messaging API (tests only): HTTP/1.1 over TLS on 127.0.0.1, as Twilio's
"Messages resource" (Create a Message) and "API keys" pages describe it. Python standard library only.

POST /2010-04-01/Accounts/<AccountSid>/Messages.json
  Basic auth: (--account-sid, --auth-token) or (--api-key-sid, --api-key-secret), else 401 code 20003;
  the URL's account must be --account-sid, else 404 code 20404; content-type must be
  application/x-www-form-urlencoded and the body a strict form with To, Body and exactly one of From /
  MessagingServiceSid, each once (else 400: 21604 To, 21602 Body, 21603 From, 21606 both).
Scenario by To (Twilio's magic test numbers, then this fake's own):
  +15005550001 -> 400 code 21211 (invalid number)      +15005550002 -> 400 code 21612 (cannot route)
  +19990000429 -> 429 code 20429, Retry-After --retry-after, the first --fail-times requests for that To; then 201
  +19990000503 -> 503 code 20503, Retry-After --retry-after, likewise
  +19990000500 -> 500 code 20500 (every time)
  +19990000408 -> reads the whole request, never answers (the client times out)
  +19990000499 -> reads the whole request, closes the connection without an answer
  anything else -> 201 {"sid":"SM<32 hex>","status":"queued"|"accepted",...}
Log (JSONL): {"kind":"connection","n"} per accepted connection; {"kind":"request","n","conn","method","path",
"auth_user","auth_ok","content_type","form":{name:[values]}} per request read in full (before any
scenario); {"kind":"message","sid","to","from","messaging_service_sid","body","auth_user"} per 201.
"""
import argparse
import base64
import http.server
import json
import os
import re
import secrets
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

PATH = re.compile(r"^/2010-04-01/Accounts/([^/]+)/Messages\.json$")


class Log:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, obj):
        if not self.path:
            return
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(obj, separators=(",", ":")) + "\n")


class State:
    def __init__(self, args, log):
        self.args = args
        self.log = log
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.failures = {}   # To -> scripted failures answered so far

    def next(self, field):
        with self.lock:
            setattr(self, field, getattr(self, field) + 1)
            return getattr(self, field)

    def should_fail(self, to):
        with self.lock:
            n = self.failures.get(to, 0)
            if n < self.args.fail_times:
                self.failures[to] = n + 1
                return True
            return False


def twilio_error(status, code, message):
    return status, {"code": code, "message": message,
                    "more_info": "https://www.twilio.com/docs/errors/%d" % code, "status": status}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-twilio"

    def setup(self):
        super().setup()
        self.conn_id = self.server.state.next("connections")
        self.server.state.log.write({"kind": "connection", "n": self.conn_id})

    def log_message(self, *args):
        pass

    def answer(self, status, obj, headers=()):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(*twilio_error(405, 20004, "Method not allowed"))

    def do_POST(self):
        state, args = self.server.state, self.server.state.args
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        auth_user, auth_ok = None, False
        header = self.headers.get("authorization", "")
        if header.startswith("Basic "):
            try:
                user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
                auth_user = user
                auth_ok = (user, password) in {(args.account_sid, args.auth_token),
                                               (args.api_key_sid, args.api_key_secret)} and password != ""
            except (ValueError, UnicodeDecodeError):
                pass
        ctype = self.headers.get("content-type", "")
        try:
            pairs = urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(raw))
        except (ValueError, UnicodeDecodeError):
            pairs = None
        form = {}
        for k, v in pairs or []:
            form.setdefault(k, []).append(v)
        n = state.next("requests")
        state.log.write({"kind": "request", "n": n, "conn": self.conn_id, "method": "POST", "path": self.path,
                         "auth_user": auth_user, "auth_ok": auth_ok, "content_type": ctype, "form": form})
        m = PATH.match(self.path)
        if not m:
            return self.answer(*twilio_error(404, 20404, "The requested resource was not found"))
        if not auth_ok:
            return self.answer(*twilio_error(401, 20003, "Authenticate"))
        if m.group(1) != args.account_sid:
            return self.answer(*twilio_error(404, 20404, "The requested resource was not found"))
        if ctype.split(";")[0].strip().lower() != "application/x-www-form-urlencoded" or pairs is None:
            return self.answer(*twilio_error(400, 20001, "Request body is not a form"))
        once = lambda name: form.get(name, [None])[0] if len(form.get(name, [])) == 1 else None
        to, body, sender, service = once("To"), once("Body"), once("From"), once("MessagingServiceSid")
        if not to:
            return self.answer(*twilio_error(400, 21604, "A 'To' phone number is required."))
        if not body:
            return self.answer(*twilio_error(400, 21602, "Message body is required."))
        if bool(sender) == bool(service):
            code = 21606 if sender else 21603
            return self.answer(*twilio_error(400, code, "Exactly one of From and MessagingServiceSid is required."))
        if to == "+15005550001":
            return self.answer(*twilio_error(400, 21211, "The 'To' number %s is not a valid phone number." % to))
        if to == "+15005550002":
            return self.answer(*twilio_error(400, 21612, "The 'To' phone number: %s, is not currently reachable" % to))
        if to == "+19990000429" and state.should_fail(to):
            return self.answer(*twilio_error(429, 20429, "Too Many Requests"),
                               headers=[("retry-after", str(args.retry_after))])
        if to == "+19990000503" and state.should_fail(to):
            return self.answer(*twilio_error(503, 20503, "Service Unavailable"),
                               headers=[("retry-after", str(args.retry_after))])
        if to == "+19990000500":
            return self.answer(*twilio_error(500, 20500, "Internal Server Error"))
        if to == "+19990000408":
            time.sleep(3600)
            return
        if to == "+19990000499":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        sid = "SM" + secrets.token_hex(16)
        state.log.write({"kind": "message", "sid": sid, "to": to, "from": sender, "messaging_service_sid": service,
                         "body": body, "auth_user": auth_user})
        self.answer(201, {"sid": sid, "account_sid": args.account_sid, "to": to, "from": sender,
                          "messaging_service_sid": service, "body": body,
                          "status": "accepted" if service else "queued", "num_segments": "1",
                          "direction": "outbound-api", "api_version": "2010-04-01", "error_code": None,
                          "error_message": None})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    p = argparse.ArgumentParser(description="Fake Twilio Messages API (HTTP/1.1 + TLS)")
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--log")
    p.add_argument("--account-sid", required=True)
    p.add_argument("--auth-token", required=True)
    p.add_argument("--api-key-sid", default="")
    p.add_argument("--api-key-secret", default="")
    p.add_argument("--fail-times", type=int, default=1, help="scripted 429/503 answers per To before a 201")
    p.add_argument("--retry-after", type=int, default=1, help="Retry-After of the scripted 429/503 answers")
    args = p.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["http/1.1"])
    server = Server(("127.0.0.1", args.port), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    server.state = State(args, Log(args.log))
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print("PORT %d" % port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
