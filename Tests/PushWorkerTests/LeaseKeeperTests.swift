import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// Issue 4, leases: the keeper extends what the worker holds, reports a job lost only when two
/// heartbeats in a row miss it while it is still held (one miss can be the worker's own record
/// committing just before it lets go of the job), and never reports a job already let go.
final class LeaseKeeperTests: WorkerTestCase {
    private func claimOne() throws -> ClaimedJob {
        let app = try createApp()
        _ = try register(app, user: "u")
        _ = try enqueue(app, users: ["u"])
        return try XCTUnwrap(try PGQueueStore(connection: workerConn).jobClaimBatch(owner: "k", limit: 1, leaseSeconds: 30).first)
    }

    private func keeper() -> LeaseKeeper {
        let url = database.conninfo
        return LeaseKeeper(leaseSeconds: 0.3, log: Self.quietLog) { PGQueueStore(connection: try PGConnection.connect(url)) }  // beats every 0.1 s
    }

    private func wait(until condition: () -> Bool, timeout: TimeInterval = 5) {
        let end = Date().addingTimeInterval(timeout)
        while !condition() && Date() < end { Thread.sleep(forTimeInterval: 0.01) }
    }

    func testAHeldJobIsExtendedAndNeverLost() throws {
        let job = try claimOne()
        let k = keeper()
        k.hold(job.id, token: job.leaseToken)
        k.start()
        defer { k.stop() }
        func left() -> Double {
            (try? conn.exec("SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM push_jobs WHERE id = $1::bigint",
                            [.int64(job.id)]).double(0, 0)) ?? 30
        }
        wait(until: { left() < 1 })
        XCTAssertLessThan(left(), 1, "the lease was set to the keeper's 0.3 s by a heartbeat (the claim gave 30 s)")
        Thread.sleep(forTimeInterval: 0.5)   // several more heartbeats
        XCTAssertFalse(k.isLost(job.id), "a job still held by its token is never reported lost")
    }

    func testAJobTakenOverIsReportedLostAfterTwoMissedHeartbeats() throws {
        let job = try claimOne()
        try conn.exec("UPDATE push_jobs SET lease_token = gen_random_uuid(), lease_owner = 'other' WHERE id = $1::bigint",
                      [.int64(job.id)])
        let k = keeper()
        k.hold(job.id, token: job.leaseToken)
        k.start()
        defer { k.stop() }
        Thread.sleep(forTimeInterval: 0.15)   // about one heartbeat: a single miss is not enough
        wait(until: { k.isLost(job.id) })
        XCTAssertTrue(k.isLost(job.id))
        k.release(job.id)
        XCTAssertFalse(k.isLost(job.id))
    }

    func testAJobRecordedThenLetGoBeforeTheNextHeartbeatIsNeverLost() throws {
        let app = try createApp()
        for u in ["u1", "u2"] {
            _ = try register(app, user: u)
            _ = try enqueue(app, users: [u])
        }
        let jobs = try PGQueueStore(connection: workerConn).jobClaimBatch(owner: "k", limit: 2, leaseSeconds: 30)
        XCTAssertEqual(jobs.count, 2)
        let (job, sentinel) = (jobs[0], jobs[1])
        let url = database.conninfo
        // Beats every second: the check below must land between the first and second heartbeat,
        // so the margin is a second even on a loaded machine.
        let k = LeaseKeeper(leaseSeconds: 3, log: Self.quietLog) { PGQueueStore(connection: try PGConnection.connect(url)) }
        k.hold(job.id, token: job.leaseToken)
        k.hold(sentinel.id, token: sentinel.leaseToken)
        // The worker's record committed (the job completed, its token cleared), not yet let go of.
        try conn.exec("UPDATE push_jobs SET state = 'completed', finalized_at = now(), lease_token = NULL, lease_owner = NULL, "
                      + "lease_expires_at = NULL WHERE id = $1::bigint", [.int64(job.id)])
        k.start()
        defer { k.stop() }
        // The first heartbeat shortens the sentinel's lease from 30 s to 3 s: it ran and missed the job.
        wait(until: {
            ((try? conn.exec("SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM push_jobs WHERE id = $1::bigint",
                             [.int64(sentinel.id)]).double(0, 0)) ?? 30) < 5
        })
        XCTAssertFalse(k.isLost(job.id), "one miss is not a loss")
        k.release(job.id)
        Thread.sleep(forTimeInterval: 2.2)   // two more heartbeats
        XCTAssertFalse(k.isLost(job.id))
        XCTAssertFalse(k.isLost(sentinel.id))
    }
}
