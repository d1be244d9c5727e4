import Foundation

/// Base64url (RFC 4648 §5) without padding, as used by the envelope (R-ENC-2), kids (R-DEV-3)
/// and JWTs. Decoding is lenient about missing padding and strict about the alphabet.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [Int16] = {
        var t = [Int16](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = Int16(i) }
        return t
    }()

    /// Encodes `bytes` without padding: the result has `encodedLength(bytes.count)` characters.
    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(encodedLength(bytes.count))
        appendEncoded(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the unpadded base64url encoding of `bytes` to `out` (ASCII bytes).
    public static func appendEncoded<C: Collection>(_ bytes: C, to out: inout [UInt8]) where C.Element == UInt8 {
        var it = bytes.makeIterator()
        while let b0 = it.next() {
            let b1 = it.next(), b2 = it.next()
            let n = (UInt32(b0) << 16) | (UInt32(b1 ?? 0) << 8) | UInt32(b2 ?? 0)
            out.append(alphabet[Int((n >> 18) & 63)])
            out.append(alphabet[Int((n >> 12) & 63)])
            if b1 != nil { out.append(alphabet[Int((n >> 6) & 63)]) }
            if b2 != nil { out.append(alphabet[Int(n & 63)]) }
        }
    }

    /// Length in characters of the unpadded encoding of `byteCount` bytes: ceil(4n/3).
    /// Never of the form 4k+1, which is why some payload sizes are unreachable (R-SEND-7).
    @inlinable public static func encodedLength(_ byteCount: Int) -> Int {
        (byteCount * 4 + 2) / 3
    }

    /// Decodes unpadded (or padded) base64url. Returns nil on any character outside the
    /// alphabet, on a length of 4k+1, or on non-zero trailing bits.
    public static func decode(_ text: String) -> [UInt8]? {
        var chars = Array(text.utf8)
        while chars.last == UInt8(ascii: "=") { chars.removeLast() }
        if chars.count % 4 == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0, bits = 0
        for c in chars {
            let v = reverse[Int(c)]
            if v < 0 { return nil }
            acc = (acc << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        if bits > 0 && (acc & ((1 << UInt32(bits)) - 1)) != 0 { return nil }
        return out
    }
}
