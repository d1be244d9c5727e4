"""Fake APNs provider API (tests only): HTTP/2 over TLS on 127.0.0.1, as Apple's
"Sending notification requests to APNs" and "Handling notification responses from APNs" describe it.

Checks what APNs checks for token auth: `authorization: bearer <JWT>` signed ES256 (raw 64-byte r||s,
a DER signature is refused) with --public-key, `kid` = --key-id, `iss` = --team-id, `iat` not older than
--max-token-age seconds; `apns-topic` = --topic (else 400 TopicDisallowed); `apns-push-type`;
`apns-priority` in 10/5/1; numeric `apns-expiration`; `apns-collapse-id` <= 64 bytes; lower-case UUID
`apns-id`; body 1..4096 bytes (413 PayloadTooLarge above).
The payload must match its push type and priority (R-KIND-1, R-KIND-2): a `background` push needs
`apns-priority: 5` (10 is an error for Apple too: 400 BadPriority) and an `aps` of exactly
{"content-available": 1}; in any push, `interruption-level` is passive / active / time-sensitive /
critical, `relevance-score` a number from 0 to 1, `category` and `target-content-id` strings,
`sound` a string or the critical dictionary {"critical": 1, "name": str[, "volume": 0..1]}, which
`interruption-level: critical` needs, and `mutable-content: 1` needs an `alert`. A payload that
breaks one of these is answered 400 {"reason": "FakeBadPayload", "detail": ...}: the fake's own
reason (Apple documents none for a mismatched payload, only that it may be dropped), logged as
{"kind":"bad_payload","detail":..}.
As APNs with token auth ("Sending notification requests to APNs"), a new connection allows one stream (--initial-streams, default 1) until
a request with a valid token has been seen, then --max-streams (default 1000) through a new SETTINGS
frame; streams beyond the advertised limit get RST_STREAM REFUSED_STREAM. A token's signature is
verified once (the first time its exact text is seen); its age is checked on every request.

Scenario by device-token prefix (the token in /3/device/<token>):
  unregistered -> 410 Unregistered + timestamp 1700000000000   baddevice   -> 400 BadDeviceToken
  notfortopic  -> 400 DeviceTokenNotForTopic                     toomany     -> 429 TooManyRequests, retry-after: 7
  fail500      -> 500 InternalServerError                        unavailable -> 503 ServiceUnavailable
  hang         -> never answers (logged {"kind":"hang","apns_id"})  garbage  -> 500 with an HTML body
  toolarge     -> 413 PayloadTooLarge (whatever the size)
  truncated    -> 400 with a cut JSON body                       empty       -> 503 with an empty body
  reset        -> RST_STREAM (INTERNAL_ERROR)                    huge        -> 500 with a 200 KiB body
  goaway       -> GOAWAY (Shutdown) without answering, then close drop -> TCP close without answering
  rst          -> TCP RST 50 ms later, unanswered             freeze      -> the connection stops answering
  slow         -> 200 after 150 ms                              drain       -> graceful GOAWAY (last stream = this
                  one), then 200; streams below it are still answered, those above are not processed
anything else -> 200 with the apns-id. Every 200 is appended to --log as
{"kind":"push","conn":n,"apns_id":..,"token":..,"topic":..,"priority":..,"expiration":..,
 "collapse_id":..,"iat":..,"jwt_sig":<first 16 chars of the signature>,"jwt":<the whole JWT>,"payload":<body text>}.
Every refused provider token (403) as {"kind":"jwt_refused","conn":n,"reason":..,"token":..,"jwt":<the JWT or null>}.
With --expired-barrier N the first ExpiredProviderToken answers wait until N connections have sent an
expired token (at most --expired-barrier-timeout seconds), so N clients (worker processes) are
certain to have sent the same expired JWT before any of them learns it is expired.
"""
import asyncio
import base64
import json
import re
import time
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

import h2server
from h2server import Response

PUSH_TYPES = {"alert", "background", "location", "voip", "complication", "fileprovider", "mdm",
              "liveactivity", "pushtotalk", "widgets"}
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def reason(status, why, headers=None, **extra):
    return Response.json(status, dict({"reason": why}, **extra), headers)


INTERRUPTION_LEVELS = {"passive", "active", "time-sensitive", "critical"}


