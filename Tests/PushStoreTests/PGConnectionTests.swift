import XCTest
@testable import PushStore

/// Statements, errors with SQLSTATEs, transactions, prepared statements, timeouts and reconnects
/// against a real server.
final class PGConnectionTests: PGTestCase {
    func testExecRefusesSeveralStatementsSoParametersCannotSmuggleSQL() throws {
        let error = expectPGError { try self.conn.exec("SELECT 1; SELECT 2") }
        XCTAssertEqual(error?.code, .query)
        XCTAssertEqual(error?.sqlState, "42601")
        XCTAssertTrue(conn.isHealthy)
    }

    func testUniqueViolationReports23505WithConstraintAndKeepsValuesOutOfMessage() throws {
        try conn.exec("CREATE TABLE devices (token text CONSTRAINT devices_token_key UNIQUE)")
        try conn.exec("INSERT INTO devices VALUES ($1)", ["tok-secret-123"])
        let error = expectPGError { try self.conn.exec("INSERT INTO devices VALUES ($1)", ["tok-secret-123"]) }
        XCTAssertEqual(error?.code, .query)
        XCTAssertEqual(error?.sqlState, "23505")
        XCTAssertEqual(error?.isUniqueViolation, true)
        XCTAssertEqual(error?.isRetryableTransient, false)
        XCTAssertEqual(error?.isConnectionLost, false)
        XCTAssertEqual(error?.constraint, "devices_token_key")
        XCTAssertFalse(error?.message.contains("tok-secret-123") ?? true)
        XCTAssertFalse(error?.description.contains("tok-secret-123") ?? true)
        XCTAssertTrue(error?.detail?.contains("tok-secret-123") ?? false, "the value is only in detail")
    }

    func testReadOnlyTransactionWriteReports25006AsReadOnlyAndTransient() throws {
        try conn.exec("CREATE TABLE t (x int)")
        let error = expectPGError {
            try self.conn.transaction { c in
                try c.exec("SET TRANSACTION READ ONLY")
                try c.exec("INSERT INTO t VALUES (1)")
            }
        }
        XCTAssertEqual(error?.sqlState, "25006")
        XCTAssertEqual(error?.isReadOnly, true)
        XCTAssertEqual(error?.isRetryableTransient, true)
        XCTAssertFalse(conn.isInTransaction, "rolled back")
    }

    func testStatementTimeoutCancelsWith57014AndIsKeptAcrossReset() throws {
        try conn.setStatementTimeout(milliseconds: 100)
        let error = expectPGError { try self.conn.exec("SELECT pg_sleep(5)") }
        XCTAssertEqual(error?.sqlState, "57014")
        XCTAssertEqual(error?.isRetryableTransient, true)
        try conn.reset()
        XCTAssertEqual(try conn.exec("SHOW statement_timeout").string(0, 0), "100ms")
    }

    func testLockTimeoutReports55P03WhileAnotherSessionHoldsTheRow() throws {
        try conn.exec("CREATE TABLE t (id int PRIMARY KEY)")
        try conn.exec("INSERT INTO t VALUES (1)")
        let other = try database.connect()
        try other.exec("BEGIN")
        try other.exec("SELECT * FROM t WHERE id = 1 FOR UPDATE")
        try conn.setLockTimeout(milliseconds: 100)
        let error = expectPGError { try self.conn.exec("UPDATE t SET id = 2 WHERE id = 1") }
        XCTAssertEqual(error?.sqlState, "55P03")
        XCTAssertEqual(error?.isRetryableTransient, true)
        try other.exec("ROLLBACK")
    }

    func testTransactionCommitsOnReturnAndRollsBackOnThrow() throws {
        struct Boom: Error {}
        try conn.exec("CREATE TABLE t (x int)")
        let value = try conn.transaction { c -> Int in
            try c.exec("INSERT INTO t VALUES (1)")
            return 7
        }
        XCTAssertEqual(value, 7)
        XCTAssertThrowsError(try conn.transaction { c in
            try c.exec("INSERT INTO t VALUES (2)")
            throw Boom()
        }) { XCTAssertTrue($0 is Boom) }
        XCTAssertFalse(conn.isInTransaction)
        let r = try conn.exec("SELECT x FROM t ORDER BY x")
        XCTAssertEqual(try r.rows.map { try r.int($0, 0) }, [1])
    }

    func testNestedTransactionIsASavepointThatRollsBackAlone() throws {
        struct Boom: Error {}
        try conn.exec("CREATE TABLE t (x int)")
        try conn.transaction(isolation: .serializable) { c in
            try c.exec("INSERT INTO t VALUES (1)")
            XCTAssertThrowsError(try c.transaction { inner in
                try inner.exec("INSERT INTO t VALUES (2)")
                throw Boom()
            })
            try c.transaction { inner in try inner.exec("INSERT INTO t VALUES (3)") }
            XCTAssertEqual(try c.exec("SHOW transaction_isolation").string(0, 0), "serializable")
        }
        let r = try conn.exec("SELECT x FROM t ORDER BY x")
        XCTAssertEqual(try r.rows.map { try r.int($0, 0) }, [1, 3])
    }

