/// A JSON value that keeps what a payload must reproduce byte for byte (R-ENC-9):
/// object members stay in their original order and numbers keep their original text.
///
/// Produced by `JSONParser`, written by `JSONWriter`. Strings hold the decoded text
/// (escapes resolved), so `"\/"` comes back out as `/`.
public indirect enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number, as its original text (e.g. `"1.50"`, `"-0"`, `"1e3"`), re-emitted unchanged.
    case number(String)
    /// A string (decoded).
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, members in their original order.
    case object(JSONObject)
}

/// A JSON object whose members keep their order; keys are unique (the parser refuses duplicates).
public struct JSONObject: Sendable, Hashable {
    /// One `"key": value` member.
    public struct Member: Sendable, Hashable {
        /// The member's name (decoded).
        public var key: String
        /// The member's value.
        public var value: JSONValue

        /// Makes a member.
        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// Members in order.
    public var members: [Member]

    /// Makes an object from ordered members (the caller keeps keys unique).
    public init(_ members: [Member] = []) {
        self.members = members
    }

    /// Number of members.
    public var count: Int { members.count }

    /// True when the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The value of the first member named `key`, or nil (linear search: objects here are small).
    public subscript(key: String) -> JSONValue? {
        members.first(where: { $0.key == key })?.value
    }
}

extension JSONValue {
    /// The nearest double to a decimal number's text (RFC 8259 §6 numbers and the CLI's decimal
    /// arguments), or nil when it is not a number or is out of a double's range: beyond the
    /// largest (it would read as infinity) or, for text naming a non-zero value, below the
    /// smallest subnormal (it would read as 0: `1e-400` is not zero, and must not pass as zero).
    public static func double(fromNumberText text: String) -> Double? {
        guard let d = Double(text), d.isFinite else { return nil }
        if d == 0 {
            let mantissa = text.prefix { $0 != "e" && $0 != "E" }
            guard mantissa.allSatisfy({ !$0.isNumber || $0 == "0" }) else { return nil }
        }
        return d
    }
}
