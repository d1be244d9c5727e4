import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// The queue under the worker: concurrent claims, scheduling, fan-out, lost and expired leases.
final class QueueTests: WorkerTestCase {
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

    /// The claim stays round-robin across apps after skipping locked rows: an app that queued
    /// two jobs after another app's ten gets its turn within the first claim of four.
    func testClaimTakesAppsInTurn() throws {
        let busy = try createApp(name: "busy"), quiet = try createApp(name: "quiet")
        for i in 0..<10 { _ = try enqueue(busy, users: ["u\(i)"]) }
        let q1 = try enqueue(quiet, users: ["q1"]), q2 = try enqueue(quiet, users: ["q2"])
        let claimed = try PGQueueStore(connection: workerConn).jobClaimBatch(owner: "w", limit: 4, leaseSeconds: 30)
        XCTAssertEqual(claimed.count, 4)
        XCTAssertEqual(Set(claimed.filter { $0.notification.appID == quiet }.map { $0.notification.id }), [q1, q2])
        XCTAssertEqual(claimed.filter { $0.notification.appID == busy }.count, 2)
    }

    /// R-SEND-2: a scheduled job is not claimed before send_at, and is claimed once due.
    func testScheduledJobIsNotClaimedBeforeSendAt() throws {
        let app = try createApp()
        try register(app, user: "u1")
        let sendAt = Date().addingTimeInterval(3600)
        let n = try enqueue(app, users: ["u1"]) { $0.sendAt = sendAt }
        let q = PGQueueStore(connection: workerConn)
        XCTAssertTrue(try q.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30, now: sendAt.addingTimeInterval(-1)).isEmpty)
        XCTAssertEqual(try makeWorker().runOnce(connection: workerConn), 0, "not due now")
        let due = try q.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30, now: sendAt.addingTimeInterval(1))
        XCTAssertEqual(due.map { $0.notification.id }, [n])
        XCTAssertEqual(due.first?.kind, .notification)
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

    /// A job whose lease was lost between claim and record records nothing (LEASE_LOST) and the
    /// worker carries on; once that lease expires the job is rescued and completed by another
    /// worker exactly once.
    func testLostLeaseRecordsNothingAndTheRescuedJobCompletesOnce() throws {
        let app = try createApp()
        let devices = [try register(app, user: "u1"), try register(app, user: "u1", platform: "android")]
        let n = try enqueue(app, users: ["u1"])
        let router = RecordingRouter()
        var stolen = false
        router.onSend = { [unowned self] _ in
            guard !stolen else { return }
            stolen = true
            // Another party holds the job now: its lease token changed between claim and record.
            XCTAssertEqual(try? self.conn.exec("""
                UPDATE push_jobs SET lease_token = gen_random_uuid(), lease_expires_at = now() + interval '0.3 s'
                 WHERE state = 'running'
                """).affectedRowCount, 1)
        }
        let first = try makeWorker(router, owner: "first")
        XCTAssertEqual(try first.runOnce(connection: workerConn), 1, "claimed and processed without crashing")
        XCTAssertTrue(try deliveries(n).isEmpty, "LEASE_LOST: no delivery recorded")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_ledger WHERE kind = 'refund'"), 0)
        XCTAssertEqual(try notification(n).status, "sending")
        XCTAssertEqual(try first.runOnce(connection: workerConn), 0, "the worker keeps running; nothing due")

        Thread.sleep(forTimeInterval: 0.4)
        let secondConn = try database.connect()
        try drain(try makeWorker(router, owner: "second"), connection: secondConn)
        let rows = try deliveries(n)
        XCTAssertEqual(Set(rows.keys), Set(devices))
        XCTAssertTrue(rows.values.allSatisfy { $0.status == "sent" && $0.attempts == 1 })
        XCTAssertEqual(try int("SELECT attempt FROM push_jobs WHERE notification_id = $1", [.uuid(n)]), 2)
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(try notification(n).deviceCount, 2)
        try assertLedgerInvariants(n)
    }

    /// An expired lease (its worker died after claiming) is rescued and the job completed by
    /// another worker exactly once; the dead worker's late record is refused (LEASE_LOST).
    func testExpiredLeaseIsRescuedAndCompletedExactlyOnceByAnotherWorker() throws {
        let app = try createApp()
        let device = try register(app, user: "u1")
        let n = try enqueue(app, users: ["u1"])
        let dead = PGQueueStore(connection: workerConn)
        let claimed = try XCTUnwrap(try dead.jobClaimBatch(owner: "dead", limit: 1, leaseSeconds: 0.2).first)
        Thread.sleep(forTimeInterval: 0.3)

        let otherConn = try database.connect()
        try drain(try makeWorker(owner: "rescuer"), connection: otherConn)
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(try deliveries(n)[device]?.attempts, 1)
        XCTAssertEqual(try int("SELECT attempt FROM push_jobs WHERE id = $1", [.int64(claimed.id)]), 2)

        let late = [DeliveryRecord(deviceID: device, status: .failed, errorCode: .providerError, ledger: .refund)]
        XCTAssertEqual(try dead.batchRecord([BatchOutcome(job: claimed, records: late)]), [claimed.id: .leaseLost])
        XCTAssertEqual(try deliveries(n)[device]?.status, "sent", "the late record changed nothing")
        XCTAssertEqual(try ledger(n)[device]?.charges, 1)
        XCTAssertEqual(try ledger(n)[device]?.refunds, 0)
        XCTAssertEqual(try notification(n).status, "sent")
    }
}
