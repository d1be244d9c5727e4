import PushTestSupport
import XCTest
@testable import PushStore

/// The test-database helper: fresh databases on demand, a loud failure without a server.
final class PGTestDatabaseTests: XCTestCase {
    func testMissingEnvironmentVariableFailsLoudlyNamingScriptsTest() {
        XCTAssertThrowsError(try PGTestDatabase.create(environment: [:])) { error in
            let e = error as? PGError
            XCTAssertEqual(e?.code, .config)
            XCTAssertTrue(e?.message.contains("scripts/test") ?? false)
            XCTAssertTrue(e?.message.contains("PUSHFLEET_TEST_DATABASE_URL") ?? false)
        }
    }

    func testCreateMakesAnEmptyUniquelyNamedDatabaseAndDropRemovesIt() throws {
        let a = try PGTestDatabase.create()
        let b = try PGTestDatabase.create()
        XCTAssertNotEqual(a.name, b.name)
        XCTAssertTrue(a.name.hasPrefix("pf_test_"))
        let c = try a.connect()
        XCTAssertEqual(try c.exec("SELECT current_database()").string(0, 0), a.name)
        XCTAssertEqual(try c.exec("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").int(0, 0), 0)
        try a.drop()
        try b.drop()
        try b.drop()
        let base = try PGConnection.connect(ProcessInfo.processInfo.environment[PGTestDatabase.environmentVariable] ?? "")
        let left = try base.exec("SELECT count(*) FROM pg_database WHERE datname = ANY($1)", [.textArray([a.name, b.name])])
        XCTAssertEqual(try left.int(0, 0), 0)
        XCTAssertEqual(expectFailure { _ = try c.exec("SELECT 1") }, true, "the open session was ended by the drop")
    }

    func testDatabaseReplacementKeepsOtherParametersAndQuotesValues() throws {
        let uri = "postgresql:///postgres?host=/tmp/pf%20sock&port=55432&user=postgres"
        let kv = try PGTestDatabase.replacingDatabase(in: uri, with: "pf_test_x")
        XCTAssertTrue(kv.contains("host='/tmp/pf sock'"), kv)
        XCTAssertTrue(kv.contains("port='55432'"), kv)
        XCTAssertTrue(kv.contains("user='postgres'"), kv)
        XCTAssertTrue(kv.hasSuffix("dbname='pf_test_x'"), kv)
        XCTAssertFalse(kv.contains("dbname='postgres'"), kv)
        let quoted = try PGTestDatabase.replacingDatabase(in: #"host=/s application_name='it\'s'"#, with: "d")
        XCTAssertTrue(quoted.contains(#"application_name='it\'s'"#), quoted)
        XCTAssertThrowsError(try PGTestDatabase.replacingDatabase(in: "postgresql://[bad", with: "d"))
    }

    private func expectFailure(_ body: () throws -> Void) -> Bool {
        do { try body(); return false } catch { return true }
    }
}
