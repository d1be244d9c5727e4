import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// A claim's jobs are processed together (one start, one load, one record for all of them), and
/// every guarantee still holds per job: one delivery row per (notification, device), the ledger
/// nets as R-SEND-9 says, a lost lease loses only that job's record, and nothing is sent twice.
final class GroupedProcessingTests: WorkerTestCase {
    func testManySmallNotificationsInOneClaimAreEachDeliveredAndRecordedOnce() throws {
        let app = try createApp()
        var notifications: [UUID] = []
        var devices: [UUID: [UUID]] = [:]
        for u in 0..<12 {
            let user = "user\(u)"
            let d1 = try register(app, user: user, platform: "ios")
            let d2 = try register(app, user: user, platform: "android")
            let n = try enqueue(app, users: [user])
            notifications.append(n)
            devices[n] = [d1, d2]
        }
        let router = RecordingRouter()
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 12, "one claim takes all twelve notification jobs")
        XCTAssertEqual(router.pushes.count, 24, "every device sent to once")
        XCTAssertEqual(Set(router.pushes.map(\.deviceID)).count, 24)
        for n in notifications {
            let state = try notification(n)
            XCTAssertEqual(state.status, "sent")
            XCTAssertEqual(state.deviceCount, 2)
            XCTAssertEqual(try deliveries(n).count, 2)
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state <> 'completed'"), 0)
    }

