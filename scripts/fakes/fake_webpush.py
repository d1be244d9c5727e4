#!/usr/bin/env python3
"""Local fake of a Web Push service (RFC 8030 + RFC 8291 + RFC 8292) for pushfleet tests.

HTTPS on 127.0.0.1 speaking HTTP/2 (ALPN h2) and HTTP/1.1. For each `POST /push/<scenario>-<id>`
it checks the VAPID header (`Authorization: vapid t=<JWT>, k=<key>`: ES256 signature by k,
aud = https://<authority>, exp in the future and at most 24 h ahead, sub mailto:/https:),
the RFC 8030 headers (TTL required; Urgency, Topic valid if present; Content-Encoding aes128gcm),
decrypts the body with the subscription's private key, appends one JSON line per request to the
log, and answers by scenario:

  ok-*        201 Created, Location: /m/<uuid>, TTL echoed
  gone-*      410 Gone                notfound-*  404 Not Found
  toolarge-*  413 Payload Too Large   slow-*      429 Too Many Requests, Retry-After: <n>
  err-*       503 Service Unavailable flaky-*     503 on the first request to the path, then as ok
  redirect-*  307 Temporary Redirect, Location: https://<authority>/push/ok-redirected (a client that
              follows it shows up in the log as a second request, to that path)
  bad VAPID   403 (401 when the header is missing); bad headers or undecryptable ok body: 400

Subcommands:
  serve --subscriptions FILE --log FILE (--cert-dir DIR | --cert PEM --key PEM) [--port 0]
        [--port-file FILE] [--retry-after 1] [--max-body 4096] [--origin https://host:port]
        prints one JSON line {"port":N,"ca":PATH} when ready; SIGTERM/SIGINT stop it.
  make-subscriptions --out FILE [--vapid-public-key B64] PATH...   (e.g. /push/ok-1)

Subscriptions file: {"subscriptions":[{"path","p256dh","auth","private_key"[,"vapid_public_key"]}]},
all keys base64url. Log lines: ts, protocol, method, path, scenario, status, reason, ttl, urgency,
topic, content_encoding, body_length, record_size, vapid {aud,exp,sub,k}, plaintext (UTF-8 text, or
plaintext_b64 when not UTF-8), decrypt_error.
"""
import argparse
import asyncio
import datetime
import json
import os
import re
import signal
import ssl
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webpush_codec as codec  # noqa: E402

import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.exceptions  # noqa: E402

SCENARIO_STATUS = {"gone": 410, "notfound": 404, "toolarge": 413, "slow": 429, "err": 503}
REASONS = {200: "OK", 201: "Created", 307: "Temporary Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 411: "Length Required",
           413: "Payload Too Large", 429: "Too Many Requests", 503: "Service Unavailable"}
URGENCIES = {"very-low", "low", "normal", "high"}
TOPIC_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")


class PushService:
    """Request handling shared by the HTTP/2 and HTTP/1.1 front ends."""

    def __init__(self, subscriptions, log_path, retry_after, max_body, origin):
        self.subscriptions = subscriptions
        self.log = open(log_path, "a", encoding="utf-8")
        self.retry_after = retry_after
        self.max_body = max_body
        self.origin = origin
        self.seen_paths = set()

    def handle(self, protocol, method, path, headers, body, authority):
        """Returns (status, [(name, value)], body bytes) and logs one line."""
        entry = {"ts": datetime.datetime.now(datetime.timezone.utc).isoformat(), "protocol": protocol,
                 "method": method, "path": path, "body_length": len(body),
                 "ttl": headers.get("ttl"), "urgency": headers.get("urgency"), "topic": headers.get("topic"),
                 "content_encoding": headers.get("content-encoding"), "vapid": None, "plaintext": None,
                 "decrypt_error": None, "record_size": None}
        status, extra, reason = self._decide(method, path, headers, body, authority, entry)
        entry["status"], entry["reason"] = status, reason
        self.log.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.log.flush()
        payload = b"" if status == 201 else json.dumps({"reason": reason}).encode()
        out = extra + ([("content-type", "application/json")] if payload else [])
        return status, out, payload

    def _decide(self, method, path, headers, body, authority, entry):
        if method == "GET" and path == "/_health":
            return 200, [], "ok"
        if method != "POST":
            return 405, [], "MethodNotAllowed"
        name = path[len("/push/"):] if path.startswith("/push/") else ""
        scenario = name.split("-", 1)[0] if "-" in name else ""
        entry["scenario"] = scenario
        sub = self.subscriptions.get(path)
        origin = self.origin or "https://" + re.sub(r":443$", "", authority or "")
        expected_key = codec.unb64u(sub["vapid_public_key"]) if sub and sub.get("vapid_public_key") else None
        try:
            entry["vapid"] = codec.verify_vapid(headers.get("authorization"), origin, expected_key=expected_key)
        except codec.VapidError as e:
            return e.status, [], e.reason
        bad = self._bad_headers(headers)
        if bad:
            return 400, [], bad
        if sub is not None:
            try:
                plain, entry["record_size"] = codec.decrypt(body, codec.unb64u(sub["private_key"]),
                                                            codec.unb64u(sub["auth"]))
                try:
                    entry["plaintext"] = plain.decode("utf-8")
                except UnicodeDecodeError:
                    entry["plaintext_b64"] = codec.b64u(plain)
            except codec.DecryptError as e:
                entry["decrypt_error"] = e.reason
        if scenario == "flaky":
            first = path not in self.seen_paths
            self.seen_paths.add(path)
            if first:
                return 503, [], "FlakyFirstAttempt"
            scenario = "ok"
        if scenario == "redirect":
            return 307, [("location", f"https://{authority}/push/ok-redirected")], "redirect"
        if scenario in SCENARIO_STATUS:
            status = SCENARIO_STATUS[scenario]
            extra = [("retry-after", str(self.retry_after))] if status == 429 else []
            return status, extra, scenario
        if scenario != "ok":
            return 404, [], "UnknownScenario"
        if len(body) > self.max_body:
            return 413, [], "PayloadTooLarge"
        if sub is None:
            return 404, [], "UnknownSubscription"
        if entry["decrypt_error"]:
            return 400, [], "DecryptionFailed:" + entry["decrypt_error"]
        return 201, [("location", "/m/" + uuid.uuid4().hex), ("ttl", headers["ttl"])], "created"

    @staticmethod
    def _bad_headers(headers):
        ttl = headers.get("ttl")
        if ttl is None or not ttl.isdigit():
            return "MissingOrBadTTL"
        if headers.get("content-encoding") != "aes128gcm":
            return "ContentEncodingNotAes128gcm"
        if "urgency" in headers and headers["urgency"] not in URGENCIES:
            return "BadUrgency"
        if "topic" in headers and not TOPIC_RE.fullmatch(headers["topic"]):
            return "BadTopic"
        return None