def unit_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def payload_problem(body, push_type, priority):
    """What makes `body` wrong for its push type and priority (R-KIND-1/2), or None."""
    try:
        payload = json.loads(body)
    except ValueError:
        return "not JSON"
    aps = payload.get("aps") if isinstance(payload, dict) else None
    if not isinstance(aps, dict):
        return "no aps object"
    if push_type == "background":
        if priority != "5":
            return "priority"  # answered BadPriority, as Apple does
        if aps != {"content-available": 1}:
            return "a background push's aps must be exactly {\"content-available\": 1}"
        return None
    level = aps.get("interruption-level")
    if level is not None and level not in INTERRUPTION_LEVELS:
        return "interruption-level"
    if "relevance-score" in aps and not unit_number(aps["relevance-score"]):
        return "relevance-score"
    for key in ("category", "target-content-id", "thread-id"):
        if key in aps and not isinstance(aps[key], str):
            return key
    sound = aps.get("sound")
    if isinstance(sound, dict):
        if sound.get("critical") != 1 or not isinstance(sound.get("name"), str) or \
                ("volume" in sound and not unit_number(sound["volume"])) or set(sound) - {"critical", "name", "volume"}:
            return "sound dictionary"
    elif sound is not None and not isinstance(sound, str):
        return "sound"
    if level == "critical" and not isinstance(sound, dict):
        return "interruption-level critical without the critical sound dictionary"
    if aps.get("mutable-content") == 1 and not aps.get("alert"):
        return "mutable-content without an alert"
    return None


