internal import CLibpq
import struct Foundation.Date
import struct Foundation.UUID

/// The rows of one successful statement (owns a `PGresult*`, freed in `deinit`).
///
/// Values arrive in text format and are decoded on demand by the typed getters. Rows are
/// 0-based; a column is addressed by index (`Int`) or by its exact result name (`String`).
/// Every getter throws `PGError` `DB_DECODE` (never traps) for an out-of-range row or column,
/// an unknown name, a NULL where a value is required, or text that is not a valid value of the
/// asked type; messages name the row and column, never the value.
///
/// `@unchecked Sendable`: the object is immutable after creation and libpq's result objects are
/// read-only, so reading it from several threads is safe.
public final class PGResult: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Number of rows returned (0 for commands without rows).
    public let rowCount: Int
    /// Number of columns.
    public let columnCount: Int
    private let names: [String]
    private let indexByName: [String: Int]

    /// Takes ownership of a successful result.
    init(owning handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
        var names = [String]()
        var index = [String: Int]()
        for i in 0..<columnCount {
            let name = PQfname(handle, Int32(i)).map { String(cString: $0) } ?? ""
            names.append(name)
            if index[name] == nil { index[name] = i }
        }
        self.names = names
        self.indexByName = index
    }

    deinit { PQclear(handle) }

    /// `0..<rowCount`, for `for row in result.rows`.
    public var rows: Range<Int> { 0..<rowCount }

    /// Column names in order, as the server named them.
    public var columnNames: [String] { names }

    /// Rows affected by INSERT/UPDATE/DELETE/SELECT/MOVE/FETCH/COPY (`PQcmdTuples`); 0 otherwise.
    public var affectedRowCount: Int {
        guard let p = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: p)) ?? 0
    }

    /// The command tag, e.g. `INSERT 0 3`, `UPDATE 1`, `SELECT 2`.
    public var commandTag: String {
        PQcmdStatus(handle).map { String(cString: $0) } ?? ""
    }

    /// Index of the first column named exactly `name`.
    /// - Throws: `DB_DECODE` when no column has that name.
    public func columnIndex(named name: String) throws -> Int {
        guard let i = indexByName[name] else {
            throw PGError(code: .decode, message: "result has no column named \"\(name)\"")
        }
        return i
    }

    // MARK: - Values

    /// True when the value at (`row`, `column`) is SQL NULL.
    /// - Throws: `DB_DECODE` for a bad row or column.
    public func isNull<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Bool {
        let c = try checkedColumn(row, column)
        return PQgetisnull(handle, Int32(row), Int32(c)) == 1
    }

    /// The value decoded as `T`; with an optional `T` (e.g. `String?.self`) NULL yields nil.
    /// - Throws: `DB_DECODE` for a bad row or column, NULL into a non-optional type, or invalid text.
    public func decode<T: PGDecodable, C: PGColumnKey>(_ row: Int, _ column: C, as type: T.Type = T.self) throws -> T {
        let c = try checkedColumn(row, column)
        if PQgetisnull(handle, Int32(row), Int32(c)) == 1 {
            if let nullValue = T.pgNull { return nullValue }
            throw PGError(code: .decode, message: "row \(row) column \"\(names[c])\" is NULL, expected \(T.self)")
        }
        let text = rawText(row, c)
        guard let value = T(pgText: text) else {
            throw PGError(code: .decode, message: "row \(row) column \"\(names[c])\" is not a valid \(T.self)")
        }
        return value
    }

    /// The value as text (any type's text form). Throws `DB_DECODE` on NULL.
    public func string<C: PGColumnKey>(_ row: Int, _ column: C) throws -> String { try decode(row, column) }
    /// An integer column (`int2/int4/int8`, or numeric text without fraction) as `Int64`.
    public func int64<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Int64 { try decode(row, column) }
    /// An integer column as `Int`.
    public func int<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Int { try decode(row, column) }
    /// A `bool` column (`t` / `f`).
    public func bool<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Bool { try decode(row, column) }
    /// A `float4/float8/numeric` column as `Double` (`Infinity`, `-Infinity`, `NaN` included).
    public func double<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Double { try decode(row, column) }
    /// A `timestamptz` (or `timestamp`, taken as UTC, or `date`) column; `infinity` does not decode.
    public func date<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Date { try decode(row, column) }
    /// A `uuid` column.
    public func uuid<C: PGColumnKey>(_ row: Int, _ column: C) throws -> UUID { try decode(row, column) }
    /// A `bytea` column (hex output format, which the connection sets).
    public func bytes<C: PGColumnKey>(_ row: Int, _ column: C) throws -> [UInt8] { try decode(row, column) }

    // MARK: - Internals

    private func checkedColumn<C: PGColumnKey>(_ row: Int, _ column: C) throws -> Int {
        let c = try column.pgColumnIndex(in: self)
        guard c >= 0, c < columnCount else {
            throw PGError(code: .decode, message: "column \(c) out of range (result has \(columnCount))")
        }
        guard row >= 0, row < rowCount else {
            throw PGError(code: .decode, message: "row \(row) out of range (result has \(rowCount))")
        }
        return c
    }

    private func rawText(_ row: Int, _ column: Int) -> String {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let p = PQgetvalue(handle, Int32(row), Int32(column)) else { return "" }
        return p.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// A way to name a result column: its index (`Int`) or its exact name (`String`).
public protocol PGColumnKey {
    /// The 0-based column index in `result`. Throws `DB_DECODE` for an unknown name.
    func pgColumnIndex(in result: PGResult) throws -> Int
}

extension Int: PGColumnKey {
    /// The integer itself.
    public func pgColumnIndex(in result: PGResult) throws -> Int { self }
}

extension String: PGColumnKey {
    /// The first column with exactly this name.
    public func pgColumnIndex(in result: PGResult) throws -> Int { try result.columnIndex(named: self) }
}
