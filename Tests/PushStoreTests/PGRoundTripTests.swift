import XCTest
@testable import PushStore

/// Values sent as parameters come back unchanged through a real server, alone and inside arrays
/// expanded by `unnest` (the multi-row write shape the queue uses).
final class PGRoundTripTests: PGTestCase {
    static let nastyStrings: [String] = [
        "", " ", "'", "''", "\"", "\\", "\\\\", "\\x00", "NULL", "null", "{", "}", "{a,b}", ",", "a,b",
        "'; DROP TABLE pf; --", "$1", "$$", "E'\\n'", " leading", "trailing ", "\t\n\r", "\"quoted\"",
        "a\"b\\c{d}e,f", "é ß 漢字 🚀 \u{301}", "\u{7f}\u{1}", String(repeating: "x\"\\,", count: 25_000),
    ]

    func testNastyStringsRoundTripAsParametersUnchanged() throws {
        for s in Self.nastyStrings {
            let r = try conn.exec("SELECT $1::text AS v, length($1::text) AS n", [.text(s)])
            XCTAssertEqual(try r.string(0, "v"), s)
            XCTAssertEqual(try r.int(0, "n"), s.unicodeScalars.count)
            let p = try conn.execPrepared(name: "echo", sql: "SELECT $1::text", params: [.text(s)])
            XCTAssertEqual(try p.string(0, 0), s)
        }
    }

    func testTextArrayThroughUnnestKeepsNastyElementsNullsAndOrder() throws {
        let elements: [String?] = Self.nastyStrings.map { $0 } + [nil, "", nil]
        let r = try conn.exec("SELECT v FROM unnest($1) WITH ORDINALITY AS t(v, i) ORDER BY i", [.textArray(elements)])
        XCTAssertEqual(r.rowCount, elements.count)
        for row in r.rows {
            XCTAssertEqual(try r.decode(row, "v", as: String?.self), elements[row], "row \(row)")
        }
    }

    func testMultiRowInsertThroughParallelUnnestArraysRoundTripsEveryType() throws {
        try conn.exec("""
            CREATE TABLE t (i int PRIMARY KEY, id uuid, n bigint, flag bool, at timestamptz, data bytea, label text)
            """)
        let ids: [UUID?] = [UUID(), nil, UUID()]
        let numbers: [Int64?] = [Int64.max, Int64.min, nil]
        let flags: [Bool?] = [true, nil, false]
        let dates: [Date?] = [Date(timeIntervalSince1970: 1_795_868_168.123456), nil, Date(timeIntervalSince1970: -1.5)]
        let blobs: [[UInt8]?] = [Array(0...255), [], nil]
        let labels: [String?] = ["a\"b", nil, "{NULL}"]
        let insert = try conn.exec("""
            INSERT INTO t SELECT * FROM unnest($1::int8[], $2, $3, $4, $5, $6, $7)
            """, [.int64Array([1, 2, 3]), .uuidArray(ids), .int64Array(numbers), .boolArray(flags),
                  .dateArray(dates), .byteaArray(blobs), .textArray(labels)])
        XCTAssertEqual(insert.affectedRowCount, 3)
        let r = try conn.exec("SELECT id, n, flag, at, data, label FROM t ORDER BY i")
        for row in 0..<3 {
            XCTAssertEqual(try r.decode(row, "id", as: UUID?.self), ids[row])
            XCTAssertEqual(try r.decode(row, "n", as: Int64?.self), numbers[row])
            XCTAssertEqual(try r.decode(row, "flag", as: Bool?.self), flags[row])
            XCTAssertEqual(try r.decode(row, "at", as: Date?.self).map(PGTimestamp.microseconds),
                           dates[row].map(PGTimestamp.microseconds))
            XCTAssertEqual(try r.decode(row, "data", as: [UInt8]?.self), blobs[row])
            XCTAssertEqual(try r.decode(row, "label", as: String?.self), labels[row])
        }
    }

