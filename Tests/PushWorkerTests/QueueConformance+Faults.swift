import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// The queue store's contract, part 3: a session that breaks (issue 4, database faults) and the
/// lease keeper. Pushes sent while the session broke are recorded once a session is back (their
/// jobs stay held meanwhile), never sent again; a lease lost in between drops the outcome to the
/// job's new owner; a worker asked to stop records them before it exits.
extension WorkerTestCase {
    /// Two single-user notifications of one app, one device each.
    private func twoNotifications() throws -> [UUID] {
        let app = try createApp()
        return try ["a", "b"].map { user in
            _ = try register(app, user: user)
            return try enqueue(app, users: [user])
        }
    }

    /// A router that, during its first send, ends the worker's sessions.
    private func breakingRouter() -> RecordingRouter {
        let router = RecordingRouter()
        let broken = LockedBox(false)
        router.onSend = { [unowned self] _ in
            guard !broken.value else { return }
            broken.update { $0 = true }
            do { try self.world.breakSessions() } catch { XCTFail("\(error)") }
        }
        return router
    }

    /// Claims and sends the two notifications while the worker's session is ended during the send.
    private func sendWhileTheSessionBreaks() throws -> (notifications: [UUID], worker: Worker, router: RecordingRouter) {
        let notifications = try twoNotifications()
        let router = breakingRouter()
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try runOnce(worker), 2)
        XCTAssertEqual(router.pushes.count, 2, "both were sent before the record failed")
        XCTAssertEqual(worker.deferredRecordCount, 2)
        return (notifications, worker, router)
    }

    func conformPushesSentWhileTheSessionBrokeAreRecordedOnTheNextAndNeverSentAgain() throws {
        let (notifications, worker, router) = try sendWhileTheSessionBreaks()
        for n in notifications { XCTAssertEqual(try deliveries(n).count, 0, "nothing recorded yet") }
        XCTAssertEqual(try world.jobs().filter { $0.state == .running }.count, 2,
                       "the jobs stay held under the worker's lease, not given back to be sent again")

        XCTAssertEqual(try runOnce(worker, on: try world.session()), 0, "nothing new to claim")
        XCTAssertEqual(worker.deferredRecordCount, 0)
        XCTAssertEqual(router.pushes.count, 2, "recorded, not sent again")
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent")
            XCTAssertEqual(try deliveries(n).count, 1)
            try assertLedgerInvariants(n)
        }
        XCTAssertTrue(try world.jobs().allSatisfy { $0.state == .completed })
    }

    func conformADeferredOutcomeWhoseLeaseWasLostMeanwhileIsLeftToTheNewOwner() throws {
        let (notifications, worker, _) = try sendWhileTheSessionBreaks()
        // While the worker was cut off, its lease on the first notification's job expired and another
        // worker claimed it.
        try world.stealLease(notification: notifications[0], owner: "other", expiresIn: nil)
        XCTAssertEqual(try runOnce(worker, on: try world.session()), 0)
        XCTAssertEqual(worker.deferredRecordCount, 0)
        XCTAssertEqual(try deliveries(notifications[0]).count, 0, "the new owner records it, not this worker")
        XCTAssertEqual(try notification(notifications[1]).status, "sent")
        XCTAssertEqual(try world.jobs().filter { $0.state == .running && $0.leaseOwner == "other" }.count, 1)
    }

    func conformAWorkerAskedToStopRecordsWhatItSentBeforeExiting() throws {
        let notifications = try twoNotifications()
        let router = breakingRouter()
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
            XCTAssertEqual(try notification(n).status, "sent", "recorded on a new session before exiting")
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try world.jobs().filter { $0.state == .running }.count, 0,
                       "nothing left running under the stopped worker's lease")
    }

    func conformJobsClaimedButNotSentWhenTheSessionBrokeAreGivenBackOnTheNext() throws {
        let notifications = try twoNotifications()
        try world.breakSessionsAtSendTime(true)
        let router = RecordingRouter()
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try runOnce(worker), 2)
        XCTAssertEqual(router.pushes.count, 0, "nothing was sent")
        XCTAssertEqual(worker.deferredReleaseCount, 2, "their give-back could not be written")
        XCTAssertEqual(try world.jobs().filter { $0.state == .running }.count, 2)
        try world.breakSessionsAtSendTime(false)

        XCTAssertEqual(try runOnce(worker, on: try world.session()), 2,
                       "given back first thing on the new session, then claimed again")
        XCTAssertEqual(worker.deferredReleaseCount, 0)
        XCTAssertEqual(router.pushes.count, 2)
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent")
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try world.jobs().map(\.attempt).max(), 1, "giving back spent no attempt")
    }

    // MARK: - Lease keeper

    private func claimOne(_ users: [String] = ["u"], leaseSeconds: Double = 30) throws -> [ClaimedJob] {
        let app = try createApp()
        for u in users {
            _ = try register(app, user: u)
            _ = try enqueue(app, users: [u])
        }
        return try world.session().jobClaimBatch(owner: "k", limit: users.count, leaseSeconds: leaseSeconds)
    }

    private func keeper(leaseSeconds: Double) -> LeaseKeeper {
        let sessions = world.sessions
        return LeaseKeeper(leaseSeconds: leaseSeconds, log: Self.quietLog) { try sessions.openHeartbeatSession() }
    }

    private func wait(until condition: () -> Bool, timeout: TimeInterval = 5) {
        let end = Date().addingTimeInterval(timeout)
        while !condition() && Date() < end { Thread.sleep(forTimeInterval: 0.01) }
    }

    /// A held job is extended by heartbeats and never reported lost: claimed with a 0.3 s lease, it
    /// is still unexpired (nothing to rescue) after 0.8 s.
    func conformAHeldJobIsExtendedAndNeverLost() throws {
        let job = try XCTUnwrap(try claimOne(leaseSeconds: 0.3).first)
        let k = keeper(leaseSeconds: 0.3)   // beats every 0.1 s
        k.hold(job.id, token: job.leaseToken)
        k.start()
        defer { k.stop() }
        Thread.sleep(forTimeInterval: 0.8)   // past the 0.3 s lease several times over
        XCTAssertFalse(k.isLost(job.id), "a job still held by its token is never reported lost")
        XCTAssertEqual(try world.session().jobRescueExpired(now: nil), RescueCounts(rescued: 0, discarded: 0),
                       "the heartbeats kept its lease alive")
    }

    func conformAJobTakenOverIsReportedLostAfterTwoMissedHeartbeats() throws {
        let job = try XCTUnwrap(try claimOne().first)
        try world.stealLease(notification: nil, owner: "other", expiresIn: nil)
        let k = keeper(leaseSeconds: 0.3)
        k.hold(job.id, token: job.leaseToken)
        k.start()
        defer { k.stop() }
        wait(until: { k.isLost(job.id) })
        XCTAssertTrue(k.isLost(job.id))
        k.release(job.id)
        XCTAssertFalse(k.isLost(job.id))
    }

    func conformAJobRecordedThenLetGoBeforeTheNextHeartbeatIsNeverLost() throws {
        let jobs = try claimOne(["u1", "u2"])
        XCTAssertEqual(jobs.count, 2)
        let (job, sentinel) = (jobs[0], jobs[1])
        // Beats every second: the check below must land between the first and second heartbeat.
        let k = keeper(leaseSeconds: 3)
        k.hold(job.id, token: job.leaseToken)
        k.hold(sentinel.id, token: sentinel.leaseToken)
        // The worker's record committed (the job completed, its token cleared), not yet let go of.
        try world.complete(job: job.id)
        k.start()
        defer { k.stop() }
        // The first heartbeat shortens the sentinel's lease from 30 s to 3 s: it ran and missed the job.
        wait(until: {
            ((try? self.world.jobs().first { $0.id == sentinel.id }?.leaseExpiresAt) ?? nil).map { $0.timeIntervalSinceNow < 5 } ?? false
        })
        XCTAssertFalse(k.isLost(job.id), "one miss is not a loss")
        k.release(job.id)
        Thread.sleep(forTimeInterval: 2.2)   // two more heartbeats
        XCTAssertFalse(k.isLost(job.id))
        XCTAssertFalse(k.isLost(sentinel.id))
    }
}
