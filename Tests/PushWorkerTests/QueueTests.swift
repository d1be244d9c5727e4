import Foundation
import PushCore
@testable import PushStore
@testable import PushWorker
import XCTest

/// What only PostgreSQL can show about the queue: concurrent claims never take the same row
/// (`FOR UPDATE SKIP LOCKED`), a large fan-out, a stored row the worker cannot read, operators'
/// commands, the batch load's plan (R-SEND-1 at send time by primary key). Scheduling, claim
/// order, budgets, leases and rescue are in the conformance suite.
final class QueueTests: PGWorkerTestCase {
    /// Two workers (two threads, two connections) claiming 200 jobs 5 at a time never claim the
    /// same job (`FOR UPDATE SKIP LOCKED`), and together claim every job.
    func testTwoWorkersClaimingConcurrentlyNeverClaimTheSameJob() throws {
        let app = try createApp()
        for i in 0..<200 { _ = try enqueue(app, users: ["u\(i % 7)"]) }
        let expected = Set(try { () throws -> [Int64] in
            let r = try conn.exec("SELECT id FROM push_jobs")
            return try r.rows.map { try r.int64($0, "id") }
        }())
        XCTAssertEqual(expected.count, 200)
        let conninfo = database.conninfo
        let claims = LockedBox<[[Int64]]>([[], []])
        let errors = LockedBox<[String]>([])
        let group = DispatchGroup()
        for w in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let c = try PGConnection.connect(conninfo)
                    let q = PGQueueStore(connection: c)
                    while true {
                        let jobs = try q.jobClaimBatch(owner: "worker-\(w)", limit: 5, leaseSeconds: 60)
                        if jobs.isEmpty {
                            let left = try c.exec("SELECT count(*)::int FROM push_jobs WHERE state = 'available'").int(0, 0)
                            if left == 0 { break } else { continue }
                        }
                        XCTAssertLessThanOrEqual(jobs.count, 5)
                        claims.update { $0[w] += jobs.map { $0.id } }
                    }
                } catch {
                    errors.update { $0.append(String(describing: error)) }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(errors.value, [])
        let a = claims.value[0], b = claims.value[1]
        XCTAssertEqual(Set(a).count, a.count, "worker 0 claimed a job twice")
        XCTAssertEqual(Set(b).count, b.count, "worker 1 claimed a job twice")
        XCTAssertTrue(Set(a).isDisjoint(with: Set(b)), "a job was claimed by both workers")
        XCTAssertEqual(Set(a).union(b), expected, "every job claimed")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'running' AND attempt = 1"), 200)
    }

    /// `FOR UPDATE SKIP LOCKED` skips rows another claim holds and still fills the claim from the
    /// rest: a worker claiming while another worker's claim has its first jobs locked gets its
    /// limit's worth of other jobs, not an empty answer (which would idle it until the next poll).
    func testClaimSkipsJobsLockedByAnotherClaimAndStillFillsItsLimit() throws {
        let app = try createApp()
        for i in 0..<20 { _ = try enqueue(app, users: ["u\(i)"]) }
        try conn.exec("BEGIN")
        let locked = try conn.exec("SELECT id FROM push_jobs ORDER BY priority DESC, run_at, id LIMIT 5 FOR UPDATE")
        let lockedIDs = Set(try locked.rows.map { try locked.int64($0, "id") })
        XCTAssertEqual(lockedIDs.count, 5)
        let claimed = try PGQueueStore(connection: workerConn).jobClaimBatch(owner: "w2", limit: 5, leaseSeconds: 30)
        try conn.exec("ROLLBACK")
        XCTAssertEqual(claimed.count, 5, "15 due jobs are free: the claim must not come back short")
        XCTAssertTrue(Set(claimed.map { $0.id }).isDisjoint(with: lockedIDs))
    }

    /// R-DEV-5 / fan-out: 2,000 devices across 100 users (20 each) with batch size 500 become 4
    /// batch jobs, and every device gets exactly one delivery row (sent, charged once).
    func testTwoThousandDeviceAudienceSplitsIntoFourBatchesWithOneDeliveryEach() throws {
        let app = try createApp()
        try conn.exec("BEGIN")
        for u in 0..<100 {
            for d in 0..<20 { try register(app, user: "user-\(u)", platform: d % 2 == 0 ? "ios" : "android",
                                           token: "tok-\(u)-\(d)", appLimit: 10_000) }
        }
        try conn.exec("COMMIT")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_devices WHERE active"), 2000)
        let n = try enqueue(app, users: (0..<100).map { "user-\($0)" })
        try drain(try makeWorker(batchSize: 500), timeout: 120)

        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE notification_id = $1 AND kind = 'batch'", [.uuid(n)]), 4)
        XCTAssertEqual(try int("""
            SELECT count(*)::int FROM push_jobs WHERE notification_id = $1 AND kind = 'batch' AND cardinality(device_ids) = 500
            """, [.uuid(n)]), 4)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_deliveries WHERE notification_id = $1", [.uuid(n)]), 2000)
        XCTAssertEqual(try int("""
            SELECT count(DISTINCT d.device_id)::int FROM push_deliveries d JOIN push_devices v ON v.id = d.device_id
             WHERE d.notification_id = $1 AND d.status = 'sent' AND d.attempts = 1
            """, [.uuid(n)]), 2000)
        let state = try notification(n)
        XCTAssertEqual(state.status, "sent")
        XCTAssertEqual(state.deviceCount, 2000)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state <> 'completed'"), 0)
        try assertLedgerInvariants(n)
    }