    func testByteaRoundTripsEveryByteValue() throws {
        let all = (0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let r = try conn.exec("SELECT $1::bytea, length($1::bytea), $2::bytea", [.bytea(all), .bytea([])])
        XCTAssertEqual(try r.bytes(0, 0), all)
        XCTAssertEqual(try r.int(0, 1), all.count)
        XCTAssertEqual(try r.bytes(0, 2), [])
    }

    func testTimestampsRoundTripToTheMicrosecondAndMatchServerParsing() throws {
        let samples = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_795_868_168.654321),
                       Date(timeIntervalSince1970: -86_400.000001), Date(timeIntervalSince1970: 253_402_300_799.999999),
                       Date(timeIntervalSince1970: -62_135_596_800), Date(timeIntervalSince1970: -63_524_000_000)]
        for date in samples {
            let r = try conn.exec("SELECT $1::timestamptz, (extract(epoch FROM $1::timestamptz) * 1000000)::bigint", [.date(date)])
            XCTAssertEqual(PGTimestamp.microseconds(try r.date(0, 0)), PGTimestamp.microseconds(date))
            XCTAssertEqual(try r.int64(0, 1), PGTimestamp.microseconds(date), "server reads the same instant")
        }
        // Whatever the session's TimeZone, the instant decodes the same.
        try conn.exec("SET TimeZone = 'Asia/Kolkata'")
        let r = try conn.exec("SELECT '2026-01-02 03:04:05.678901+00'::timestamptz AS at, '2026-01-02'::date AS d")
        XCTAssertTrue(try r.string(0, "at").hasSuffix("+05:30"))
        XCTAssertEqual(PGTimestamp.microseconds(try r.date(0, "at")), 1_767_323_045_678_901)
        XCTAssertEqual(PGTimestamp.microseconds(try r.date(0, "d")), 1_767_312_000_000_000)
    }

    func testUntypedScalarsTakeTheTypeTheirContextAsksFor() throws {
        try conn.exec("CREATE TYPE state AS ENUM ('queued', 'done')")
        try conn.exec("""
            CREATE TABLE t (small int2, at timestamptz, flag bool, data bytea, id uuid, doc jsonb, s state, f float4)
            """)
        let at = Date(timeIntervalSince1970: 1_795_868_168.5)
        let id = UUID()
        let params: [PGValue?] = [.int(7), .date(at), .bool(true), .bytea([1, 2]), .uuid(id), .text(#"{"b":1}"#),
                                  .text("queued"), .double(0.5)]
        try conn.exec("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", params)
        let r = try conn.exec("""
            SELECT count(*) FROM t WHERE small = $1 AND at = $2 AND flag = $3 AND data = $4 AND id = $5
              AND doc = $6 AND s = $7 AND f = $8 AND at > $2 - make_interval(secs => $9)
            """, params + [.int(1)])
        XCTAssertEqual(try r.int(0, 0), 1)
        XCTAssertEqual(try conn.exec("SELECT repeat('ab', $1)", [.int(2)]).string(0, 0), "abab", "int4 argument")
    }

    func testNullParametersAreSQLNullAndTypedGettersRefuseThem() throws {
        let r = try conn.exec("SELECT $1::text AS a, $2::bigint AS b, $3::text IS NULL AS c", [nil, nil, nil])
        XCTAssertTrue(try r.isNull(0, "a"))
        XCTAssertTrue(try r.isNull(0, 1))
        XCTAssertTrue(try r.bool(0, "c"))
        XCTAssertNil(try r.decode(0, "a", as: String?.self))
        XCTAssertNil(try r.decode(0, "b", as: Int64?.self))
        XCTAssertEqual(expectPGError { _ = try r.string(0, "a") }?.code, .decode)
        XCTAssertEqual(expectPGError { _ = try r.int64(0, "b") }?.code, .decode)
    }

    func testTypedGettersReadServerValuesByIndexAndName() throws {
        let id = UUID()
        let r = try conn.exec("""
            SELECT 42::int2 AS small, -7::int8 AS big, true AS yes, false AS no, 1.5::float8 AS f,
                   'Infinity'::float8 AS inf, 3.25::numeric AS num, $1::uuid AS id, '\\x0aff'::bytea AS b, 'txt' AS s
            """, [.uuid(id)])
        XCTAssertEqual(r.columnNames, ["small", "big", "yes", "no", "f", "inf", "num", "id", "b", "s"])
        XCTAssertEqual(try r.int(0, "small"), 42)
        XCTAssertEqual(try r.int64(0, 1), -7)
        XCTAssertTrue(try r.bool(0, "yes"))
        XCTAssertFalse(try r.bool(0, "no"))
        XCTAssertEqual(try r.double(0, "f"), 1.5)
        XCTAssertEqual(try r.double(0, "inf"), .infinity)
        XCTAssertEqual(try r.double(0, "num"), 3.25)
        XCTAssertEqual(try r.uuid(0, "id"), id)
        XCTAssertEqual(try r.bytes(0, "b"), [0x0a, 0xff])
        XCTAssertEqual(try r.string(0, "s"), "txt")
        XCTAssertEqual(try r.decode(0, "big", as: Int32.self), -7)
    }

    func testDecodeFailuresThrowDecodeErrorsInsteadOfCrashing() throws {
        let r = try conn.exec("SELECT 'abc' AS s, 99999999999 AS big, 'secret-token' AS tok")
        for attempt in [{ _ = try r.int64(0, "s") }, { _ = try r.uuid(0, "s") }, { _ = try r.bytes(0, "s") },
                        { _ = try r.bool(0, "s") }, { _ = try r.date(0, "s") }, { _ = try r.double(0, "s") },
                        { _ = try r.decode(0, "big", as: Int32.self) }, { _ = try r.string(1, "s") },
                        { _ = try r.string(-1, 0) }, { _ = try r.string(0, 3) }, { _ = try r.string(0, "nope") },
                        { _ = try r.int(0, "tok") }] as [() throws -> Void] {
            let error = expectPGError(attempt)
            XCTAssertEqual(error?.code, .decode)
            XCTAssertFalse(error?.message.contains("secret-token") ?? true, "messages never carry the value")
        }
    }
}
