"""A byte-at-a-time HPACK Huffman decoder (RFC 7541 section 5.2 and appendix B) for the fakes.

The `hpack` library decodes Huffman-coded header values four bits at a time in pure Python. A
provider client sends two or three unique Huffman-coded values per request (`:path` with the device
token, `apns-id`, ...), and that decoding was the largest single cost of the fake APNs (about a fifth
of its CPU per request): a slow fake answers a multiplexed batch in many small groups, which is
what a client then pays for (docs/bench.md). This module builds, from the library's own 4-bit
state machine, a table indexed by (state, whole byte) and installs a decoder that does one lookup
per byte. Same results and the same errors (`HPACKDecodingError` for an EOS symbol, padding
longer than 7 bits or padding that is not all ones); `test_fast_hpack.py` checks it against the
library's decoder.

    import fast_hpack; fast_hpack.install()
"""
import hpack.hpack
import hpack.huffman_table as nibbles
from hpack.exceptions import HPACKDecodingError

_EMIT = nibbles.HUFFMAN_EMIT_SYMBOL
_FAIL = nibbles.HUFFMAN_FAIL
_COMPLETE = nibbles.HUFFMAN_COMPLETE
_library_decode = nibbles.decode_huffman


def _build():
    """Entry (state << 8 | byte) -> (next state << 8, emitted bytes or None when invalid, accepting)."""
    nib = nibbles.HUFFMAN_TABLE
    states = len(nib) // 16
    table = []
    for state in range(states):
        for byte in range(256):
            s, flags, out = nib[state * 16 + (byte >> 4)]
            if flags & _FAIL:
                table.append((0, None, 0))
                continue
            emitted = bytes([out]) if flags & _EMIT else b""
            s, flags, out = nib[s * 16 + (byte & 0x0F)]
            if flags & _FAIL:
                table.append((0, None, 0))
                continue
            if flags & _EMIT:
                emitted += bytes([out])
            table.append((s << 8, emitted, flags & _COMPLETE))
    return table


_TABLE = _build()


def decode_huffman(data):
    """Decodes one Huffman-coded header value; raises HPACKDecodingError as the library does."""
    if not data:
        return b""
    table = _TABLE
    state = 0
    accepting = 0
    out = bytearray()
    for byte in data:
        state, emitted, accepting = table[state | byte]
        if emitted is None:
            raise HPACKDecodingError("Invalid Huffman string")
        out += emitted
    if not accepting:
        raise HPACKDecodingError("Incomplete Huffman string")
    return bytes(out)


class _Quiet:
    """Stands in for `hpack`'s module logger: its debug calls (about 40 per request) cost more than
    the decoding they describe, even when debug logging is off."""

    def debug(self, *args, **kwargs):
        pass


def install():
    """Makes `hpack` (and so `h2`) decode with this module's decoder and skip its debug logging."""
    hpack.hpack.decode_huffman = decode_huffman
    hpack.hpack.log = _Quiet()


def library_decode(data):
    """The library's own decoder (for the self-test)."""
    return _library_decode(data)
