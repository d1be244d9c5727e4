import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// The queue store's contract, part 2: claims (order, budgets, schedule), leases and rescue.
extension WorkerTestCase {
    /// A job whose lease was lost between claim and record records nothing and the worker carries
    /// on; once that lease expires the job is rescued and completed by another worker exactly once.
    func conformLostLeaseRecordsNothingAndTheRescuedJobCompletesOnce() throws {
        let app = try createApp()
        let devices = [try register(app, user: "u1"), try register(app, user: "u1", platform: "android")]
        let n = try enqueue(app, users: ["u1"])
        let router = RecordingRouter()
        var stolen = false
        router.onSend = { [unowned self] _ in
            guard !stolen else { return }
            stolen = true
            // Another party holds the job now: its lease token changed between claim and record.
            do { try self.world.stealLease(notification: nil, owner: "other", expiresIn: 0.3) } catch { XCTFail("\(error)") }
        }
        let first = try makeWorker(router, owner: "first")
        XCTAssertEqual(try runOnce(first), 1, "claimed and processed without crashing")
        XCTAssertTrue(try deliveries(n).isEmpty, "LEASE_LOST: no delivery recorded")
        XCTAssertEqual(try ledger(n).values.reduce(0) { $0 + $1.refunds }, 0)
        XCTAssertEqual(try notification(n).status, "sending")
        XCTAssertEqual(try runOnce(first), 0, "the worker keeps running; nothing due")

        Thread.sleep(forTimeInterval: 0.4)
        try drain(try makeWorker(router, owner: "second"), session: try world.session())
        let rows = try deliveries(n)
        XCTAssertEqual(Set(rows.keys), Set(devices))
        XCTAssertTrue(rows.values.allSatisfy { $0.status == "sent" && $0.attempts == 1 })
        XCTAssertEqual(try world.jobs().filter { $0.notificationID == n }.map(\.attempt), [2])
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(try notification(n).deviceCount, 2)
        try assertLedgerInvariants(n)
    }

