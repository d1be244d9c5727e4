import Foundation
import PushCore

/// A field that may be absent, explicitly `null`, or given (R-DEV-4: absent keeps the stored key,
/// `null` removes it, a value replaces it).
public enum Presence<Value: Sendable>: Sendable {
    case absent
    case null
    case value(Value)

    /// The value when given.
    public var value: Value? {
        if case .value(let v) = self { return v }
        return nil
    }
}

/// Strict reading of one JSON object of a request body: each accessor marks its member as known
/// and checks its type (400 `INVALID_REQUEST` naming the field); `finish()` refuses any member no
/// accessor asked for (422 `VALIDATION_ERROR` naming it), so a misspelt field fails early. Pure.
struct JSONFields {
    let object: JSONObject
    /// Dotted path of this object inside the body (`""` at the top, `subscription.` inside).
    let prefix: String
    private var known = Set<String>()

    init(_ object: JSONObject, prefix: String = "") {
        self.object = object
        self.prefix = prefix
    }

    /// Parses a request body that must be one JSON object (UTF-8, RFC 8259, no duplicate keys).
    static func parseBody(_ body: [UInt8]) throws -> JSONFields {
        guard !body.isEmpty else { throw APIError.invalidRequest("the body is empty; send a JSON object") }
        let value: JSONValue
        do { value = try JSONParser.parse(utf8: body) } catch let e as PushError {
            let why = e.message.hasPrefix("data is not valid UTF-8") ? "the body is not valid UTF-8"
                : e.message.replacingOccurrences(of: "data is not valid JSON", with: "the body is not valid JSON")
            throw APIError.invalidRequest(why)
        }
        guard case .object(let object) = value else { throw APIError.invalidRequest("the body must be a JSON object") }
        return JSONFields(object)
    }

    func name(_ key: String) -> String { prefix + key }

    private mutating func take(_ key: String) -> JSONValue? {
        known.insert(key)
        return object[key]
    }

    func wrongType(_ key: String, _ expected: String) -> APIError {
        APIError.invalidRequest("\(name(key)) must be \(expected)", field: name(key))
    }

    func missing(_ key: String) -> APIError {
        APIError.validation("\(name(key)) is required", field: name(key))
    }

    /// A string, or nil when absent or `null` (an optional field's `null` means "not given").
    mutating func string(_ key: String, nullable: Bool = true) throws -> String? {
        switch take(key) {
        case nil: return nil
        case .null?: if nullable { return nil }; throw wrongType(key, "a string")
        case .string(let s)?: return s
        default: throw wrongType(key, "a string")
        }
    }

    mutating func requiredString(_ key: String) throws -> String {
        guard let s = try string(key, nullable: false) else { throw missing(key) }
        return s
    }

    /// Absent, null, or a string (R-DEV-4).
    mutating func presence(_ key: String) throws -> Presence<String> {
        switch take(key) {
        case nil: return .absent
        case .null?: return .null
        case .string(let s)?: return .value(s)
        default: throw wrongType(key, "a string or null")
        }
    }

    mutating func bool(_ key: String) throws -> Bool? {
        switch take(key) {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        default: throw wrongType(key, "true or false")
        }
    }

    /// A whole number (no fraction or exponent), nil when absent or `null`; one beyond 64 bits is
    /// out of range (422).
    mutating func int(_ key: String) throws -> Int? {
        switch take(key) {
        case nil, .null?: return nil
        case .number(let text)?:
            guard !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) else { throw wrongType(key, "a whole number") }
            guard let n = Int(text) else { throw APIError.validation("\(name(key)) is out of range", field: name(key)) }
            return n
        default: throw wrongType(key, "a whole number")
        }
    }

    /// A number (any JSON number form), nil when absent or `null`; one beyond a double's range,
    /// above (`1e400`) or below (`1e-400`, which would read as 0), is out of range (422:
    /// `JSONValue.double(fromNumberText:)`). Its rules (0 to 1, decimals) are the acceptance service's.
    mutating func double(_ key: String) throws -> Double? {
        switch take(key) {
        case nil, .null?: return nil
        case .number(let text)?:
            guard let d = JSONValue.double(fromNumberText: text) else { throw APIError.validation("\(name(key)) is out of range", field: name(key)) }
            return d
        default: throw wrongType(key, "a number")
        }
    }

    mutating func object(_ key: String, nullable: Bool = true) throws -> JSONObject? {
        switch take(key) {
        case nil: return nil
        case .null?: if nullable { return nil }; throw wrongType(key, "an object")
        case .object(let o)?: return o
        default: throw wrongType(key, "an object")
        }
    }

    /// An array of strings, or nil when absent or (when `nullable`) `null`.
    mutating func strings(_ key: String, nullable: Bool = true) throws -> [String]? {
        switch take(key) {
        case nil: return nil
        case .null?: if nullable { return nil }; throw wrongType(key, "an array of strings")
        case .array(let items)?:
            return try items.map { item in
                guard case .string(let s) = item else { throw wrongType(key, "an array of strings") }
                return s
            }
        default: throw wrongType(key, "an array of strings")
        }
    }

    /// Refuses members nobody asked for (the first one, in the body's order).
    func finish() throws {
        if let unknown = object.members.first(where: { !known.contains($0.key) }) {
            let shown = String(unknown.key.prefix(64))
            throw APIError.validation("unknown field \(prefix)\(shown)", field: prefix + shown)
        }
    }
}
