import Foundation

/// The canonical text form of a UUID (`8-4-4-4-12` hex digits, RFC 9562 §4), written and read
/// without Foundation's `uuidString` / `UUID(uuidString:)`, which go through `sprintf` / `sscanf`
/// and showed in worker profiles (one parse and one format per delivery of every batch).
/// Output matches `uuid.uuidString.lowercased()`; input must be the canonical form (36 characters,
/// hyphens at 8, 13, 18 and 23, hex digits of either case elsewhere), which is what PostgreSQL
/// prints. Foundation's parser also skips leading blanks; this one refuses them.
enum PGUUIDText {
    /// Lower-case canonical text, e.g. `9f2c…-…`.
    static func format(_ u: UUID) -> String {
        let b = u.uuid
        let bytes = [b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15]
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(PGHex.digits[Int(byte >> 4)])
            out.append(PGHex.digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses the canonical form (either case); nil otherwise.
    static func parse(_ text: String) -> UUID? {
        var bytes = Array(text.utf8)
        guard bytes.count == 36 else { return nil }
        return bytes.withUnsafeMutableBufferPointer { parse(bytes: UnsafeBufferPointer($0)) }
    }

    /// Parses `{uuid,uuid,...}` exactly as PostgreSQL prints a `uuid[]` without NULLs (`{}` for
    /// none); nil for anything else (quoted or NULL elements, other spacing), which the caller hands
    /// to a general array parser.
    static func parseArray(bytes: UnsafeBufferPointer<UInt8>) -> [UUID]? {
        let n = bytes.count
        guard n >= 2, bytes[0] == UInt8(ascii: "{"), bytes[n - 1] == UInt8(ascii: "}") else { return nil }
        if n == 2 { return [] }
        guard (n - 1) % 37 == 0 else { return nil }   // "{" + 36 per element + a "," or the closing "}"
        let count = (n - 1) / 37
        var out: [UUID] = []
        out.reserveCapacity(count)
        for k in 0 ..< count {
            let start = 1 + 37 * k
            guard bytes[start + 36] == (k == count - 1 ? UInt8(ascii: "}") : UInt8(ascii: ",")),
                  let u = parse(bytes: UnsafeBufferPointer(rebasing: bytes[start ..< start + 36])) else { return nil }
            out.append(u)
        }
        return out
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &raw) { out -> Bool in
            var n = 0
            var i = 0
            while i < 36 {
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard bytes[i] == UInt8(ascii: "-") else { return false }
                    i += 1
                    continue
                }
                guard let hi = PGHex.nibble(bytes[i]), let lo = PGHex.nibble(bytes[i + 1]) else { return false }
                out[n] = hi << 4 | lo
                n += 1
                i += 2
            }
            return true
        }
        return ok ? UUID(uuid: raw) : nil
    }
}
