/// Hexadecimal digits as PostgreSQL writes and reads them (bytea's hex format, UUID text): the
/// one table and parser the PG layer's encoders and decoders share.
enum PGHex {
    /// `0123456789abcdef` as UTF-8 bytes: `digits[n]` for a nibble `n` (lower case, as PostgreSQL prints).
    static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends two lower-case hex digits per byte of `bytes` to `out`, written in place after one
    /// growth (a per-byte `append` checked capacity and uniqueness twice a byte: the batch record
    /// writes every simulator payload this way, callgrind in docs/bench.md).
    static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: bytes.count * 2))
        out.withUnsafeMutableBufferPointer { o in
            digits.withUnsafeBufferPointer { d in
                bytes.withUnsafeBufferPointer { v in
                    var j = start
                    for b in v {
                        o[j] = d[Int(b >> 4)]
                        o[j + 1] = d[Int(b & 15)]
                        j += 2
                    }
                }
            }
        }
    }

    /// The value of one hex digit (either case), or nil.
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
