#!/usr/bin/env python3
"""Prints an APNs provider token (ES256 JWT, Apple's "Establishing a token-based connection to APNs") for the nghttp2 prototype of
scripts/bench: header {"alg":"ES256","kid":KEY_ID}, claims {"iss":TEAM_ID,"iat":now}, raw r||s.

Usage: apns_jwt.py KEY.p8 TEAM_ID KEY_ID
"""
import base64
import json
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main():
    key_file, team, kid = sys.argv[1:4]
    key = serialization.load_pem_private_key(open(key_file, "rb").read(), password=None)
    head = b64(json.dumps({"alg": "ES256", "kid": kid}, separators=(",", ":")).encode())
    claims = b64(json.dumps({"iss": team, "iat": int(time.time())}, separators=(",", ":")).encode())
    r, s = decode_dss_signature(key.sign((head + "." + claims).encode(), ec.ECDSA(hashes.SHA256())))
    print(head + "." + claims + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


if __name__ == "__main__":
    main()
