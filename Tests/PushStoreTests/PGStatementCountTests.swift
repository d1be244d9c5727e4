import XCTest
@testable import PushStore

/// `PGConnection.statementCount`: one per server round trip, which `scripts/bench` reports as
/// "database round trips per batch" (DESIGN: a constant number whatever the batch size).
final class PGStatementCountTests: PGTestCase {
    func testStatementCountAddsOnePerRoundTripAndOneMoreForAFirstPrepare() throws {
        let start = conn.statementCount
        try conn.exec("SELECT 1")
        XCTAssertEqual(conn.statementCount, start + 1)
        try conn.execPrepared(name: "count_probe", sql: "SELECT $1::int", params: [.int(1)])
        XCTAssertEqual(conn.statementCount, start + 3, "PQprepare, then PQexecPrepared, on first use")
        try conn.execPrepared(name: "count_probe", sql: "SELECT $1::int", params: [.int(2)])
        XCTAssertEqual(conn.statementCount, start + 4, "prepared once per session")
        _ = try conn.transaction { c in try c.exec("SELECT 1") }
        XCTAssertEqual(conn.statementCount, start + 7, "BEGIN, the statement, COMMIT")
        try conn.execScript("SELECT 1; SELECT 2")
        XCTAssertEqual(conn.statementCount, start + 8, "a script is one round trip")
    }

    func testRejectedStatementStillCountsAsARoundTrip() throws {
        let start = conn.statementCount
        _ = expectPGError { try self.conn.exec("SELECT * FROM no_such_table_here") }
        XCTAssertEqual(conn.statementCount, start + 1, "a rejected statement still cost a round trip")
    }
}
