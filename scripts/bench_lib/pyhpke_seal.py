"""Peer seal benchmark for scripts/bench: pyhpke (PyPI) sealing the envelope suite
(DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode, info "honkio-push-v2") of an
87-byte plaintext to a fixed recipient, with a fresh ephemeral key per seal, for SECONDS wall
seconds on THREADS processes. Prints one JSON object: seals, seals_per_second, cpu_us_per_seal.

Usage: python pyhpke_seal.py SECONDS [THREADS]
"""
import json
import multiprocessing
import os
import sys
import time

from pyhpke import AEADId, CipherSuite, KDFId, KEMId

INFO = b"honkio-push-v2"


def run(seconds, queue):
    suite = CipherSuite.new(KEMId.DHKEM_P256_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES128_GCM)
    recipient = suite.kem.derive_key_pair(os.urandom(32)).public_key
    plaintext = b"a" * 87
    enc, ctx = suite.create_sender_context(recipient, info=INFO)
    ctx.seal(plaintext)
    n = 0
    cpu0 = time.process_time()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _ in range(16):
            enc, ctx = suite.create_sender_context(recipient, info=INFO)
            ct = ctx.seal(plaintext)
            assert len(enc) == 65 and len(ct) == 87 + 16
        n += 16
    queue.put((n, time.process_time() - cpu0))


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    threads = sys.argv[2] if len(sys.argv) > 2 else "1"
    procs = os.cpu_count() if threads == "all" else max(1, int(threads))
    queue = multiprocessing.Queue()
    start = time.monotonic()
    workers = [multiprocessing.Process(target=run, args=(seconds, queue)) for _ in range(procs)]
    for w in workers:
        w.start()
    results = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    wall = max(seconds, time.monotonic() - start - 0.05)
    seals = sum(r[0] for r in results)
    cpu = sum(r[1] for r in results)
    print(json.dumps({"threads": procs, "seals": seals, "seals_per_second": seals / seconds,
                      "cpu_us_per_seal": cpu * 1e6 / max(seals, 1), "wall_seconds": wall}))


if __name__ == "__main__":
    main()
