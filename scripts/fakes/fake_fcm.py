"""Fake FCM HTTP v1 + Google OAuth2 token endpoint (tests only): HTTP/2 over TLS, as
Firebase's "REST Resource: projects.messages" and Google's OAuth2 service-account flow describe them.

POST /token  (form: grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer, assertion=<JWT>)
  verifies the RS256 assertion with --sa-public-key: iss = --client-email, scope contains
  firebase.messaging or cloud-platform, aud = --audience (default: this server's /token URL or Google's),
  exp - iat <= 3600 and not expired. Answers {"access_token","token_type":"Bearer","expires_in":--token-lifetime};
  logs {"kind":"oauth","n":k,"assertion":<JWT>}. Errors: 400 {"error":"invalid_grant","error_description":...},
  logged as {"kind":"oauth_refused","error_description":..,"assertion":<JWT or null>}.
POST /v1/projects/<--project-id>/messages:send  with `authorization: Bearer <issued token>` (else 401
  UNAUTHENTICATED). Body {"message":{"token":...,...}}; data values must be strings (else 400
  INVALID_ARGUMENT naming message.data[i].value); android.ttl must look like "<n>s"; android.priority is
  HIGH or NORMAL; android.notification's fields are strings, notification_count a number and the four
  *_loc_args arrays of strings (else 400 INVALID_ARGUMENT naming the field).
Scenario by message.token prefix (Google error envelope, FcmError in details):
  unregistered -> 404 UNREGISTERED          badtoken    -> 400 INVALID_ARGUMENT, field message.token
  mismatch     -> 403 SENDER_ID_MISMATCH    quota       -> 429 QUOTA_EXCEEDED + retry-after: 30
  unavailable  -> 503 UNAVAILABLE           internal    -> 500 INTERNAL
  ratelimit    -> 429 RESOURCE_EXHAUSTED without FcmError (ErrorInfo only)
  html         -> 502 HTML body             hang        -> never answers
  revoke       -> first time per token: the bearer token is revoked and 401 UNAUTHENTICATED; later 200
anything else -> 200 {"name":"projects/<id>/messages/<n>"}, logged as {"kind":"push","token","body","name","oauth_n"}
(oauth_n: the n of the access token the request carried).
"""
import asyncio
import base64
import json
import re
import secrets
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

import h2server
from h2server import Response

FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def google_error(http, status, message, fcm_code=None, extra_details=(), headers=None):
    details = ([{"@type": FCM_ERROR, "errorCode": fcm_code}] if fcm_code else []) + list(extra_details)
    err = {"code": http, "message": message, "status": status}
    if details:
        err["details"] = details
    return Response.json(http, {"error": err}, headers)


def field_violation(field, description):
    return {"@type": BAD_REQUEST, "fieldViolations": [{"field": field, "description": description}]}


