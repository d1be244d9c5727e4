import Foundation

/// Reads PostgreSQL's text output of one-dimensional arrays (`uuid[]`, `text[]`, `boolean[]`).
enum PGArrayText {
    /// Parses `{a,b,c}` of uuids.
    static func uuids(_ text: String) throws -> [UUID] {
        var text = text
        if let ids = text.withUTF8({ PGUUIDText.parseArray(bytes: $0) }) { return ids }
        // Not the plain `{uuid,uuid,...}` PostgreSQL prints: the general parser, for its error.
        return try strings(text).map { s in
            guard let u = PGUUIDText.parse(s) else {
                throw PGError(code: .decode, message: "not a uuid in array: \(s.prefix(40))")
            }
            return u
        }
    }

    /// Parses `{t,f}`.
    static func bools(_ text: String) throws -> [Bool] {
        try strings(text).map { s in
            guard let b = Bool(pgText: s) else { throw PGError(code: .decode, message: "not a boolean in array: \(s.prefix(10))") }
            return b
        }
    }

    /// Parses a one-dimensional PostgreSQL array literal of simple or quoted elements, over its
    /// UTF-8 bytes (the delimiters are ASCII, so a multi-byte character never splits).
    static func strings(_ text: String) throws -> [String] {
        var text = text
        return try text.withUTF8 { bytes -> [String] in
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else {
                throw PGError(code: .decode, message: "not an array literal")
            }
            if bytes.count == 2 { return [] }
            var out: [String] = []
            var current: [UInt8] = []
            var quoted = false, escaped = false
            for c in bytes[1 ..< bytes.count - 1] {
                if escaped { current.append(c); escaped = false; continue }
                if quoted {
                    if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { quoted = false } else { current.append(c) }
                    continue
                }
                if c == UInt8(ascii: "\"") { quoted = true; continue }
                if c == UInt8(ascii: ",") {
                    out.append(String(decoding: current, as: UTF8.self))
                    current.removeAll(keepingCapacity: true)
                    continue
                }
                current.append(c)
            }
            out.append(String(decoding: current, as: UTF8.self))
            return out
        }
    }
}