    /// A claimed row the worker cannot read (here a batch job whose device ids hold a NULL, which
    /// the queue never writes) fails only its own job, UNDECODABLE_ROW, set aside once out of
    /// attempts; the notification claimed beside it is delivered in the same cycle.
    func testAnUndecodableQueueRowFailsOnlyItsJobAndTheClaimGoesOn() throws {
        let app = try createApp()
        _ = try register(app, user: "good")
        _ = try register(app, user: "bad")
        let bad = try enqueue(app, users: ["bad"])
        let good = try enqueue(app, users: ["good"])
        try conn.exec("""
            UPDATE push_jobs SET kind = 'batch', device_ids = ARRAY[NULL]::uuid[], max_attempts = 1
             WHERE notification_id = $1::uuid
            """, [.uuid(bad)])
        let router = RecordingRouter()
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 1, "only the readable job is handed to the worker")
        XCTAssertEqual(try notification(good).status, "sent")
        XCTAssertEqual(router.pushes.count, 1)
        let row = try conn.exec("SELECT state, last_error FROM push_jobs WHERE notification_id = $1::uuid", [.uuid(bad)])
        XCTAssertEqual(try row.string(0, "state"), "discarded")
        let error = try row.string(0, "last_error")
        XCTAssertTrue(error.hasPrefix("UNDECODABLE_ROW: "), error)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'running'"), 0, "nothing left claimed")
    }

    /// A job that keeps failing is set aside after its attempts, then listed and put back with
    /// fresh attempts by an operator (`pushfleet jobs list --state discarded`, `jobs retry`).
    func testFailingJobIsDiscardedAfterItsAttemptsThenListedAndRetriedByAnOperator() throws {
        let app = try createApp()
        let n = try enqueue(app, users: ["u"])
        try conn.exec("UPDATE push_jobs SET max_attempts = 2 WHERE notification_id = $1::uuid", [.uuid(n)])
        let store = PGQueueStore(connection: conn)
        for attempt in 1...2 {
            let job = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
            XCTAssertEqual(try store.jobFail(job.lease, error: "boom \(attempt)", retryAt: Date()),
                           attempt < 2 ? .available : .discarded)
        }
        let listed = try store.jobList(state: .discarded)
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed.first?.lastError, "boom 2")
        XCTAssertTrue(try store.jobRetry(id: listed[0].id))
        let again = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        XCTAssertEqual(again.attempt, 1, "put back with fresh attempts")
    }

    /// R-SEND-1 at send time (moved here from `SendTimeTargetingTests`, whose scenarios run on both
    /// stores): the batch load probes push_deliveries and push_ledger by primary key per device: with the
    /// tables' statistics up to date, a batch of 500 and 50,000 ledger rows, a plain join or EXISTS
    /// is planned as a hash over every ledger row of the table, read again for each batch.
    func testTheBatchLoadProbesDeliveriesAndLedgerByPrimaryKey() throws {
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 40, batchSize: 10)
        try conn.exec("""
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT $1::uuid, gen_random_uuid(), 'charge', $2::uuid, 'test', 'accepted' FROM generate_series(1, 50000)
            """, [.uuid(n), .uuid(app)])
        try conn.exec("""
            INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, updated_at, finished_at)
            SELECT $1::uuid, gen_random_uuid(), 'sent', gen_random_uuid(), now(), now() FROM generate_series(1, 50000)
            """, [.uuid(n)])
        try conn.exec("ANALYZE push_deliveries")
        try conn.exec("ANALYZE push_ledger")
        let ids = Array(devices.values) + (0..<460).map { _ in UUID() }
        let params: [PGValue?] = [.text("{" + ids.map { _ in "1" }.joined(separator: ",") + "}"),
                                  .text("{" + ids.map { _ in n.uuidString }.joined(separator: ",") + "}"),
                                  .text("{" + ids.map(\.uuidString).joined(separator: ",") + "}")]
        let plan = try conn.exec("EXPLAIN (FORMAT TEXT) " + JobQueries.loadBatchDevices, params)
        let text = (0..<plan.rows.count).map { (try? plan.string($0, 0)) ?? "" }.joined(separator: "\n")
        XCTAssertFalse(text.contains("Seq Scan on push_deliveries"), text)
        XCTAssertFalse(text.contains("Seq Scan on push_ledger"), text)
        XCTAssertTrue(text.contains("push_deliveries_pkey"), text)
        XCTAssertTrue(text.contains("push_ledger_pkey"), text)
    }
}
