/// Unpadded base64url (RFC 4648 §5) appended straight into a payload buffer: the per-delivery
/// fast path for the envelope's `enc` and `ct` (R-ENC-2). Output is identical to
/// `PushCrypto.Base64URL.appendEncoded` (tested); that generic entry point is not specialized
/// across modules and costs about 35 ns per input byte, this one a few ns.
enum Base64URLWriter {
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// Appends the unpadded base64url encoding of `bytes` to `out`.
    static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        let encodedCount = (bytes.count * 4 + 2) / 3
        let base = out.count
        out.append(contentsOf: repeatElement(0, count: encodedCount))
        let table = UnsafeBufferPointer(start: alphabet.utf8Start, count: 64)
        bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                var i = 0, o = base
                let n = src.count
                while i + 3 <= n {
                    let v = UInt32(src[i]) << 16 | UInt32(src[i + 1]) << 8 | UInt32(src[i + 2])
                    dst[o] = table[Int(v >> 18)]
                    dst[o + 1] = table[Int((v >> 12) & 63)]
                    dst[o + 2] = table[Int((v >> 6) & 63)]
                    dst[o + 3] = table[Int(v & 63)]
                    i += 3
                    o += 4
                }
                let rest = n - i
                if rest > 0 {
                    let v = UInt32(src[i]) << 16 | (rest == 2 ? UInt32(src[i + 1]) << 8 : 0)
                    dst[o] = table[Int(v >> 18)]
                    dst[o + 1] = table[Int((v >> 12) & 63)]
                    if rest == 2 { dst[o + 2] = table[Int((v >> 6) & 63)] }
                }
            }
        }
    }
}
