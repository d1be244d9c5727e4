/// Strict RFC 8259 JSON parser producing `JSONValue` with member order and number text kept
/// (R-ENC-9: `data` keeps the client's own key order).
///
/// Refuses, with `PushError` code `INVALID_DATA` (message names the byte offset): invalid JSON,
/// trailing garbage, raw control characters in strings, lone surrogate escapes, duplicate keys in
/// an object (FCM `data` is a map), and nesting deeper than `maxDepth`.
public enum JSONParser {
    /// Deepest nesting of arrays/objects accepted (keeps recursion far from the stack limit).
    public static let maxDepth = 64

    /// Parses a complete JSON text.
    /// - Throws: `PushError` with code `.invalidData`.
    public static func parse(_ text: String) throws -> JSONValue {
        var copy = text
        return try copy.withUTF8 { buffer in
            var reader = Reader(bytes: buffer)
            return try reader.parseDocument()
        }
    }

    /// Parses UTF-8 bytes (validated as UTF-8 first).
    /// - Throws: `PushError` with code `.invalidData`.
    public static func parse(utf8 bytes: [UInt8]) throws -> JSONValue {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw PushError(.invalidData, "data is not valid UTF-8")
        }
        return try parse(text)
    }

    /// Parses the client's `data` text, which must be a JSON object (R-SEND-1).
    /// - Throws: `PushError` with code `.invalidData` when it is not JSON or not an object.
    public static func parseDataObject(_ text: String) throws -> JSONObject {
        guard case .object(let object) = try parse(text) else {
            throw PushError(.invalidData, "data must be a JSON object")
        }
        return object
    }
}

// MARK: - Reader

private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if pos != bytes.count { throw fail("unexpected text after the JSON value") }
        return value
    }

    func fail(_ what: String) -> PushError {
        PushError(.invalidData, "data is not valid JSON: \(what) at byte \(pos)")
    }

    mutating func skipWhitespace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x09, 0x0a, 0x0d: pos += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSONValue {
        guard pos < bytes.count else { throw fail("unexpected end") }
        switch bytes[pos] {
        case 0x7b: return .object(try parseObject())
        case 0x5b: return try parseArray()
        case 0x22: return .string(try parseString())
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6e: try literal("null"); return .null
        case 0x2d, 0x30...0x39: return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let n = word.utf8CodeUnitCount
        guard pos + n <= bytes.count else { throw fail("unexpected end") }
        for i in 0..<n where bytes[pos + i] != word.utf8Start[i] { throw fail("bad literal") }
        pos += n
    }

    mutating func enter() throws {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("nesting deeper than \(JSONParser.maxDepth)") }
    }

    mutating func parseObject() throws -> JSONObject {
        try enter()
        pos += 1
        var members: [JSONObject.Member] = []
        var seen = Set<String>()
        skipWhitespace()
        if pos < bytes.count && bytes[pos] == 0x7d { pos += 1; depth -= 1; return JSONObject(members) }
        while true {
            skipWhitespace()
            guard pos < bytes.count, bytes[pos] == 0x22 else { throw fail("expected a member name") }
            let key = try parseString()
            if !seen.insert(key).inserted { throw fail("duplicate key") }
            skipWhitespace()
            guard pos < bytes.count, bytes[pos] == 0x3a else { throw fail("expected ':'") }
            pos += 1
            skipWhitespace()
            members.append(JSONObject.Member(key, try parseValue()))
            skipWhitespace()
            guard pos < bytes.count else { throw fail("unexpected end") }
            if bytes[pos] == 0x2c { pos += 1; continue }
            if bytes[pos] == 0x7d { pos += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return JSONObject(members)
    }

    mutating func parseArray() throws -> JSONValue {
        try enter()
        pos += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if pos < bytes.count && bytes[pos] == 0x5d { pos += 1; depth -= 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard pos < bytes.count else { throw fail("unexpected end") }
            if bytes[pos] == 0x2c { pos += 1; continue }
            if bytes[pos] == 0x5d { pos += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(items)
    }

    mutating func digits() -> Int {
        let start = pos
        while pos < bytes.count, (0x30...0x39).contains(bytes[pos]) { pos += 1 }
        return pos - start
    }

    mutating func parseNumber() throws -> String {
        let start = pos
        if bytes[pos] == 0x2d { pos += 1 }
        guard pos < bytes.count else { throw fail("bad number") }
        if bytes[pos] == 0x30 {
            pos += 1
        } else if digits() == 0 {
            throw fail("bad number")
        }
        if pos < bytes.count, bytes[pos] == 0x2e {
            pos += 1
            if digits() == 0 { throw fail("bad number fraction") }
        }
        if pos < bytes.count, bytes[pos] == 0x65 || bytes[pos] == 0x45 {
            pos += 1
            if pos < bytes.count, bytes[pos] == 0x2b || bytes[pos] == 0x2d { pos += 1 }
            if digits() == 0 { throw fail("bad number exponent") }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
    }

    mutating func parseString() throws -> String {
        pos += 1
        let start = pos
        // Fast path: no escapes.
        while pos < bytes.count {
            let b = bytes[pos]
            if b == 0x22 {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
                pos += 1
                return s
            }
            if b == 0x5c { break }
            if b < 0x20 { throw fail("control character in string") }
            pos += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<pos]))
        while pos < bytes.count {
            let b = bytes[pos]
            if b == 0x22 { pos += 1; return String(decoding: out, as: UTF8.self) }
            if b < 0x20 { throw fail("control character in string") }
            if b != 0x5c { out.append(b); pos += 1; continue }
            pos += 1
            guard pos < bytes.count else { break }
            let e = bytes[pos]
            pos += 1
            switch e {
            case 0x22, 0x5c, 0x2f: out.append(e)
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0c)
            case 0x6e: out.append(0x0a)
            case 0x72: out.append(0x0d)
            case 0x74: out.append(0x09)
            case 0x75: try appendUnicodeEscape(to: &out)
            default: throw fail("bad escape")
            }
        }
        throw fail("unterminated string")
    }

    mutating func hex4() throws -> UInt32 {
        guard pos + 4 <= bytes.count else { throw fail("bad \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    mutating func appendUnicodeEscape(to out: inout [UInt8]) throws {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard pos + 2 <= bytes.count, bytes[pos] == 0x5c, bytes[pos + 1] == 0x75 else {
                throw fail("lone surrogate")
            }
            pos += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("lone surrogate")
        }
        guard let u = Unicode.Scalar(scalar) else { throw fail("bad \\u escape") }
        UTF8.encode(u) { out.append($0) }
    }
}
