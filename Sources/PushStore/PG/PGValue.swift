import Glibc
import struct Foundation.Date
import struct Foundation.UUID
import PushCore

/// One statement parameter, sent in PostgreSQL's text format (never interpolated into SQL).
///
/// Pass `nil` (in a `[PGValue?]`) for SQL NULL. String, integer, boolean and float literals
/// convert by themselves: `conn.exec("… $1, $2", ["abc", 42])`.
///
/// Scalars are sent untyped (OID 0): the server gives them the type their context asks for, as
/// it does for a quoted literal, so `.int` fills an `int4` argument and `.text` an enum or `jsonb`
/// column. Where the context says nothing (`SELECT $1`, `$1 + $2`, `extract(epoch FROM $1)`),
/// cast in the SQL: `$1::bigint`. Arrays are sent typed (`text[]`, `int8[]`, …) so that
/// `unnest($1)` resolves; they are one-dimensional literals (`{"a","b",NULL}`) for `unnest`
/// multi-row writes: `INSERT … SELECT * FROM unnest($1::uuid[], $2::text[])` (casting is still
/// wise for prepared statements, whose types are fixed by the first call and a NULL array there).
public enum PGValue: Sendable, Equatable {
    /// Text. Must not contain a NUL byte (throws `DB_ENCODE`).
    case text(String)
    /// A machine integer, decimal text.
    case int(Int)
    /// A 64-bit integer, decimal text.
    case int64(Int64)
    /// A boolean: `t` / `f`.
    case bool(Bool)
    /// A double, shortest round-trip text; infinities and NaN as `Infinity`, `-Infinity`, `NaN`.
    case double(Double)
    /// An instant, for `timestamptz`: ISO-8601 UTC with microseconds
    /// (`2026-11-29T12:16:08.123456Z`), rounded to the nearest microsecond.
    case date(Date)
    /// A UUID, lower-case text.
    case uuid(UUID)
    /// Bytes for `bytea`, in hex form (`\x0a0b`).
    case bytea([UInt8])
    /// `text[]` (OID 1009).
    case textArray([String?])
    /// `int8[]` (OID 1016).
    case int64Array([Int64?])
    /// `uuid[]` (OID 2951).
    case uuidArray([UUID?])
    /// `bool[]` (OID 1000).
    case boolArray([Bool?])
    /// `timestamptz[]` (OID 1185).
    case dateArray([Date?])
    /// `bytea[]` (OID 1001), each element in hex form.
    case byteaArray([[UInt8]?])
    /// A `json` value (OID 114) given as its UTF-8 text, for a large value built as bytes (the
    /// batch record, `RecordJSON`): sent in binary format, which for `json` is the text itself, with
    /// its length, so the bytes go to libpq as they are, with no `String` and no NUL-terminated copy.
    /// Must not contain a NUL byte (throws `DB_ENCODE`); the server checks the UTF-8 and the JSON.
    case jsonUTF8([UInt8])

    /// The type OID the value is sent with: 0 (the server infers it) for scalars, the array
    /// type's OID for arrays.
    public var typeOID: UInt32 {
        switch self {
        case .text, .int, .int64, .bool, .double, .date, .uuid, .bytea: return 0
        case .textArray: return 1009
        case .int64Array: return 1016
        case .uuidArray: return 2951
        case .boolArray: return 1000
        case .dateArray: return 1185
        case .byteaArray: return 1001
        case .jsonUTF8: return 114
        }
    }

