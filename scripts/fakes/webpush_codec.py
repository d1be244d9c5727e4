"""Web Push codec for the local fake and its self-test, written on Python `cryptography`
primitives independently of the Swift code: RFC 8291 message encryption over RFC 8188
`aes128gcm`, and RFC 8292 VAPID tokens (ES256 JWT, `Authorization: vapid t=..., k=...`).
"""
import base64
import hashlib
import hmac
import json
import os
import re
import time

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives import serialization

VAPID_MAX_LIFETIME = 24 * 3600  # RFC 8292 §2: exp at most 24 hours ahead


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64u(text):
    if isinstance(text, bytes):
        text = text.decode("ascii")
    if not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        raise ValueError("not base64url")
    text = text.rstrip("=")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _hmac(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()


def private_key_from_bytes(raw):
    return ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())


def public_bytes(key):
    pub = key.public_key() if hasattr(key, "public_key") else key
    return pub.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def private_bytes(key):
    return key.private_numbers().private_value.to_bytes(32, "big")


class DecryptError(Exception):
    """A body that does not decrypt; `reason` is a short stable word for the log."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def _cek_nonce(ikm, salt):
    prk = _hmac(salt, ikm)
    cek = _hmac(prk, b"Content-Encoding: aes128gcm\x00\x01")[:16]
    nonce = _hmac(prk, b"Content-Encoding: nonce\x00\x01")[:12]
    return cek, nonce


def _webpush_ikm(ecdh_secret, auth, ua_public, as_public):
    prk_key = _hmac(auth, ecdh_secret)
    return _hmac(prk_key, b"WebPush: info\x00" + ua_public + as_public + b"\x01")


def encrypt(plaintext, ua_public, auth, salt=None, as_private=None, rs=4096, padding=0):
    """RFC 8291 body: salt || rs || 65 || as_public || AES-128-GCM(plaintext || 0x02 || 0*padding)."""
    salt = os.urandom(16) if salt is None else salt
    key = ec.generate_private_key(ec.SECP256R1()) if as_private is None else private_key_from_bytes(as_private)
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ua_public)
    as_public = public_bytes(key)
    ikm = _webpush_ikm(key.exchange(ec.ECDH(), peer), auth, ua_public, as_public)
    cek, nonce = _cek_nonce(ikm, salt)
    record = AESGCM(cek).encrypt(nonce, plaintext + b"\x02" + b"\x00" * padding, None)
    return salt + rs.to_bytes(4, "big") + bytes([65]) + as_public + record


def decrypt(body, ua_private, auth):
    """Decrypts an RFC 8291 body with the subscription's 32-byte private key; strict: one record,
    65-byte key id on the curve, delimiter 0x02. Returns (plaintext, record_size)."""
    if len(auth) != 16:
        raise DecryptError("bad_auth_secret")
    if len(body) < 86:
        raise DecryptError("truncated_header")
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    if idlen != 65:
        raise DecryptError("keyid_not_65_bytes")
    if rs < 18:
        raise DecryptError("record_size_too_small")
    as_public = body[21:86]
    record = body[86:]
    if len(record) <= 16:
        raise DecryptError("truncated_record")
    if len(record) > rs:
        raise DecryptError("multiple_records")
    try:
        peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public)
    except ValueError:
        raise DecryptError("keyid_not_a_point") from None
    key = private_key_from_bytes(ua_private)
    ikm = _webpush_ikm(key.exchange(ec.ECDH(), peer), auth, public_bytes(key), as_public)
    cek, nonce = _cek_nonce(ikm, salt)
    try:
        padded = AESGCM(cek).decrypt(nonce, record, None)
    except InvalidTag:
        raise DecryptError("bad_tag") from None
    stripped = padded.rstrip(b"\x00")
    if not stripped or stripped[-1] != 2:
        raise DecryptError("bad_delimiter")
    return stripped[:-1], rs


class VapidError(Exception):
    """A refused Authorization header: HTTP `status` (401 missing, 403 invalid) and `reason`."""

    def __init__(self, status, reason):
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


def vapid_header(signing_key, aud, exp, sub="mailto:ops@example.com"):
    """Builds `vapid t=<JWT>, k=<key>` with an ES256 signature (raw r||s)."""
    head = b64u(json.dumps({"typ": "JWT", "alg": "ES256"}, separators=(",", ":")).encode())
    claims = {"aud": aud, "exp": int(exp)}
    if sub is not None:
        claims["sub"] = sub
    body = b64u(json.dumps(claims, separators=(",", ":")).encode())
    der = signing_key.sign(f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    sig = b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
    return f"vapid t={head}.{body}.{sig}, k={b64u(public_bytes(signing_key))}"


def verify_vapid(header, expected_aud, now=None, expected_key=None):
    """Checks an Authorization header per RFC 8292 (and the stricter Apple rules on `sub`).
    Returns a dict (aud, exp, sub, k). Raises VapidError."""
    now = time.time() if now is None else now
    if not header:
        raise VapidError(401, "MissingAuthorization")
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "vapid":
        raise VapidError(401, "NotVapidScheme")
    params = {}
    for part in rest.split(","):
        name, eq, value = part.strip().partition("=")
        if eq:
            params[name.strip().lower()] = value.strip()
    token, key_text = params.get("t"), params.get("k")
    if not token or not key_text:
        raise VapidError(403, "MissingTokenOrKey")
    try:
        key_bytes = unb64u(key_text)
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), key_bytes)
        if len(key_bytes) != 65:
            raise ValueError("compressed")
    except ValueError:
        raise VapidError(403, "BadPublicKey") from None
    if expected_key is not None and key_bytes != expected_key:
        raise VapidError(403, "VapidKeyMismatch")
    parts = token.split(".")
    if len(parts) != 3:
        raise VapidError(403, "BadJwtToken")
    try:
        head = json.loads(unb64u(parts[0]))
        claims = json.loads(unb64u(parts[1]))
        sig = unb64u(parts[2])
    except ValueError:
        raise VapidError(403, "BadJwtToken") from None
    if not isinstance(head, dict) or head.get("alg") != "ES256" or head.get("typ", "JWT") != "JWT":
        raise VapidError(403, "BadJwtHeader")
    if len(sig) != 64:
        raise VapidError(403, "BadSignatureLength")
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    try:
        public.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise VapidError(403, "BadSignature") from None
    if not isinstance(claims, dict):
        raise VapidError(403, "BadJwtToken")
    if claims.get("aud") != expected_aud:
        raise VapidError(403, "BadAudience")
    exp = claims.get("exp")
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise VapidError(403, "BadExpiration")
    if exp <= now:
        raise VapidError(403, "ExpiredJwtToken")
    if exp > now + VAPID_MAX_LIFETIME:
        raise VapidError(403, "ExpirationTooFar")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not (sub.startswith("mailto:") or sub.startswith("https:")):
        raise VapidError(403, "BadSubject")
    return {"aud": claims["aud"], "exp": exp, "sub": sub, "k": key_text}


def new_subscription(path, vapid_public_key=None):
    """A fresh subscription record for the fake's file: path, p256dh, auth and private key."""
    key = ec.generate_private_key(ec.SECP256R1())
    entry = {"path": path, "p256dh": b64u(public_bytes(key)), "auth": b64u(os.urandom(16)),
             "private_key": b64u(private_bytes(key))}
    if vapid_public_key:
        entry["vapid_public_key"] = vapid_public_key
    return entry