    func testSwallowedErrorInsideTransactionCommitsNothing() throws {
        try conn.exec("CREATE TABLE t (x int PRIMARY KEY)")
        let error = expectPGError {
            try self.conn.transaction { c in
                try c.exec("INSERT INTO t VALUES (1)")
                _ = try? c.exec("INSERT INTO t VALUES (1)")
            }
        }
        XCTAssertEqual(error?.sqlState, "25P02")
        XCTAssertFalse(conn.isInTransaction)
        XCTAssertEqual(try conn.exec("SELECT count(*) FROM t").int(0, 0), 0)
    }

    func testSerializationFailureReports40001AsRetryable() throws {
        try conn.exec("CREATE TABLE t (id int PRIMARY KEY, v int)")
        try conn.exec("INSERT INTO t VALUES (1, 0), (2, 0)")
        let other = try database.connect()
        try conn.exec("BEGIN ISOLATION LEVEL SERIALIZABLE")
        try other.exec("BEGIN ISOLATION LEVEL SERIALIZABLE")
        _ = try conn.exec("SELECT sum(v) FROM t")
        _ = try other.exec("SELECT sum(v) FROM t")
        try conn.exec("UPDATE t SET v = 1 WHERE id = 1")
        // Whichever statement detects the cycle (second update or a commit) fails with 40001.
        let error = expectPGError {
            try other.exec("UPDATE t SET v = 1 WHERE id = 2")
            try self.conn.exec("COMMIT")
            try other.exec("COMMIT")
        }
        XCTAssertEqual(error?.sqlState, "40001")
        XCTAssertEqual(error?.isSerializationFailure, true)
        XCTAssertEqual(error?.isRetryableTransient, true)
    }

    func testPreparedStatementIsPreparedOnceAndNameReuseWithOtherSQLIsRefused() throws {
        for n in 1...3 {
            let r = try conn.execPrepared(name: "add", sql: "SELECT $1::int8 + 1", params: [.int64(Int64(n))])
            XCTAssertEqual(try r.int64(0, 0), Int64(n) + 1)
        }
        XCTAssertEqual(try conn.exec("SELECT count(*) FROM pg_prepared_statements WHERE name = 'add'").int(0, 0), 1)
        XCTAssertEqual(expectPGError { try self.conn.execPrepared(name: "add", sql: "SELECT 2") }?.code, .usage)
        // A failed prepare is not cached: the next call prepares again.
        XCTAssertEqual(expectPGError { try self.conn.execPrepared(name: "bad", sql: "SELEC 1") }?.sqlState, "42601")
        XCTAssertEqual(expectPGError { try self.conn.execPrepared(name: "bad", sql: "SELEC 1") }?.sqlState, "42601")
    }

    func testAffectedRowCountAndCommandTag() throws {
        try conn.exec("CREATE TABLE t (x int)")
        let insert = try conn.exec("INSERT INTO t SELECT generate_series(1, 5)")
        XCTAssertEqual(insert.affectedRowCount, 5)
        XCTAssertEqual(insert.commandTag, "INSERT 0 5")
        XCTAssertEqual(try conn.exec("UPDATE t SET x = 0 WHERE x > $1", [3]).affectedRowCount, 2)
        XCTAssertEqual(try conn.exec("DELETE FROM t WHERE x = -1").affectedRowCount, 0)
    }

    func testTerminatedBackendIsReportedAsConnectionLostAndResetReconnects() throws {
        try conn.listen("wake")
        let admin = try database.connect()
        let oldPID = conn.serverProcessID
        XCTAssertTrue(try admin.exec("SELECT pg_terminate_backend($1)", [.int(Int(oldPID))]).bool(0, 0))
        let error = expectPGError { try self.conn.exec("SELECT 1") }
        XCTAssertEqual(error?.isConnectionLost, true)
        XCTAssertEqual(error?.isRetryableTransient, true)
        XCTAssertFalse(conn.isHealthy)
        try conn.reset()
        XCTAssertTrue(conn.isHealthy)
        XCTAssertNotEqual(conn.serverProcessID, oldPID)
        XCTAssertEqual(try conn.exec("SELECT 1").int(0, 0), 1)
        // The LISTEN survives the reset.
        try admin.notify("wake", payload: "after-reset")
        XCTAssertEqual(try conn.waitForNotifications(timeout: 2).map(\.payload), ["after-reset"])
    }

    func testConnectToMissingServerThrowsConnectionError() {
        let error = expectPGError {
            _ = try PGConnection.connect("postgresql:///postgres?host=/nonexistent-pf-dir&port=1", connectTimeoutSeconds: 2)
        }
        XCTAssertEqual(error?.code, .connection)
        XCTAssertEqual(error?.isConnectionLost, true)
        XCTAssertFalse(error?.message.isEmpty ?? true)
    }

    func testErrorClassificationTable() {
        func e(_ state: String?, broken: Bool = false) -> PGError {
            PGError(code: .query, message: "m", sqlState: state, connectionBroken: broken)
        }
        XCTAssertTrue(e("57P01").isConnectionLost)
        XCTAssertTrue(e("08006").isConnectionLost)
        XCTAssertTrue(e(nil, broken: true).isConnectionLost)
        XCTAssertFalse(e("23505").isConnectionLost)
        XCTAssertTrue(e("40P01").isRetryableTransient)
        XCTAssertFalse(e("42P01").isRetryableTransient)
        XCTAssertFalse(e("23505").isRetryableTransient)
        XCTAssertEqual(e("40001").description, "DB_QUERY [40001]: m")
    }
}
