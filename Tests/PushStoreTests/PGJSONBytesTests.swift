import XCTest
@testable import PushStore

/// `PGValue.jsonUTF8`: a `json` parameter sent as its UTF-8 bytes in binary format (the batch
/// record's path, `RecordJSON`), beside text parameters, through `exec` and `execPrepared`.
final class PGJSONBytesTests: PGTestCase {
    private let sql = "SELECT $1::json ->> 'name' AS name, json_array_length($1::json -> 'list') AS n, $2::int AS k"

    func testBytesReachTheServerAsTheirJSONTextBesideTextParameters() throws {
        let bytes = Array(#"{"name":"Zoë ✓ \"q\"","list":[1,2,3]}"#.utf8)
        for prepared in [false, true] {
            let r = prepared
                ? try conn.execPrepared(name: "json_bytes", sql: sql, params: [.jsonUTF8(bytes), .int(7)])
                : try conn.exec(sql, [.jsonUTF8(bytes), .int(7)])
            XCTAssertEqual(try r.string(0, "name"), "Zoë ✓ \"q\"", "prepared: \(prepared)")
            XCTAssertEqual(try r.int(0, "n"), 3)
            XCTAssertEqual(try r.int(0, "k"), 7)
        }
        // The server receives the bytes exactly: its own text of the value is them.
        let echoed = try conn.exec("SELECT $1::json::text AS t", [.jsonUTF8(bytes)])
        XCTAssertEqual(Array(try echoed.string(0, "t").utf8), bytes)
    }

    func testLargeValueAndSQLNullBeside() throws {
        let list = (0..<50_000).map(String.init).joined(separator: ",")
        let bytes = Array(#"{"name":"big","list":[\#(list)]}"#.utf8)
        let r = try conn.exec("SELECT json_array_length($1::json -> 'list') AS n, $2::text IS NULL AS null2",
                              [.jsonUTF8(bytes), nil])
        XCTAssertEqual(try r.int(0, "n"), 50_000)
        XCTAssertEqual(try r.bool(0, "null2"), true)
    }

    func testNULIsRefusedBeforeSendingAndBadBytesAreTheServersError() throws {
        let nul = expectPGError { try self.conn.exec(self.sql, [.jsonUTF8(Array(#"{"name":"a\#u{0}b"}"#.utf8)), .int(1)]) }
        XCTAssertEqual(nul?.code, .encode)
        XCTAssertTrue(conn.isHealthy)
        let notJSON = expectPGError { try self.conn.exec(self.sql, [.jsonUTF8(Array("{name".utf8)), .int(1)]) }
        XCTAssertEqual(notJSON?.sqlState, "22P02", "invalid JSON: the server's error, the session kept")
        let badUTF8 = expectPGError { try self.conn.exec(self.sql, [.jsonUTF8([0x7b, 0xff, 0x7d]), .int(1)]) }
        XCTAssertEqual(badUTF8?.sqlState, "22021", "not UTF-8: the server's encoding check")
        let empty = expectPGError { try self.conn.exec(self.sql, [.jsonUTF8([]), .int(1)]) }
        XCTAssertEqual(empty?.sqlState, "22P02", "no bytes is the empty text, not JSON")
        XCTAssertEqual(try conn.exec("SELECT 1 AS one").int(0, "one"), 1, "the session still works")
    }

    func testEncodedFormIsTheText() throws {
        XCTAssertEqual(try PGValue.jsonUTF8(Array(#"{"a":1}"#.utf8)).encoded(), #"{"a":1}"#)
        XCTAssertEqual(PGValue.jsonUTF8([]).typeOID, 114)
    }
}
