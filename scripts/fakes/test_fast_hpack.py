#!/usr/bin/env python3
"""Self-test of fast_hpack: the byte-table Huffman decoder gives what the `hpack` library's decoder
gives, on encoded header values and on arbitrary bytes (valid or not).

Run: .venv/bin/python scripts/fakes/test_fast_hpack.py   (also run by the Swift test FakeScriptTests)
"""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fast_hpack  # noqa: E402
from hpack.exceptions import HPACKDecodingError  # noqa: E402
from hpack.huffman import HuffmanEncoder  # noqa: E402
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH  # noqa: E402


def outcome(decode, data):
    try:
        return ("ok", decode(data))
    except HPACKDecodingError as e:
        return ("error", type(e))


class FastHuffman(unittest.TestCase):
    def test_encoded_values_decode_to_the_original(self):
        encoder = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
        rng = random.Random(7)
        samples = [b"", b"/3/device/" + b"ab" * 32, b"0123e4567-e89b-12d3-a456-426614174000", b"10", b"0",
                   bytes(range(256))]
        samples += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 90))) for _ in range(3000)]
        for value in samples:
            encoded = encoder.encode(value)
            self.assertEqual(fast_hpack.decode_huffman(encoded), value)
            self.assertEqual(fast_hpack.library_decode(encoded), value)

    def test_arbitrary_bytes_give_the_library_result_or_error(self):
        rng = random.Random(11)
        errors = 0
        for n in range(20000):
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))
            if n % 3 == 0:
                data += b"\xff" * rng.randrange(1, 5)  # EOS prefix and over-long padding
            mine, theirs = outcome(fast_hpack.decode_huffman, data), outcome(fast_hpack.library_decode, data)
            self.assertEqual(mine, theirs, data.hex())
            errors += mine[0] == "error"
        self.assertGreater(errors, 1000, "the sample must exercise the invalid paths too")

    def test_install_replaces_the_decoder_hpack_uses(self):
        import hpack.hpack
        fast_hpack.install()
        self.assertIs(hpack.hpack.decode_huffman, fast_hpack.decode_huffman)


if __name__ == "__main__":
    unittest.main()
