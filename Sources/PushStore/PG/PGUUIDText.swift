import Foundation

/// The canonical text form of a UUID (`8-4-4-4-12` hex digits, RFC 9562 §4), written and read
/// without Foundation's `uuidString` / `UUID(uuidString:)`, which go through `sprintf` / `sscanf`
/// and showed in worker profiles (one parse and one format per delivery of every batch).
/// Output matches `uuid.uuidString.lowercased()`; input must be the canonical form (36 characters,
/// hyphens at 8, 13, 18 and 23, hex digits of either case elsewhere), which is what PostgreSQL
/// prints. Foundation's parser also skips leading blanks; this one refuses them.
enum PGUUIDText {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lower-case canonical text, e.g. `9f2c…-…`.
    static func format(_ u: UUID) -> String {
        let b = u.uuid
        let bytes = [b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15]
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses the canonical form (either case); nil otherwise.
    static func parse(_ text: String) -> UUID? {
        var bytes = Array(text.utf8)
        guard bytes.count == 36 else { return nil }
        return bytes.withUnsafeMutableBufferPointer { parse(bytes: UnsafeBufferPointer($0)) }
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        var raw = [UInt8](repeating: 0, count: 16)
        var n = 0
        var i = 0
        while i < 36 {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard bytes[i] == UInt8(ascii: "-") else { return nil }
                i += 1
                continue
            }
            guard let hi = nibble(bytes[i]), let lo = nibble(bytes[i + 1]) else { return nil }
            raw[n] = hi << 4 | lo
            n += 1
            i += 2
        }
        return UUID(uuid: (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                           raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]))
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