class FakeFCM:
    def __init__(self, args, log):
        with open(args.sa_public_key, "rb") as f:
            self.public_key = serialization.load_pem_public_key(f.read())
        self.args = args
        self.log = log
        self.tokens = {}  # access token -> n of its oauth line
        self.revoked_once = set()
        self.issued = 0
        self.sent = 0

    async def handle(self, req):
        if req.method == "POST" and req.path == "/token":
            return self.oauth(req)
        m = re.match(r"^/v1/projects/([^/]+)/messages:send$", req.path)
        if req.method == "POST" and m:
            return await self.send(req, m.group(1))
        return google_error(404, "NOT_FOUND", "no such method")

    def oauth(self, req):
        form = urllib.parse.parse_qs(req.body.decode("utf-8", "replace"))
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"] or "assertion" not in form:
            return Response.json(400, {"error": "unsupported_grant_type"})
        assertion = form["assertion"][0]
        try:
            h64, c64, s64 = form["assertion"][0].split(".")
            header, claims = json.loads(b64url_decode(h64)), json.loads(b64url_decode(c64))
            if header.get("alg") != "RS256":
                raise ValueError("alg")
            self.public_key.verify(b64url_decode(s64), (h64 + "." + c64).encode(), padding.PKCS1v15(), hashes.SHA256())
        except (ValueError, InvalidSignature, TypeError):
            return self.refuse("Invalid JWT Signature.", assertion)
        audiences = {self.args.audience} if self.args.audience else {
            "https://oauth2.googleapis.com/token", "https://127.0.0.1:%d/token" % self.port(req),
            "https://localhost:%d/token" % self.port(req)}
        now = time.time()
        scope = claims.get("scope", "")
        problem = None
        if claims.get("iss") != self.args.client_email:
            problem = "iss"
        elif claims.get("aud") not in audiences:
            problem = "aud"
        elif "firebase.messaging" not in scope and "cloud-platform" not in scope:
            problem = "scope"
        elif not isinstance(claims.get("iat"), int) or not isinstance(claims.get("exp"), int):
            problem = "iat/exp"
        elif claims["exp"] - claims["iat"] > 3600 or claims["exp"] < now or claims["iat"] > now + 60:
            problem = "lifetime"
        if problem:
            return self.refuse("bad claim: " + problem, assertion)
        self.issued += 1
        token = "fake-%d-%s" % (self.issued, secrets.token_hex(8))
        self.tokens[token] = self.issued
        self.log.write({"kind": "oauth", "n": self.issued, "assertion": assertion})
        return Response.json(200, {"access_token": token, "token_type": "Bearer",
                                   "expires_in": self.args.token_lifetime})

    def refuse(self, description, assertion):
        self.log.write({"kind": "oauth_refused", "error_description": description, "assertion": assertion})
        return Response.json(400, {"error": "invalid_grant", "error_description": description})

    def port(self, req):
        authority = req.headers.get(":authority", "")
        return int(authority.rsplit(":", 1)[1]) if ":" in authority else 443

    async def send(self, req, project):
        auth = req.headers.get("authorization", "")
        bearer = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        if bearer not in self.tokens:
            return google_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        if project != self.args.project_id:
            return google_error(404, "NOT_FOUND", "Requested entity was not found.")
        try:
            message = json.loads(req.body)["message"]
            token = message["token"]
            assert isinstance(token, str) and token
        except (ValueError, KeyError, TypeError, AssertionError):
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", "INVALID_ARGUMENT")
        for i, (key, value) in enumerate((message.get("data") or {}).items()):
            if not isinstance(value, str):
                field = "message.data[%d].value" % i
                return google_error(400, "INVALID_ARGUMENT", "Invalid value at '%s' (TYPE_STRING)" % field,
                                    "INVALID_ARGUMENT", [field_violation(field, "not a string")])
        ttl = (message.get("android") or {}).get("ttl")
        if ttl is not None and not re.match(r"^\d+(\.\d+)?s$", str(ttl)):
            return google_error(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'", "INVALID_ARGUMENT",
                                [field_violation("message.android.ttl", "bad duration")])
        bad = self.android_problem(message.get("android") or {})
        if bad:
            return google_error(400, "INVALID_ARGUMENT", "Invalid value at '%s'" % bad, "INVALID_ARGUMENT",
                                [field_violation(bad, "bad value")])
        answer = await self.scenario(token, bearer)
        if answer is not None:
            return answer
        self.sent += 1
        name = "projects/%s/messages/%d" % (project, self.sent)
        self.log.write({"kind": "push", "conn": req.conn_id, "token": token, "name": name,
                        "body": req.body.decode("utf-8", "replace"), "oauth_n": self.tokens.get(bearer)})
        return Response.json(200, {"name": name})

    @staticmethod
    def android_problem(android):
        """The first field of message.android with a value of the wrong type, or None."""
        if android.get("priority", "NORMAL") not in ("HIGH", "NORMAL"):
            return "message.android.priority"
        notification = android.get("notification") or {}
        for key, value in notification.items():
            field = "message.android.notification." + key
            if key.endswith("_loc_args"):
                if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                    return field
            elif key == "notification_count":
                if not isinstance(value, int) or isinstance(value, bool):
                    return field
            elif not isinstance(value, str):
                return field
        return None

    async def scenario(self, token, bearer):
        if token.startswith("unregistered"):
            return google_error(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED")
        if token.startswith("badtoken"):
            return google_error(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                                "INVALID_ARGUMENT", [field_violation("message.token", "Invalid registration token")])
        if token.startswith("mismatch"):
            return google_error(403, "PERMISSION_DENIED", "SenderId mismatch", "SENDER_ID_MISMATCH")
        if token.startswith("quota"):
            return google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "QUOTA_EXCEEDED",
                                headers=[("retry-after", "30")])
        if token.startswith("unavailable"):
            return google_error(503, "UNAVAILABLE", "The service is currently unavailable.", "UNAVAILABLE")
        if token.startswith("internal"):
            return google_error(500, "INTERNAL", "Internal error encountered.", "INTERNAL")
        if token.startswith("ratelimit"):
            return google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric.", None,
                                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}])
        if token.startswith("html"):
            return Response(502, b"<html><head><title>502 Bad Gateway</title></head></html>",
                            [("content-type", "text/html")])
        if token.startswith("hang"):
            await asyncio.Event().wait()  # never answers
        if token.startswith("revoke") and token not in self.revoked_once:
            self.revoked_once.add(token)
            self.tokens.pop(bearer, None)
            return google_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        return None


def main():
    p = h2server.common_arguments("Fake FCM v1 + OAuth2 token endpoint (HTTP/2 + TLS)")
    p.add_argument("--sa-public-key", required=True, help="RSA public key PEM of the service account")
    p.add_argument("--client-email", required=True)
    p.add_argument("--project-id", required=True)
    p.add_argument("--audience", help="expected assertion aud (default: Google's or this server's /token URL)")
    p.add_argument("--token-lifetime", type=int, default=3600, help="expires_in of issued access tokens")
    args = p.parse_args()
    log = h2server.JsonlLog(args.log)
    fake = FakeFCM(args, log)
    h2server.serve(args, fake.handle, log)


if __name__ == "__main__":
    main()
