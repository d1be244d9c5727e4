import struct Foundation.Date
import struct Foundation.UUID

/// A type that `PGResult.decode(_:_:as:)` can read from PostgreSQL's text output format.
///
/// Conforming: `String`, `Int`, `Int64`, `Int32`, `Bool`, `Double`, `Date` (timestamptz),
/// `UUID`, `[UInt8]` (bytea, hex format), and `Optional` of any of them (NULL reads as nil).
public protocol PGDecodable {
    /// Reads a value from its text form; nil when the text is not a valid value of this type.
    init?(pgText: String)
    /// The value SQL NULL stands for, or nil when NULL is not acceptable (the default).
    static var pgNull: Self? { get }
}

extension PGDecodable {
    /// NULL is not acceptable by default.
    public static var pgNull: Self? { nil }
}

extension Optional: PGDecodable where Wrapped: PGDecodable {
    /// The wrapped type's decoding.
    public init?(pgText: String) {
        guard let value = Wrapped(pgText: pgText) else { return nil }
        self = .some(value)
    }
    /// NULL reads as `nil`.
    public static var pgNull: Self? { .some(.none) }
}

extension String: PGDecodable {
    /// Any text as is.
    public init?(pgText: String) { self = pgText }
}

extension Int64: PGDecodable {
    /// Decimal digits with an optional sign (`int2/int4/int8` output).
    public init?(pgText: String) { self.init(pgText, radix: 10) }
}

extension Int: PGDecodable {
    /// Decimal digits with an optional sign.
    public init?(pgText: String) { self.init(pgText, radix: 10) }
}

extension Int32: PGDecodable {
    /// Decimal digits with an optional sign, within `Int32`'s range.
    public init?(pgText: String) { self.init(pgText, radix: 10) }
}

extension Bool: PGDecodable {
    /// `t` / `f` (PostgreSQL's output), also `true` / `false`.
    public init?(pgText: String) {
        switch pgText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

extension Double: PGDecodable {
    /// Decimal or exponent text, `Infinity`, `-Infinity`, `NaN`.
    public init?(pgText: String) {
        switch pgText {
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        case "NaN": self = .nan
        default:
            guard let first = pgText.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: ".")
                    || (first >= 48 && first <= 57) else { return nil }
            self.init(pgText)
        }
    }
}

extension Date: PGDecodable {
    /// ISO output of `timestamptz` / `timestamp` (as UTC) / `date`; see `PGTimestamp.parse`.
    public init?(pgText: String) {
        guard let date = PGTimestamp.parse(pgText) else { return nil }
        self = date
    }
}

extension UUID: PGDecodable {
    /// The canonical 36-character form, any case.
    public init?(pgText: String) {
        guard let u = PGUUIDText.parse(pgText) else { return nil }
        self = u
    }
}

extension Array: PGDecodable where Element == UInt8 {
    /// bytea hex format: `\x` then two hex digits per byte (either case).
    public init?(pgText: String) {
        let text = Array(pgText.utf8)
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"),
              text.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity((text.count - 2) / 2)
        var i = 2
        while i < text.count {
            guard let hi = PGHex.nibble(text[i]), let lo = PGHex.nibble(text[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        self = out
    }
}
