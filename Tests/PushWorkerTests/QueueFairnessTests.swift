import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// Issue 4: claims take due work round-robin across apps (priority orders work within an app), and
/// a job that keeps failing is set aside after its attempts, listable and put back by an operator.
final class QueueFairnessTests: WorkerTestCase {
    /// `count` available batch jobs of a fresh app, run_at spread in the past (oldest first).
    private func jobs(app name: String, count: Int, priority: Int = 0, ageSeconds: Int) throws -> UUID {
        let app = try AppStore(connection: conn).appCreate(name: name)
        let n = try NotificationStore(connection: conn).enqueue(EnqueueRequest(appID: app.id, mode: "test", userIDs: ["u"])).id
        // Keep only batch jobs for this test: the enqueue's notification job is removed.
        try conn.exec("DELETE FROM push_jobs WHERE notification_id = $1::uuid", [.uuid(n)])
        try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            SELECT 'batch', $1::uuid, $2::uuid, '{}', $3::int,
                   now() - make_interval(secs => $4::int) + make_interval(secs => g::float8 / 1000)
              FROM generate_series(1, $5::int) AS g
            """, [.uuid(n), .uuid(app.id), .int(priority), .int(ageSeconds), .int(count)])
        return app.id
    }

    func testClaimTakesEachAppsFirstJobBeforeAnyAppsSecond() throws {
        let broadcast = try jobs(app: "broadcast", count: 200, ageSeconds: 60)
        let small = try jobs(app: "small", count: 1, ageSeconds: 1)
        let store = PGQueueStore(connection: conn)
        let claimed = try store.jobClaimBatch(owner: "t", limit: 4, leaseSeconds: 30)
        XCTAssertEqual(claimed.count, 4, "a claim never takes more rows than its limit")
        XCTAssertTrue(claimed.contains { $0.notification.appID == small },
                      "the small app's job, enqueued behind a 200-job broadcast, is in the first claim")
        XCTAssertEqual(claimed.filter { $0.notification.appID == broadcast }.count, 3)
    }

    func testPriorityOrdersWorkWithinAnApp() throws {
        let app = try jobs(app: "mixed", count: 5, priority: 0, ageSeconds: 60)
        let n = try conn.exec("SELECT notification_id FROM push_jobs WHERE app_id = $1::uuid LIMIT 1", [.uuid(app)])
            .uuid(0, 0)
        let urgent = try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            VALUES ('batch', $1::uuid, $2::uuid, '{}', 10, now()) RETURNING id
            """, [.uuid(n), .uuid(app)]).int64(0, "id")
        let claimed = try PGQueueStore(connection: conn).jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30)
        XCTAssertEqual(claimed.map(\.id), [urgent], "the newer job with higher priority goes first")
    }

    func testFailingJobIsDiscardedAfterItsAttemptsThenListedAndRetriedByAnOperator() throws {
        _ = try jobs(app: "poison", count: 1, ageSeconds: 5)
        try conn.exec("UPDATE push_jobs SET max_attempts = 2")
        let store = PGQueueStore(connection: conn)
        for attempt in 1...2 {
            let job = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
            XCTAssertEqual(job.attempt, attempt)
            let state = try store.jobFail(job.lease, error: "boom \(attempt)", retryAt: Date())
            XCTAssertEqual(state, attempt < 2 ? .available : .discarded)
        }
        XCTAssertTrue(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).isEmpty,
                      "a discarded job is never claimed again by itself")
        let listed = try store.jobList(state: .discarded)
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed.first?.lastError, "boom 2")
        XCTAssertTrue(try store.jobRetry(id: listed[0].id))
        let again = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        XCTAssertEqual(again.attempt, 1, "put back with fresh attempts")
    }

    func testAFailureRecordedWithAStaleLeaseTokenChangesNothing() throws {
        _ = try jobs(app: "stale", count: 1, ageSeconds: 5)
        let store = PGQueueStore(connection: conn)
        let job = try XCTUnwrap(try store.jobClaimBatch(owner: "a", limit: 1, leaseSeconds: 30).first)
        XCTAssertNil(try store.jobFail(JobLease(id: job.id, token: UUID()), error: "not mine", retryAt: Date()))
        XCTAssertEqual(try conn.exec("SELECT state FROM push_jobs WHERE id = $1::bigint", [.int64(job.id)]).string(0, 0),
                       "running")
    }
}
