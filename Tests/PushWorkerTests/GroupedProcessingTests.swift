import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// A claim's jobs are processed together (one start, one load, one record for all of them), and
/// every guarantee still holds per job: one delivery row per (notification, device), the ledger
/// nets as R-SEND-9 says, and nothing is sent twice. A lease lost inside a group, and the claim's
/// device budgets, are in the conformance suite (on both stores).
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
        XCTAssertEqual(try runOnce(worker), 12, "one claim takes all twelve notification jobs")
        XCTAssertEqual(router.pushes.count, 24, "every device sent to once")
        XCTAssertEqual(Set(router.pushes.map(\.deviceID)).count, 24)
        for n in notifications {
            let state = try notification(n)
            XCTAssertEqual(state.status, "sent")
            XCTAssertEqual(state.deviceCount, 2)
            XCTAssertEqual(try deliveries(n).count, 2)
            try assertLedgerInvariants(n)
        }
        XCTAssertTrue(try world.jobs().allSatisfy { $0.state == .completed })
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
        XCTAssertEqual(try world.jobs().filter { $0.notificationID == broadcast && $0.kind == .batch }.count, 4,
                       "30 devices in batches of 8")
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
        let router = RecordingRouter()
        // 5 notifications of 3 devices: 2 fit once started (6), 3 go back.
        let worker = try makeWorker(router, owner: "chunks", claimLimit: 16) { $0.groupDeviceLimit = 7 }
        XCTAssertEqual(try runOnce(worker), 5,
                       "the claim takes all five: a notification job weighs one device until started")
        XCTAssertEqual(router.pushes.count, 6, "two started audiences fit the limit and are sent")
        let back = try world.jobs().filter { $0.state == .available && $0.kind == .batch }
        XCTAssertEqual(back.count, 3, "the other three are given back as started batch jobs")
        XCTAssertEqual(back.map { $0.deviceIDs?.count ?? 0 }.min(), 3)
        XCTAssertEqual(back.map(\.attempt).max(), 0, "giving back spends no attempt")
        try drain(worker)
        XCTAssertEqual(router.pushes.count, 15)
        XCTAssertEqual(Set(router.pushes.map(\.deviceID)).count, 15, "each device sent to once")
        for n in notifications {
            XCTAssertEqual(try notification(n).status, "sent")
            XCTAssertEqual(try deliveries(n).count, 3)
            try assertLedgerInvariants(n)
        }
    }

    // MARK: - Fairness behind a broadcast (issue 4)

    /// A broadcast of `users` users of a fresh app, already split into batch jobs of `batchSize`.
    private func splitBroadcast(users: Int, batchSize: Int, prefix: String) throws -> (app: UUID, notification: UUID) {
        let app = try createApp(name: "broadcast-\(prefix)")
        for u in 0..<users { _ = try register(app, user: "\(prefix)\(u)") }
        let n = try enqueue(app, users: (0..<users).map { "\(prefix)\($0)" })
        let store = try world.session()
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        _ = try store.startOne(start, batchSize: batchSize)
        return (app, n)
    }

    func testSmallJobsOfAClaimAreSentAndRecordedBeforeItsLargeBatches() throws {
        let (_, broadcast) = try splitBroadcast(users: 120, batchSize: 60, prefix: "b")  // 2 batch jobs of 60
        let other = try createApp(name: "other")
        let device = try register(other, user: "o")
        let single = try enqueue(other, users: ["o"])
        let router = RecordingRouter()
        let recordedAtBroadcastSend = LockedBox<Int?>(nil)
        router.onSend = { [unowned self] pushes in
            if recordedAtBroadcastSend.value == nil, !pushes.contains(where: { $0.deviceID == device }) {
                let n = (try? self.deliveries(single).count) ?? -1
                recordedAtBroadcastSend.update { $0 = n }
            }
        }
        let worker = try makeWorker(router, batchSize: 60, claimLimit: 16)
        XCTAssertEqual(try runOnce(worker), 3, "one claim: both batches and the notification")
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