class FakeAPNs:
    def __init__(self, args, log):
        with open(args.public_key, "rb") as f:
            self.public_key = serialization.load_pem_public_key(f.read())
        self.args = args
        self.log = log
        self.verified = {}  # token text -> (iat, signature prefix), for tokens whose signature checked out
        self.expired_conns = set()
        self.barrier = None  # asyncio.Event, made inside the running loop

    async def expired_barrier(self, conn_id):
        """Holds an ExpiredProviderToken answer until --expired-barrier connections sent one (or the timeout)."""
        if self.args.expired_barrier <= 1:
            return
        if self.barrier is None:
            self.barrier = asyncio.Event()
        self.expired_conns.add(conn_id)
        if len(self.expired_conns) >= self.args.expired_barrier:
            self.barrier.set()
        try:
            await asyncio.wait_for(self.barrier.wait(), self.args.expired_barrier_timeout)
        except asyncio.TimeoutError:
            self.barrier.set()  # give up waiting: later answers go out at once

    def check_jwt(self, authorization):
        """Returns (error Response or None, iat, signature prefix)."""
        if not authorization:
            return reason(403, "MissingProviderToken"), None, None
        if not authorization.startswith("bearer "):
            return reason(403, "InvalidProviderToken"), None, None
        token = authorization[len("bearer "):]
        known = self.verified.get(token)
        if known is not None:
            return self.check_age(*known)
        try:
            h64, c64, s64 = token.split(".")
            header, claims, sig = json.loads(b64url_decode(h64)), json.loads(b64url_decode(c64)), b64url_decode(s64)
            if header.get("alg") != "ES256" or header.get("kid") != self.args.key_id:
                return reason(403, "InvalidProviderToken"), None, None
            if claims.get("iss") != self.args.team_id or not isinstance(claims.get("iat"), int):
                return reason(403, "InvalidProviderToken"), None, None
            if len(sig) != 64:  # a DER signature is refused, as by APNs
                return reason(403, "InvalidProviderToken"), None, None
            der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
            self.public_key.verify(der, (h64 + "." + c64).encode(), ec.ECDSA(hashes.SHA256()))
        except (ValueError, InvalidSignature, TypeError, AttributeError):
            return reason(403, "InvalidProviderToken"), None, None
        if len(self.verified) > 10000:
            self.verified.clear()
        self.verified[token] = (claims["iat"], s64[:16])
        return self.check_age(claims["iat"], s64[:16])

    def check_age(self, iat, sig):
        now = time.time()
        if iat > now + 60:
            return reason(403, "InvalidProviderToken"), None, None
        if now - iat > self.args.max_token_age:
            return reason(403, "ExpiredProviderToken"), None, None
        return None, iat, sig

    async def handle(self, req):
        if req.method != "POST":
            return reason(405, "MethodNotAllowed")
        m = re.match(r"^/3/device/([^/]*)$", req.path)
        if not m:
            return reason(404, "BadPath")
        token = m.group(1)
        if not token:
            return reason(400, "MissingDeviceToken")
        for name in ("authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-id"):
            if req.count(name) > 1:
                return reason(400, "DuplicateHeaders")
        authorization = req.headers.get("authorization") or ""
        error, iat, sig = self.check_jwt(authorization)
        if error:
            why = json.loads(error.body)["reason"]
            jwt = authorization[len("bearer "):] if authorization.startswith("bearer ") else None
            self.log.write({"kind": "jwt_refused", "conn": req.conn_id, "reason": why, "token": token, "jwt": jwt})
            if why == "ExpiredProviderToken":
                await self.expired_barrier(req.conn_id)
            return error
        req.protocol.raise_stream_limit()  # more streams once a valid token was seen
        h = req.headers
        topic = h.get("apns-topic")
        if not topic:
            return reason(400, "MissingTopic")
        if topic != self.args.topic:
            return reason(400, "TopicDisallowed")
        if h.get("apns-push-type", "alert") not in PUSH_TYPES:
            return reason(400, "InvalidPushType")
        if h.get("apns-priority", "10") not in ("10", "5", "1"):
            return reason(400, "BadPriority")
        if not re.match(r"^\d+$", h.get("apns-expiration", "0")):
            return reason(400, "BadExpirationDate")
        if len(h.get("apns-collapse-id", "").encode()) > 64:
            return reason(400, "BadCollapseId")
        apns_id = h.get("apns-id") or str(uuid.uuid4())
        if not UUID_RE.match(apns_id):
            return reason(400, "BadMessageId")
        if not req.body:
            return reason(400, "PayloadEmpty")
        if len(req.body) > 4096:
            return reason(413, "PayloadTooLarge")
        problem = payload_problem(req.body, h.get("apns-push-type", "alert"), h.get("apns-priority", "10"))
        if problem == "priority":
            return reason(400, "BadPriority")
        if problem:
            self.log.write({"kind": "bad_payload", "conn": req.conn_id, "token": token, "detail": problem})
            return reason(400, "FakeBadPayload", detail=problem)
        if token.startswith("hang"):  # logged before hanging, so tests can see each attempt's apns-id
            self.log.write({"kind": "hang", "conn": req.conn_id, "apns_id": apns_id, "token": token})
        if token.startswith("drain"):
            req.protocol.drain(req.stream_id)
        scenario = await self.scenario(token)
        if scenario is not None:
            return scenario
        self.log.write({"kind": "push", "conn": req.conn_id, "apns_id": apns_id, "token": token, "topic": topic,
                        "priority": h.get("apns-priority"), "expiration": h.get("apns-expiration"),
                        "collapse_id": h.get("apns-collapse-id"), "push_type": h.get("apns-push-type"),
                        "iat": iat, "jwt_sig": sig, "jwt": authorization[len("bearer "):],
                        "payload": req.body.decode("utf-8", "replace")})
        return Response(200, b"", [("apns-id", apns_id)])

    async def scenario(self, token):
        """Answer for a scenario token prefix, or None for a normal 200."""
        if token.startswith("unregistered"):
            return reason(410, "Unregistered", timestamp=1700000000000)
        if token.startswith("toolarge"):
            return reason(413, "PayloadTooLarge")
        if token.startswith("baddevice"):
            return reason(400, "BadDeviceToken")
        if token.startswith("notfortopic"):
            return reason(400, "DeviceTokenNotForTopic")
        if token.startswith("toomany"):
            return reason(429, "TooManyRequests", [("retry-after", "7")])
        if token.startswith("fail500"):
            return reason(500, "InternalServerError")
        if token.startswith("unavailable"):
            return reason(503, "ServiceUnavailable")
        if token.startswith("hang"):
            await asyncio.Event().wait()  # never answers
        if token.startswith("garbage"):
            return Response(500, b"<html><body><h1>500 Internal Server Error</h1></body></html>",
                            [("content-type", "text/html")])
        if token.startswith("truncated"):
            return Response(400, b'{"reason":"BadDevi', [("content-type", "application/json")])
        if token.startswith("empty"):
            return Response(503, b"")
        if token.startswith("reset"):
            return "reset"
        if token.startswith("goaway"):
            return "goaway"
        if token.startswith("drop"):
            return "drop"
        if token.startswith("rst"):
            await asyncio.sleep(0.05)  # the answers of the same read leave first
            return "rst"
        if token.startswith("freeze"):
            return "freeze"
        if token.startswith("slow"):
            await asyncio.sleep(0.15)
        if token.startswith("huge"):
            return Response(500, b"x" * (200 * 1024), [("content-type", "text/plain")])
        return None


def main():
    p = h2server.common_arguments("Fake APNs (HTTP/2 + TLS, token auth)")
    p.add_argument("--public-key", required=True, help="P-256 public key PEM matching the client's .p8")
    p.add_argument("--team-id", required=True)
    p.add_argument("--key-id", required=True)
    p.add_argument("--topic", required=True, help="the only topic this key may push to")
    p.add_argument("--max-token-age", type=int, default=3600, help="seconds before ExpiredProviderToken")
    p.set_defaults(max_streams=1000, initial_streams=1)  # as APNs with token auth
    p.add_argument("--expired-barrier", type=int, default=0,
                   help="hold the first ExpiredProviderToken answers until this many connections sent one")
    p.add_argument("--expired-barrier-timeout", type=float, default=10.0, help="longest wait at the barrier, seconds")
    args = p.parse_args()
    log = h2server.JsonlLog(args.log)
    fake = FakeAPNs(args, log)
    h2server.serve(args, fake.handle, log)


if __name__ == "__main__":
    main()
