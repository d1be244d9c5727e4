/// Compact JSON writer for provider payloads (R-ENC-9): no whitespace, raw UTF-8, escaping only
/// `"`, `\` and bytes below 0x20 (`\b \f \n \r \t` where JSON has a short form, else `\u00XX`
/// with lowercase hex); `/` and non-ASCII are never escaped. Numbers are re-emitted as their
/// original text; objects keep member order. Writes into `[UInt8]` (it runs per delivery).
public enum JSONWriter {
    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)
    private static let nullBytes: [UInt8] = Array("null".utf8)
    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)

    /// Appends `s` as a JSON string literal (with its quotes) to `out`.
    public static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        var text = s
        text.withUTF8 { appendEscaped($0, to: &out) }
        out.append(0x22)
    }

    /// Appends `strings` as a JSON array of string literals (`["a","b"]`) to `out`.
    public static func appendStrings(_ strings: [String], to out: inout [UInt8]) {
        out.append(0x5b)
        for (i, s) in strings.enumerated() {
            if i > 0 { out.append(0x2c) }
            appendString(s, to: &out)
        }
        out.append(0x5d)
    }

    /// Appends the compact JSON text of `value` to `out`.
    public static func append(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: nullBytes)
        case .bool(let b): out.append(contentsOf: b ? trueBytes : falseBytes)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let s): appendString(s, to: &out)
        case .array(let items):
            out.append(0x5b)
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(0x2c) }
                append(item, to: &out)
            }
            out.append(0x5d)
        case .object(let object): append(object, to: &out)
        }
    }

    /// Appends the compact JSON text of `object` (members in order) to `out`.
    public static func append(_ object: JSONObject, to out: inout [UInt8]) {
        out.append(0x7b)
        for (i, member) in object.members.enumerated() {
            if i > 0 { out.append(0x2c) }
            appendString(member.key, to: &out)
            out.append(0x3a)
            append(member.value, to: &out)
        }
        out.append(0x7d)
    }

    /// The compact JSON bytes of `value`.
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out = [UInt8]()
        append(value, to: &out)
        return out
    }

    /// The compact JSON text of `value`.
    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    /// Length in bytes of `s` written as a JSON string literal, quotes included.
    public static func quotedLength(_ s: String) -> Int {
        var n = 2
        for b in s.utf8 {
            if b >= 0x20 && b != 0x22 && b != 0x5c { n += 1; continue }
            switch b {
            case 0x22, 0x5c, 0x08, 0x0c, 0x0a, 0x0d, 0x09: n += 2
            default: n += 6
            }
        }
        return n
    }

    // MARK: - Private

    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var runStart = 0
        var i = 0
        let count = bytes.count
        while i < count {
            let b = bytes[i]
            if b >= 0x20 && b != 0x22 && b != 0x5c { i += 1; continue }
            if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i])) }
            out.append(0x5c)
            switch b {
            case 0x22: out.append(0x22)
            case 0x5c: out.append(0x5c)
            case 0x08: out.append(0x62)
            case 0x0c: out.append(0x66)
            case 0x0a: out.append(0x6e)
            case 0x0d: out.append(0x72)
            case 0x09: out.append(0x74)
            default:
                out.append(contentsOf: [0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0x0f)]])
            }
            i += 1
            runStart = i
        }
        if runStart < count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count])) }
    }
}
