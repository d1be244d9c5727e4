import PushTestSupport
import XCTest
@testable import PushStore

/// Base for tests that need a real server: each test gets its own fresh database
/// (`PGTestDatabase`, from `PUSHFLEET_TEST_DATABASE_URL`) and one open session on it. Without the
/// variable, set-up throws and the test fails (run the suite through `scripts/test`).
class PGTestCase: XCTestCase {
    /// The test's database.
    var database: PGTestDatabase!
    /// A session on `database`.
    var conn: PGConnection!

    override func setUpWithError() throws {
        try super.setUpWithError()
        database = try PGTestDatabase.create()
        conn = try database.connect()
    }

    override func tearDownWithError() throws {
        conn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// Runs `body` expecting a `PGError`, and returns it (fails the test when nothing or
    /// something else is thrown).
    func expectPGError(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> PGError? {
        do {
            try body()
            XCTFail("expected a PGError, nothing was thrown", file: file, line: line)
        } catch let error as PGError {
            return error
        } catch {
            XCTFail("expected a PGError, got \(error)", file: file, line: line)
        }
        return nil
    }
}

/// A value shared between a test and the threads it starts, guarded by a lock.
final class PGLockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    /// The current value.
    var value: Value {
        lock.lock(); defer { lock.unlock() }
        return stored
    }

    /// Changes the value under the lock.
    func update(_ change: (inout Value) -> Void) {
        lock.lock(); defer { lock.unlock() }
        change(&stored)
    }
}
