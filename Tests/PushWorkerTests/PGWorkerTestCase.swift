import Foundation
import PushStore
import PushTestSupport
@testable import PushWorker
import XCTest

/// Base for the worker tests that need PostgreSQL itself (locking, plans, faults, the SQL
/// functions of the API side): `WorkerTestCase` on a fresh migrated database, with the test's
/// own connection (`conn`) and the worker's (`workerConn`).
class PGWorkerTestCase: WorkerTestCase {
    override class var backend: Backend { .postgres }
    var database: PGTestDatabase!
    /// The test's own session (setup and assertions).
    var conn: PGConnection!
    /// The session the worker runs on.
    var workerConn: PGConnection!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let pg = try XCTUnwrap(world as? PGWorld)
        database = pg.database
        conn = pg.conn
        workerConn = try database.connect()
        workerSession = PGQueueStore(connection: workerConn)
    }

    override func tearDownWithError() throws {
        conn = nil
        workerConn = nil
        database = nil
        try super.tearDownWithError()
    }

    /// `drain` on `connection`.
    func drain(_ worker: Worker, connection: PGConnection, timeout: TimeInterval = 30) throws {
        try drain(worker, session: PGQueueStore(connection: connection), timeout: timeout)
    }

    func int(_ sql: String, _ params: [PGValue?] = []) throws -> Int {
        try conn.exec(sql, params).int(0, 0)
    }
}