    /// A claim's jobs are recorded together, and a lease lost by one of them loses only that job's
    /// record; nothing is sent twice.
    func conformALostLeaseInTheGroupLosesOnlyThatJobsRecord() throws {
        let app = try createApp()
        var notifications: [UUID] = []
        for u in 0..<4 {
            _ = try register(app, user: "u\(u)")
            notifications.append(try enqueue(app, users: ["u\(u)"]))
        }
        let stolen = notifications[1]
        let router = RecordingRouter()
        router.onSend = { [unowned self] _ in try? self.world.stealLease(notification: stolen, owner: "thief", expiresIn: nil) }
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try runOnce(worker), 4)
        XCTAssertEqual(router.pushes.count, 4, "recorded once, never sent again")
        for n in notifications where n != stolen {
            XCTAssertEqual(try notification(n).status, "sent", "the other jobs of the group are recorded")
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try deliveries(stolen).count, 0, "the job whose lease was lost records nothing")
        XCTAssertEqual(try world.jobs().filter { $0.notificationID == stolen && $0.state == .running && $0.leaseOwner == "thief" }.count,
                       1, "it stays with its new owner")
    }

    /// An expired lease (its worker died after claiming) is rescued and the job completed by
    /// another worker exactly once; the dead worker's late record is refused (lease lost).
    func conformExpiredLeaseIsRescuedAndCompletedExactlyOnce() throws {
        let app = try createApp()
        let device = try register(app, user: "u1")
        let n = try enqueue(app, users: ["u1"])
        let dead = try world.session()
        let claimed = try XCTUnwrap(try dead.jobClaimBatch(owner: "dead", limit: 1, leaseSeconds: 0.2).first)
        Thread.sleep(forTimeInterval: 0.3)

        try drain(try makeWorker(owner: "rescuer"), session: try world.session())
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(try deliveries(n)[device]?.attempts, 1)
        XCTAssertEqual(try world.jobs().first { $0.id == claimed.id }?.attempt, 2)

        let late = [DeliveryRecord(deviceID: device, status: .failed, errorCode: .providerError, ledger: .refund)]
        XCTAssertEqual(try dead.batchRecord([BatchOutcome(job: claimed, records: late)]), [claimed.id: .leaseLost])
        XCTAssertEqual(try deliveries(n)[device]?.status, "sent", "the late record changed nothing")
        XCTAssertEqual(try ledger(n)[device]?.charges, 1)
        XCTAssertEqual(try ledger(n)[device]?.refunds, 0)
    }

    /// A failure written with a lease token that is not the claim's changes nothing; a job that
    /// keeps failing is set aside (discarded) once out of attempts and never claimed again.
    func conformFailuresAreLeaseGuardedAndSetAsideOnceOutOfAttempts() throws {
        let app = try createApp()
        let n = try enqueue(app, users: ["u"])
        try world.setMaxAttempts(notification: n, 2)
        let store = try world.session()
        for attempt in 1...2 {
            let job = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
            XCTAssertEqual(job.attempt, attempt)
            XCTAssertNil(try store.jobFail(JobLease(id: job.id, token: UUID()), error: "not mine", retryAt: Date()))
            XCTAssertEqual(try world.jobs().first { $0.id == job.id }?.state, .running, "a stale token changes nothing")
            XCTAssertEqual(try store.jobFail(job.lease, error: "boom \(attempt)", retryAt: Date()),
                           attempt < 2 ? .available : .discarded)
        }
        XCTAssertTrue(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).isEmpty,
                      "a discarded job is never claimed again by itself")
        XCTAssertEqual(try world.jobs().first?.lastError, "boom 2")
    }

    /// R-SEND-2: a scheduled job is not claimed before send_at, and is claimed once due.
    func conformScheduledJobIsNotClaimedBeforeSendAt() throws {
        let app = try createApp()
        try register(app, user: "u1")
        let sendAt = Date().addingTimeInterval(3600)
        let n = try enqueue(app, users: ["u1"]) { $0.sendAt = sendAt }
        let q = try world.session()
        XCTAssertTrue(try q.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30, now: sendAt.addingTimeInterval(-1)).isEmpty)
        XCTAssertEqual(try runOnce(try makeWorker()), 0, "not due now")
        let due = try q.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30, now: sendAt.addingTimeInterval(1))
        XCTAssertEqual(due.map { $0.notification.id }, [n])
        XCTAssertEqual(due.first?.kind, .notification)
        XCTAssertEqual(due.first?.notification.status, .pending)
    }

    /// Claims take apps in turn: an app that queued two jobs after another app's ten gets its
    /// turn within the first claim of four; within an app, priority orders the work.
    func conformClaimTakesAppsInTurnAndPriorityWithinAnApp() throws {
        let busy = try createApp(name: "busy"), quiet = try createApp(name: "quiet")
        for i in 0..<10 { _ = try enqueue(busy, users: ["u\(i)"]) }
        let q1 = try enqueue(quiet, users: ["q1"]), q2 = try enqueue(quiet, users: ["q2"])
        let store = try world.session()
        let claimed = try store.jobClaimBatch(owner: "w", limit: 4, leaseSeconds: 30)
        XCTAssertEqual(claimed.count, 4, "a claim never takes more rows than its limit")
        XCTAssertEqual(Set(claimed.filter { $0.notification.appID == quiet }.map { $0.notification.id }), [q1, q2])
        XCTAssertEqual(claimed.filter { $0.notification.appID == busy }.count, 2)

        let urgent = try world.addJob(kind: .batch, notification: q1, deviceIDs: [], priority: 10, runAt: Date())
        XCTAssertEqual(try store.jobClaimBatch(owner: "w", limit: 1, leaseSeconds: 30).map(\.id), [urgent],
                       "the newer job with higher priority goes first")
    }

    /// Device budgets: a batch job weighs its devices, a notification job one; a claim stops
    /// adding jobs once its devices reach the budget (a job larger than the budget still goes
    /// alone), and an app's budget leaves room for another app's single notification.
    func conformClaimsKeepToTheirDeviceBudgets() throws {
        let app = try createApp()
        for u in 0..<40 { _ = try register(app, user: "d\(u)") }
        let n = try enqueue(app, users: (0..<40).map { "d\($0)" })
        let store = try world.session()
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30).first)
        XCTAssertNil(try store.startOne(start, batchSize: 10).inlineDeviceIDs, "40 devices -> 4 batch jobs of 10")
        let claimed = try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 25)
        XCTAssertEqual(claimed.count, 3, "10 + 10 fit, the third starts below the budget, the fourth waits")
        XCTAssertTrue(claimed.allSatisfy { $0.notification.id == n })
        try store.jobRelease(claimed.map(\.lease))
        let rest = try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 5)
        XCTAssertEqual(rest.count, 1, "a job larger than the budget is still claimed alone")
        try store.jobRelease(rest.map(\.lease))

        let other = try createApp(name: "other")
        _ = try register(other, user: "o")
        let single = try enqueue(other, users: ["o"])
        let fair = try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 10, appDeviceBudget: 10)
        XCTAssertEqual(fair.filter { $0.notification.id == single }.count, 1,
                       "the other app's notification is in the claim although one batch alone fills the budget")
        XCTAssertEqual(fair.filter { $0.notification.id == n }.count, 1, "the broadcast gives the claim one batch")
        XCTAssertEqual(fair.count, 2)
        try store.jobRelease(fair.map(\.lease))
    }

    /// An app's budget lets many single-user notifications of another app fill the claim beside
    /// one batch of a broadcast (notification jobs weigh one device each).
    func conformAnAppsBudgetLetsAnotherAppsSingleNotificationsFillTheClaim() throws {
        let broadcastApp = try createApp(name: "broadcast")
        for u in 0..<40 { _ = try register(broadcastApp, user: "b\(u)") }
        _ = try enqueue(broadcastApp, users: (0..<40).map { "b\($0)" })
        let store = try world.session()
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        _ = try store.startOne(start, batchSize: 20)   // 2 batch jobs of 20
        let other = try createApp(name: "many")
        for u in 0..<20 {
            _ = try register(other, user: "m\(u)")
            _ = try enqueue(other, users: ["m\(u)"])
        }
        let claimed = try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 100, appDeviceBudget: 20)
        XCTAssertEqual(claimed.count, 16, "never more than the claim limit")
        XCTAssertEqual(claimed.filter { $0.notification.appID == broadcastApp }.count, 1,
                       "one batch of the broadcast: its 20 devices spend its app's budget")
        XCTAssertEqual(claimed.filter { $0.notification.appID == other }.count, 15)
    }

    /// Within a claim's window each app's first job comes before any app's second: the small app's
    /// one job, enqueued behind a 200-job broadcast, is in the first claim of four.
    func conformClaimTakesEachAppsFirstJobBeforeAnyAppsSecond() throws {
        func batchJobs(app name: String, count: Int, ageSeconds: Double) throws -> UUID {
            let app = try createApp(name: name)
            let n = try enqueue(app, users: ["u"])
            try world.removeJobs(notification: n)
            for g in 1...count {
                try world.addJob(kind: .batch, notification: n, deviceIDs: [], priority: 0,
                                 runAt: Date().addingTimeInterval(-ageSeconds + Double(g) / 1000))
            }
            return app
        }
        let broadcast = try batchJobs(app: "broadcast", count: 200, ageSeconds: 60)
        let small = try batchJobs(app: "small", count: 1, ageSeconds: 1)
        let claimed = try world.session().jobClaimBatch(owner: "t", limit: 4, leaseSeconds: 30)
        XCTAssertEqual(claimed.count, 4, "a claim never takes more rows than its limit")
        XCTAssertTrue(claimed.contains { $0.notification.appID == small },
                      "the small app's job, enqueued behind a 200-job broadcast, is in the first claim")
        XCTAssertEqual(claimed.filter { $0.notification.appID == broadcast }.count, 3)
    }

    /// R-SEND-10: the expiry is stored at acceptance, max(accepted, send_at) + ttl, and the claim
    /// hands it to the worker as stored.
    func conformTheStoredExpiryReachesTheWorker() throws {
        let app = try createApp()
        let soon = try enqueue(app, users: ["u1"]) { $0.ttlSeconds = 600 }
        let later = try enqueue(app, users: ["u2"]) {
            $0.ttlSeconds = 60
            $0.sendAt = Date().addingTimeInterval(-5)
        }
        let claimed = try world.session().jobClaimBatch(owner: "t", limit: 4, leaseSeconds: 30)
        XCTAssertEqual(Set(claimed.map(\.notification.id)), [soon, later])
        for job in claimed {
            let n = job.notification
            let expected = max(n.acceptedAt, n.sendAt ?? n.acceptedAt).addingTimeInterval(TimeInterval(n.ttlSeconds))
            XCTAssertEqual(n.expiresAt.timeIntervalSince1970, expected.timeIntervalSince1970, accuracy: 0.000_002)
        }
    }
}