# MARK: - HTTP/2

async def serve_h2(service, reader, writer):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    writer.write(conn.data_to_send())
    streams = {}
    while True:
        data = await reader.read(65536)
        if not data:
            break
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            writer.write(conn.data_to_send())
            break
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                streams[event.stream_id] = (dict((k.lower(), v) for k, v in event.headers), bytearray())
            elif isinstance(event, h2.events.DataReceived):
                if event.stream_id in streams:
                    streams[event.stream_id][1].extend(event.data)
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id in streams:
                hdrs, body = streams.pop(event.stream_id)
                status, extra, payload = service.handle("h2", hdrs.get(":method"), hdrs.get(":path", ""), hdrs,
                                                        bytes(body), hdrs.get(":authority"))
                response = [(":status", str(status)), ("content-length", str(len(payload)))] + extra
                conn.send_headers(event.stream_id, response, end_stream=not payload)
                if payload:
                    conn.send_data(event.stream_id, payload, end_stream=True)
            elif isinstance(event, h2.events.StreamReset):
                streams.pop(event.stream_id, None)
            elif isinstance(event, h2.events.ConnectionTerminated):
                writer.write(conn.data_to_send())
                return
        writer.write(conn.data_to_send())
        await writer.drain()


# MARK: - HTTP/1.1

async def serve_h1(service, reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            return
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            return
        method, path, _version = parts
        headers = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                body.extend(chunk[:-2])
            body = bytes(body)
        else:
            body = await reader.readexactly(int(headers.get("content-length", "0")))
        status, extra, payload = service.handle("http/1.1", method, path, headers, body, headers.get("host"))
        head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"content-length: {len(payload)}"]
        head += [f"{k}: {v}" for k, v in extra]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()
        if headers.get("connection", "").lower() == "close":
            return


async def on_connection(service, reader, writer):
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
            await serve_h2(service, reader, writer)
        else:
            await serve_h1(service, reader, writer)
    except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, ValueError):
        pass
    finally:
        writer.close()


def load_subscriptions(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    items = data["subscriptions"] if isinstance(data, dict) else data
    return {item["path"]: item for item in items}


async def serve(args):
    if args.cert_dir:
        import webpush_certs
        ca, cert, key = webpush_certs.make_certs(args.cert_dir)
    else:
        ca, cert, key = args.ca, args.cert, args.key
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2", "http/1.1"])
    service = PushService(load_subscriptions(args.subscriptions), args.log, args.retry_after, args.max_body, args.origin)
    server = await asyncio.start_server(lambda r, w: on_connection(service, r, w), args.host, args.port, ssl=context)
    port = server.sockets[0].getsockname()[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    print(json.dumps({"port": port, "ca": ca}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--subscriptions", required=True)
    s.add_argument("--log", required=True)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--port-file")
    s.add_argument("--cert-dir", help="generate a CA and leaf here (ca.pem, server.pem, server.key)")
    s.add_argument("--cert")
    s.add_argument("--key")
    s.add_argument("--ca", help="CA file to report when --cert/--key are given")
    s.add_argument("--retry-after", type=int, default=1)
    s.add_argument("--max-body", type=int, default=4096)
    s.add_argument("--origin", help="expected VAPID aud (default https://<authority of the request>)")
    m = sub.add_parser("make-subscriptions")
    m.add_argument("--out", required=True)
    m.add_argument("--vapid-public-key")
    m.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if args.command == "make-subscriptions":
        subs = [codec.new_subscription(p, args.vapid_public_key) for p in args.paths]
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"subscriptions": subs}, f, indent=1)
        return
    if not args.cert_dir and not (args.cert and args.key):
        parser.error("serve needs --cert-dir or --cert and --key")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
