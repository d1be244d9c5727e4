import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// Issue 4, database faults: pushes sent while the connection to PostgreSQL broke are recorded
/// once a connection is back (their jobs stay held meanwhile), never sent again; a lease lost in
/// between drops the outcome to the job's new owner; a worker asked to stop records them before it
/// exits instead of leaving its jobs running until their leases expire.
final class DeferredRecordTests: WorkerTestCase {
    /// Two single-user notifications of one app, one device each.
    private func twoNotifications() throws -> [UUID] {
        let app = try createApp()
        return try ["a", "b"].map { user in
            _ = try register(app, user: user)
            return try enqueue(app, users: [user])
        }
    }

    /// A router that, during its first send, ends the server sessions named by `victims` (from the
    /// test's own connection), so the worker's next statement fails with a broken connection.
    private func breakingRouter(_ victims: @escaping () throws -> String) -> RecordingRouter {
        let router = RecordingRouter()
        let broken = LockedBox(false)
        router.onSend = { [conn] _ in
            guard !broken.value else { return }
            broken.update { $0 = true }
            _ = try? conn?.exec("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE " + (try victims()))
        }
        return router
    }

    /// Claims and sends the two notifications while the worker's session is ended during the send.
    private func sendWhileTheConnectionBreaks() throws -> (notifications: [UUID], worker: Worker, router: RecordingRouter) {
        let notifications = try twoNotifications()
        let pid = workerConn.serverProcessID
        let router = breakingRouter { "pid = \(pid)" }
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 2)
        XCTAssertEqual(router.pushes.count, 2, "both were sent before the record failed")
        XCTAssertEqual(worker.deferredRecordCount, 2)
        return (notifications, worker, router)
    }

    func testPushesSentWhileTheConnectionBrokeAreRecordedOnReconnectAndNeverSentAgain() throws {
        let (notifications, worker, router) = try sendWhileTheConnectionBreaks()
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_deliveries"), 0, "nothing recorded yet")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'running'"), 2,
                       "the jobs stay held under the worker's lease, not given back to be sent again")

        let again = try database.connect()
        XCTAssertEqual(try worker.runOnce(connection: again), 0, "nothing new to claim")
        XCTAssertEqual(worker.deferredRecordCount, 0)
        XCTAssertEqual(router.pushes.count, 2, "recorded, not sent again")
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent")
            XCTAssertEqual(try deliveries(n).count, 1)
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state <> 'completed'"), 0)
    }

    func testADeferredOutcomeWhoseLeaseWasLostMeanwhileIsLeftToTheNewOwner() throws {
        let (notifications, worker, _) = try sendWhileTheConnectionBreaks()
        // While the worker was cut off, its lease on the first notification's job expired and another
        // worker claimed it.
        try conn.exec("""
            UPDATE push_jobs SET lease_token = gen_random_uuid(), lease_owner = 'other'
             WHERE notification_id = $1::uuid AND state = 'running'
            """, [.uuid(notifications[0])])
        XCTAssertEqual(try worker.runOnce(connection: try database.connect()), 0)
        XCTAssertEqual(worker.deferredRecordCount, 0)
        XCTAssertEqual(try deliveries(notifications[0]).count, 0, "the new owner records it, not this worker")
        XCTAssertEqual(try notification(notifications[1]).status, "sent")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'running' AND lease_owner = 'other'"), 1)
    }

    func testAWorkerAskedToStopRecordsWhatItSentBeforeExiting() throws {
        let notifications = try twoNotifications()
        let me = try conn.exec("SELECT pg_backend_pid()").int(0, 0)
        // Every other session of this database: the worker's own and its lease keeper's.
        let router = breakingRouter { "datname = current_database() AND pid <> \(me)" }
        let worker = try makeWorker(router, claimLimit: 16)
        let original = router.onSend
        router.onSend = { pushes in
            original?(pushes)
            worker.requestStop()
        }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            worker.run()
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 20), .success, "run() returns after the stop")
        XCTAssertEqual(router.pushes.count, 2)
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent", "recorded on a new connection before exiting")
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'running'"), 0,
                       "nothing left running under the stopped worker's lease")
    }

    func testJobsClaimedButNotSentWhenTheConnectionBrokeAreGivenBackOnTheNextConnection() throws {
        let notifications = try twoNotifications()
        // The send-time step (which turns a notification job into its batch) ends its own session.
        try conn.execScript("""
            CREATE FUNCTION test_cut_off() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$;
            CREATE TRIGGER test_cut_off BEFORE UPDATE OF kind ON push_jobs
               FOR EACH ROW WHEN (OLD.kind = 'notification' AND NEW.kind = 'batch') EXECUTE FUNCTION test_cut_off();
            """)
        let router = RecordingRouter()
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 2)
        XCTAssertEqual(router.pushes.count, 0, "nothing was sent")
        XCTAssertEqual(worker.deferredReleaseCount, 2, "their give-back could not be written")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'running'"), 2)
        try conn.exec("DROP TRIGGER test_cut_off ON push_jobs")

        XCTAssertEqual(try worker.runOnce(connection: try database.connect()), 2,
                       "given back first thing on the new connection, then claimed again")
        XCTAssertEqual(worker.deferredReleaseCount, 0)
        XCTAssertEqual(router.pushes.count, 2)
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent")
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try int("SELECT max(attempt)::int FROM push_jobs"), 1, "giving back spent no attempt")
    }
}
