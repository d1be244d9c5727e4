#!/usr/bin/env python3
"""Self-test of the Web Push fake and its codec: RFC 8291 / RFC 8292 examples, then a live run of
`fake_webpush.py serve` over HTTP/1.1 (http.client) and HTTP/2 (curl --http2), every scenario.

Run: .venv/bin/python scripts/fakes/test_fake_webpush.py
"""
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import webpush_codec as codec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

U = codec.unb64u


class CodecVectors(unittest.TestCase):
    """RFC 8291 §5 / Appendix A, RFC 8188 §3 and RFC 8292 §2.4 examples, recomputed by the Python codec."""

    def test_rfc8291_example_body_reproduced(self):
        body = codec.encrypt(b"When I grow up, I want to be a watermelon",
                             U("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
                             U("BTBZMqHH6r4Tts7J_aSIgg"), salt=U("DGv6ra1nlYgDCS1FRnbzlw"),
                             as_private=U("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
        expected = U("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
        self.assertEqual(body, expected)
        self.assertEqual(len(body), 144)
        plain, rs = codec.decrypt(body, U("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"), U("BTBZMqHH6r4Tts7J_aSIgg"))
        self.assertEqual((plain, rs), (b"When I grow up, I want to be a watermelon", 4096))

    def test_decrypt_refuses_tampering_and_multiple_records(self):
        key = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        body = bytearray(codec.encrypt(b"hello", codec.public_bytes(key), auth))
        priv = codec.private_bytes(key)
        bad = bytearray(body)
        bad[-1] ^= 1
        with self.assertRaises(codec.DecryptError) as e:
            codec.decrypt(bytes(bad), priv, auth)
        self.assertEqual(e.exception.reason, "bad_tag")
        body[16:20] = (20).to_bytes(4, "big")
        with self.assertRaises(codec.DecryptError) as e:
            codec.decrypt(bytes(body), priv, auth)
        self.assertEqual(e.exception.reason, "multiple_records")

    def test_rfc8292_example_token_verifies(self):
        header = ("vapid t=eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE0"
                  "NTM1MjM3NjgsInN1YiI6Im1haWx0bzpwdXNoQGV4YW1wbGUuY29tIn0.i3CYb7t4xfxCDquptFOepC9GAu_HLGkMlMuCGSK2rpiUfn"
                  "K9ojFwDXb1JrErtmysazNjjvW2L9OkSSHzvoD1oA, k=BA1Hxzyi1RUM1b5wjxsn7nGxAszw2u61m164i3MrAIxHF6YK5h4SDYic-dR"
                  "uU_RCPCfA5aq9ojSwk5Y2EmClBPs")
        claims = codec.verify_vapid(header, "https://push.example.net", now=1453523768 - 3600)
        self.assertEqual(claims["sub"], "mailto:push@example.com")
        with self.assertRaises(codec.VapidError) as e:
            codec.verify_vapid(header, "https://push.example.net", now=1453523768 + 1)
        self.assertEqual(e.exception.reason, "ExpiredJwtToken")
        with self.assertRaises(codec.VapidError) as e:
            codec.verify_vapid(header, "https://other.example", now=1453523768 - 3600)
        self.assertEqual(e.exception.reason, "BadAudience")
        with self.assertRaises(codec.VapidError) as e:
            codec.verify_vapid(header, "https://push.example.net", now=1453523768 - 25 * 3600)
        self.assertEqual(e.exception.reason, "ExpirationTooFar")


class LiveFake(unittest.TestCase):
    """Starts the fake on port 0 and drives every scenario."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fake-webpush-")
        cls.vapid = ec.generate_private_key(ec.SECP256R1())
        cls.subs_path = os.path.join(cls.dir, "subs.json")
        paths = ["/push/ok-1", "/push/ok-h2", "/push/gone-1", "/push/notfound-1", "/push/toolarge-1",
                 "/push/slow-1", "/push/err-1", "/push/flaky-1", "/push/ok-pinned"]
        subprocess.run([sys.executable, os.path.join(HERE, "fake_webpush.py"), "make-subscriptions",
                        "--out", cls.subs_path] + paths, check=True, timeout=30)
        with open(cls.subs_path) as f:
            data = json.load(f)
        other = ec.generate_private_key(ec.SECP256R1())
        for s in data["subscriptions"]:
            if s["path"] == "/push/ok-pinned":
                s["vapid_public_key"] = codec.b64u(codec.public_bytes(other))
        with open(cls.subs_path, "w") as f:
            json.dump(data, f)
        cls.subs = {s["path"]: s for s in data["subscriptions"]}
        cls.log_path = os.path.join(cls.dir, "log.jsonl")
        cls.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_webpush.py"), "serve",
                                     "--subscriptions", cls.subs_path, "--log", cls.log_path,
                                     "--cert-dir", os.path.join(cls.dir, "tls"), "--retry-after", "7"],
                                    stdout=subprocess.PIPE, text=True)
        ready = json.loads(cls.proc.stdout.readline())
        cls.port, cls.ca = ready["port"], ready["ca"]
        cls.origin = f"https://127.0.0.1:{cls.port}"

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(timeout=10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def body_for(self, path, text):
        s = self.subs[path]
        return codec.encrypt(text.encode(), U(s["p256dh"]), U(s["auth"]))

    def headers(self, auth=None, **extra):
        h = {"TTL": "60", "Content-Encoding": "aes128gcm", "Content-Type": "application/octet-stream",
             "Authorization": auth or codec.vapid_header(self.vapid, self.origin, time.time() + 12 * 3600)}
        h.update(extra)
        return h

    def post(self, path, body, headers):
        context = ssl.create_default_context(cafile=self.ca)
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=10)
        try:
            conn.request("POST", path, body=body, headers=headers)
            r = conn.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            conn.close()

    def log_lines(self):
        with open(self.log_path) as f:
            return [json.loads(line) for line in f]

    def test_ok_is_201_with_location_and_logs_the_plaintext(self):
        status, headers, _ = self.post("/push/ok-1", self.body_for("/push/ok-1", '{"title":"hé"}'),
                                       self.headers(Urgency="high", Topic="order-42"))
        self.assertEqual(status, 201)
        self.assertTrue(headers["location"].startswith("/m/"))
        self.assertEqual(headers["ttl"], "60")
        last = [e for e in self.log_lines() if e["path"] == "/push/ok-1"][-1]
        self.assertEqual(last["plaintext"], '{"title":"hé"}')
        self.assertEqual((last["urgency"], last["topic"], last["status"]), ("high", "order-42", 201))
        self.assertEqual(last["vapid"]["aud"], self.origin)
        self.assertEqual(last["body_length"], len('{"title":"hé"}'.encode()) + 103)

    def test_scenarios_answer_their_status(self):
        expected = {"/push/gone-1": 410, "/push/notfound-1": 404, "/push/toolarge-1": 413, "/push/slow-1": 429,
                    "/push/err-1": 503, "/push/nosuch-1": 404}
        for path, code in expected.items():
            body = self.body_for(path, "x") if path in self.subs else b"\x00" * 120
            status, headers, _ = self.post(path, body, self.headers())
            self.assertEqual(status, code, path)
            if code == 429:
                self.assertEqual(headers["retry-after"], "7")
        gone = [e for e in self.log_lines() if e["path"] == "/push/gone-1"][-1]
        self.assertEqual(gone["plaintext"], "x", "non-ok scenarios still decrypt and log")

    def test_redirect_answers_307_with_a_location_on_this_service(self):
        status, headers, _ = self.post("/push/redirect-1", b"\x00" * 120, self.headers())
        self.assertEqual(status, 307)
        self.assertEqual(headers["location"], f"https://127.0.0.1:{self.port}/push/ok-redirected")

    def test_flaky_fails_once_then_succeeds(self):
        body = self.body_for("/push/flaky-1", "retry me")
        self.assertEqual(self.post("/push/flaky-1", body, self.headers())[0], 503)
        self.assertEqual(self.post("/push/flaky-1", body, self.headers())[0], 201)

    def test_bad_vapid_is_refused(self):
        body = self.body_for("/push/ok-1", "x")
        now = time.time()
        wrong_signer = codec.vapid_header(self.vapid, self.origin, now + 3600)
        k_of_other = codec.b64u(codec.public_bytes(ec.generate_private_key(ec.SECP256R1())))
        forged = wrong_signer.split(", k=")[0] + ", k=" + k_of_other
        cases = {
            "missing": (None, 401),
            "wrong aud": (codec.vapid_header(self.vapid, "https://push.example.net", now + 3600), 403),
            "expired": (codec.vapid_header(self.vapid, self.origin, now - 10), 403),
            "exp > 24h": (codec.vapid_header(self.vapid, self.origin, now + 25 * 3600), 403),
            "no sub": (codec.vapid_header(self.vapid, self.origin, now + 3600, sub=None), 403),
            "signature by another key": (forged, 403),
            "garbage": ("vapid t=abc, k=def", 403),
        }
        for name, (auth, code) in cases.items():
            headers = self.headers()
            if auth is None:
                del headers["Authorization"]
            else:
                headers["Authorization"] = auth
            self.assertEqual(self.post("/push/ok-1", body, headers)[0], code, name)
        pinned = self.body_for("/push/ok-pinned", "x")
        self.assertEqual(self.post("/push/ok-pinned", pinned, self.headers())[0], 403, "key not the subscription's")

    def test_bad_headers_and_bodies_are_400(self):
        body = self.body_for("/push/ok-1", "x")
        h = self.headers()
        del h["TTL"]
        self.assertEqual(self.post("/push/ok-1", body, h)[0], 400)
        self.assertEqual(self.post("/push/ok-1", body, self.headers(Urgency="urgent"))[0], 400)
        self.assertEqual(self.post("/push/ok-1", body, self.headers(Topic="a" * 33))[0], 400)
        self.assertEqual(self.post("/push/ok-1", body, self.headers(**{"Content-Encoding": "aesgcm"}))[0], 400)
        other = self.body_for("/push/ok-h2", "for someone else")
        self.assertEqual(self.post("/push/ok-1", other, self.headers())[0], 400)
        big = self.body_for("/push/ok-1", "y" * 3994)
        self.assertEqual(len(big), 4097)
        self.assertEqual(self.post("/push/ok-1", big, self.headers())[0], 413)
        fits = self.body_for("/push/ok-1", "y" * 3993)
        self.assertEqual(self.post("/push/ok-1", fits, self.headers())[0], 201)

    @unittest.skipUnless(shutil.which("curl"), "curl not installed")
    def test_http2_through_curl(self):
        body_path = os.path.join(self.dir, "h2.bin")
        with open(body_path, "wb") as f:
            f.write(self.body_for("/push/ok-h2", "over h2"))
        args = ["curl", "-sS", "--http2", "--cacert", self.ca, "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                "--data-binary", "@" + body_path]
        for k, v in self.headers().items():
            args += ["-H", f"{k}: {v}"]
        out = subprocess.run(args + [f"{self.origin}/push/ok-h2"], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.stdout, "2 201", out.stderr)
        last = [e for e in self.log_lines() if e["path"] == "/push/ok-h2"][-1]
        self.assertEqual((last["protocol"], last["plaintext"]), ("h2", "over h2"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