    /// The text the server parses.
    /// - Throws: `PGError` `DB_ENCODE` when a string (or array element) contains a NUL byte.
    public func encoded() throws -> String {
        switch self {
        case .text(let s): return try Self.checked(s)
        case .int(let n): return String(n)
        case .int64(let n): return String(n)
        case .bool(let b): return b ? "t" : "f"
        case .double(let d): return Self.doubleText(d)
        case .date(let d): return PGTimestamp.format(d)
        case .uuid(let u): return PGUUIDText.format(u)
        case .bytea(let b): return Self.hex(b)
        case .textArray(let a): return try Self.arrayLiteral(a.map { try $0.map(Self.checked) })
        case .int64Array(let a): return Self.arrayLiteral(a.map { $0.map { String($0) } })
        case .uuidArray(let a): return Self.arrayLiteral(a.map { $0.map(PGUUIDText.format) })
        case .boolArray(let a): return Self.arrayLiteral(a.map { $0.map { $0 ? "t" : "f" } })
        case .dateArray(let a): return Self.arrayLiteral(a.map { $0.map(PGTimestamp.format) })
        case .byteaArray(let a): return Self.byteaArrayLiteral(a)
        case .jsonUTF8(let b):
            try Self.checkedBytes(b)
            return String(decoding: b, as: UTF8.self)
        }
    }

    /// What `PGConnection` hands libpq for this value: text to send NUL-terminated in text format,
    /// or (`jsonUTF8`) bytes to send with their length in binary format, without a copy.
    /// - Throws: as `encoded()`.
    func wire() throws -> PGWireValue {
        if case .jsonUTF8(let b) = self {
            try Self.checkedBytes(b)
            return b.isEmpty ? .text("") : .binary(b)
        }
        return .text(try encoded())
    }

    // MARK: - Text forms

    private static func checked(_ s: String) throws -> String {
        if s.containsUTF8Byte(0) {
            throw PGError(code: .encode, message: "text parameter contains a NUL byte, which PostgreSQL text cannot hold")
        }
        return s
    }

    private static func checkedBytes(_ b: [UInt8]) throws {
        let hasNUL = b.withUnsafeBufferPointer { p in p.count > 0 && memchr(p.baseAddress!, 0, p.count) != nil }
        if hasNUL {
            throw PGError(code: .encode, message: "json parameter contains a NUL byte, which PostgreSQL text cannot hold")
        }
    }

    private static func doubleText(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return "\(d)"
    }

    /// `\x` followed by two lower-case hex digits per byte (bytea hex format).
    static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(2 + bytes.count * 2)
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        PGHex.append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// A one-dimensional array literal: every element double-quoted with `"` and `\` escaped by a
    /// backslash, so empty strings, `NULL` as text, commas, braces and spaces survive; nil is the
    /// bare `NULL`.
    /// Built over UTF-8 bytes (escaping is ASCII-only, so multi-byte sequences pass through
    /// unchanged): the batch record sends one such literal per column with one element per device.
    /// `arrayLiteral(elements.map { $0.map(hex) })`, written in one pass: each element is
    /// `"\\x` + hex digits + `"` (the backslash of bytea's hex form escaped inside the quotes), NULL
    /// bare. The batch record sends every payload of a chunk this way.
    static func byteaArrayLiteral(_ elements: [[UInt8]?]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(elements.reduce(2) { $0 + ($1.map { $0.count * 2 + 6 } ?? 4) + 1 })
        out.append(UInt8(ascii: "{"))
        for (i, element) in elements.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard let element else { out.append(contentsOf: "NULL".utf8); continue }
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
            PGHex.append(element, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    static func arrayLiteral(_ elements: [String?]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(elements.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        out.append(UInt8(ascii: "{"))
        for (i, element) in elements.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard let element else { out.append(contentsOf: "NULL".utf8); continue }
            out.append(UInt8(ascii: "\""))
            for b in element.utf8 {
                if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(b)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

// MARK: - Literals

extension PGValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
                   ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral {
    /// A string literal is `.text`.
    public init(stringLiteral value: String) { self = .text(value) }
    /// An integer literal is `.int`.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A boolean literal is `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A float literal is `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
}

/// A parameter as `PGConnection` sends it (`PGValue.wire()`): text format (NUL-terminated) or
/// binary format (bytes and a length).
enum PGWireValue {
    /// Sent in text format.
    case text(String)
    /// Sent in binary format, `paramLengths` giving its size.
    case binary([UInt8])
}