    func testALostLeaseInTheGroupLosesOnlyThatJobsRecordAndNothingIsSentTwice() throws {
        let app = try createApp()
        var notifications: [UUID] = []
        for u in 0..<4 {
            _ = try register(app, user: "u\(u)")
            notifications.append(try enqueue(app, users: ["u\(u)"]))
        }
        let stolen = notifications[1]
        let router = RecordingRouter()
        // While the group is being sent, another worker takes over one job (its lease changes).
        router.onSend = { [conn] _ in
            _ = try? conn?.exec("""
                UPDATE push_jobs SET lease_token = gen_random_uuid(), lease_owner = 'thief'
                 WHERE notification_id = $1::uuid AND state = 'running'
                """, [.uuid(stolen)])
        }
        let worker = try makeWorker(router, claimLimit: 16)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 4)
        XCTAssertEqual(router.pushes.count, 4, "the fallback records the computed outcomes, it never sends again")
        for n in notifications where n != stolen {
            XCTAssertEqual(try notification(n).status, "sent", "the other jobs of the group are recorded")
            try assertLedgerInvariants(n)
        }
        XCTAssertEqual(try deliveries(stolen).count, 0, "the job whose lease was lost records nothing")
        XCTAssertEqual(try int("""
            SELECT count(*)::int FROM push_jobs j JOIN push_notifications n ON n.id = j.notification_id
             WHERE n.id = $1::uuid AND j.state = 'running' AND j.lease_owner = 'thief'
            """, [.uuid(stolen)]), 1, "it stays with its new owner")
    }

    func testGroupMixingASplitBroadcastAndSmallNotificationsRecordsEveryDeviceOnce() throws {
        let app = try createApp()
        var broadcastDevices: [UUID] = []
        for u in 0..<30 { broadcastDevices.append(try register(app, user: "b\(u)")) }
        let broadcast = try enqueue(app, users: (0..<30).map { "b\($0)" })
        let small = try enqueue(app, users: ["b0"])
        let worker = try makeWorker(RecordingRouter(), batchSize: 8, claimLimit: 16)
        try drain(worker)
        XCTAssertEqual(try deliveries(broadcast).count, 30)
        XCTAssertEqual(try notification(broadcast).status, "sent")
        XCTAssertEqual(try notification(broadcast).deviceCount, 30)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE notification_id = $1::uuid AND kind = 'batch'",
                               [.uuid(broadcast)]), 4, "30 devices in batches of 8")
        XCTAssertEqual(try notification(small).status, "sent")
        try assertLedgerInvariants(broadcast)
        try assertLedgerInvariants(small)
    }

    func testAClaimWhoseStartedAudiencesExceedTheDeviceLimitGivesTheRestBackAndEachDeviceIsSentOnce() throws {
        let app = try createApp()
        var notifications: [UUID] = []
        for u in 0..<5 {
            for _ in 0..<3 { _ = try register(app, user: "c\(u)") }
            notifications.append(try enqueue(app, users: ["c\(u)"]))
        }
        var config = WorkerConfig(owner: "chunks", claimLimit: 16, batchSize: 500, leaseSeconds: 30, pollInterval: 0.05,
                                  rescueInterval: 0.1, statsInterval: 3600, retryPolicy: Self.fastRetry)
        config.groupDeviceLimit = 7   // 5 notifications of 3 devices: 2 fit once started (6), 3 go back
        let router = RecordingRouter()
        let worker = try Worker(config: config, databaseURL: database.conninfo, router: router, log: Self.quietLog)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 5,
                       "the claim takes all five: a notification job weighs one device until started")
        XCTAssertEqual(router.pushes.count, 6, "two started audiences fit the limit and are sent")
        let back = try conn.exec("""
            SELECT count(*)::int AS n, min(cardinality(device_ids))::int AS devices, max(attempt)::int AS attempt
              FROM push_jobs WHERE state = 'available' AND kind = 'batch'
            """)
        XCTAssertEqual(try back.int(0, "n"), 3, "the other three are given back as started batch jobs")
        XCTAssertEqual(try back.int(0, "devices"), 3)
        XCTAssertEqual(try back.int(0, "attempt"), 0, "giving back spends no attempt")
        try drain(worker)
        XCTAssertEqual(router.pushes.count, 15)
        XCTAssertEqual(Set(router.pushes.map(\.deviceID)).count, 15, "each device sent to once")
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent")
            XCTAssertEqual(try deliveries(n).count, 3)
            try assertLedgerInvariants(n)
        }
    }

    func testAClaimTakesBatchJobsOnlyUpToItsDeviceBudget() throws {
        let app = try createApp()
        for u in 0..<40 { _ = try register(app, user: "d\(u)") }
        let n = try enqueue(app, users: (0..<40).map { "d\($0)" })
        let store = PGQueueStore(connection: workerConn)
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30).first)
        _ = try store.startOne(start, batchSize: 10)   // 40 devices -> 4 batch jobs of 10
        let claimed = try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 25)
        XCTAssertEqual(claimed.count, 3, "10 + 10 fit, the third starts below the budget, the fourth waits")
        XCTAssertTrue(claimed.allSatisfy { $0.notification.id == n })
        let rest = try store.jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 5)
        XCTAssertEqual(rest.count, 1, "a job larger than the budget is still claimed alone")
    }

    // MARK: - Fairness behind a broadcast (issue 4)

    /// A broadcast of `users` users of a fresh app, already split into batch jobs of `batchSize`.
    private func splitBroadcast(users: Int, batchSize: Int, prefix: String) throws -> (app: UUID, notification: UUID) {
        let app = try createApp(name: "broadcast-\(prefix)")
        for u in 0..<users { _ = try register(app, user: "\(prefix)\(u)") }
        let n = try enqueue(app, users: (0..<users).map { "\(prefix)\($0)" })
        let store = PGQueueStore(connection: workerConn)
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        _ = try store.startOne(start, batchSize: batchSize)
        return (app, n)
    }

    func testAClaimTakesOneBatchOfABroadcastAndTheOtherAppsNotificationBesideIt() throws {
        let (broadcastApp, _) = try splitBroadcast(users: 40, batchSize: 10, prefix: "b")   // 4 batch jobs of 10
        let other = try createApp(name: "other")
        _ = try register(other, user: "o")
        let single = try enqueue(other, users: ["o"])
        let claimed = try PGQueueStore(connection: workerConn)
            .jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 10, appDeviceBudget: 10)
        XCTAssertEqual(claimed.map(\.notification.id).filter { $0 == single }.count, 1,
                       "the other app's notification, enqueued last, is in the claim although one batch alone fills the budget")
        XCTAssertEqual(claimed.filter { $0.notification.appID == broadcastApp }.count, 1,
                       "the broadcast gives the claim one batch (app budget of 10 devices)")
        XCTAssertEqual(claimed.count, 2)
    }

    func testAnAppsBudgetLetsManySingleUserNotificationsOfAnotherAppFillTheClaim() throws {
        let (broadcastApp, _) = try splitBroadcast(users: 40, batchSize: 20, prefix: "b")   // 2 batch jobs of 20
        let other = try createApp(name: "many")
        for u in 0..<20 {
            _ = try register(other, user: "m\(u)")
            _ = try enqueue(other, users: ["m\(u)"])
        }
        let claimed = try PGQueueStore(connection: workerConn)
            .jobClaimBatch(owner: "t", limit: 16, leaseSeconds: 30, deviceBudget: 100, appDeviceBudget: 20)
        XCTAssertEqual(claimed.count, 16, "never more than the claim limit")
        XCTAssertEqual(claimed.filter { $0.notification.appID == broadcastApp }.count, 1,
                       "one batch of the broadcast: its 20 devices spend its app's budget")
        XCTAssertEqual(claimed.filter { $0.notification.appID == other }.count, 15,
                       "notification jobs weigh one device each, so the other app fills the rest of the claim")
    }

    func testSmallJobsOfAClaimAreSentAndRecordedBeforeItsLargeBatches() throws {
        let (_, broadcast) = try splitBroadcast(users: 120, batchSize: 60, prefix: "b")  // 2 batch jobs of 60
        let other = try createApp(name: "other")
        let device = try register(other, user: "o")
        let single = try enqueue(other, users: ["o"])
        let router = RecordingRouter()
        let recordedAtBroadcastSend = LockedBox<Int?>(nil)
        router.onSend = { [conn] pushes in
            if recordedAtBroadcastSend.value == nil, !pushes.contains(where: { $0.deviceID == device }) {
                let n = try? conn?.exec("SELECT count(*)::int FROM push_deliveries WHERE notification_id = $1::uuid",
                                        [.uuid(single)]).int(0, 0)
                recordedAtBroadcastSend.update { $0 = n ?? -1 }
            }
        }
        let worker = try makeWorker(router, batchSize: 60, claimLimit: 16)
        XCTAssertEqual(try worker.runOnce(connection: workerConn), 3, "one claim: both batches and the notification")
        XCTAssertEqual(router.pushes.first?.deviceID, device, "the single notification is sent first")
        XCTAssertEqual(router.pushes.count, 121)
        XCTAssertEqual(recordedAtBroadcastSend.value, 1,
                       "its delivery row is committed before the broadcast's batches are sent (a chunk of its own)")
        XCTAssertEqual(try notification(single).status, "sent")
        XCTAssertEqual(try deliveries(broadcast).count, 120)
        try assertLedgerInvariants(single)
        try assertLedgerInvariants(broadcast)
    }
}
