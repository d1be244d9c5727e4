import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// R-SEND-1 at send time: a batch's devices are re-checked when the batch runs (device deleted,
/// deactivated, or moved to a user outside the audience; a registration within the minute before
/// the start searched in the audience). The scenarios are shared by both stores:
/// `SendTimeTargetingTests` runs them on the in-memory store, `PGQueueConformanceTests` on
/// PostgreSQL (push_start_notifications, the batch load). That the check costs a primary-key probe
/// per device, not a scan (the plan), is `QueueTests`' (PostgreSQL only).
extension WorkerTestCase {
    /// A notification to `users` users (one device each), started into batch jobs of `batchSize`
    /// by a claim of its own; returns the notification and the device of each user.
    func startedBroadcast(_ app: UUID, users: Int, batchSize: Int) throws -> (UUID, [String: UUID]) {
        var devices: [String: UUID] = [:]
        for u in 0..<users { devices["a\(u)"] = try register(app, user: "a\(u)", token: "tok-a\(u)") }
        let n = try enqueue(app, users: (0..<users).map { "a\($0)" })
        let store: QueueStore = workerSession
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        let started = try store.startOne(start, batchSize: batchSize)
        XCTAssertNil(started.inlineDeviceIDs, "split into batch jobs")
        return (n, devices)
    }

    func conformADeviceMovedToAUserOutsideTheAudienceAfterTheStartIsNotSent() throws {
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 30, batchSize: 10)
        // The token of user a7 registers again for user "zz", who is not in the audience: same row, new user.
        let moved = try register(app, user: "zz", token: "tok-a7")
        XCTAssertEqual(moved, devices["a7"], "a re-registration of the token moves the device row")
        let router = RecordingRouter()
        try drain(try makeWorker(router, claimLimit: 16))
        XCTAssertFalse(router.pushes.contains { $0.deviceID == moved }, "nothing is sent to the moved device")
        XCTAssertEqual(router.pushes.count, 29)
        let rows = try deliveries(n)
        XCTAssertEqual(rows[moved]?.errorCode, ErrorCode.deviceGone.rawValue)
        XCTAssertEqual(rows.values.filter { $0.status == "sent" }.count, 29)
        try assertLedgerInvariants(n)
    }

    func conformAMoveStampedJustBeforeTheStartButUnseenByItIsStillCaught() throws {
        // A registration whose clock reading precedes the start but which committed after the
        // start's snapshot: within the minute before the start, the audience is searched.
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 20, batchSize: 10)
        let device = try XCTUnwrap(devices["a3"])
        let startedAt = try XCTUnwrap(try world.startedAt(notification: n))
        try world.setDeviceUser(device, "zz")
        try world.setDeviceLastRegistered(device, startedAt.addingTimeInterval(-30))
        let router = RecordingRouter()
        try drain(try makeWorker(router, claimLimit: 16))
        XCTAssertFalse(router.pushes.contains { $0.deviceID == device })
        XCTAssertEqual(try deliveries(n)[device]?.errorCode, ErrorCode.deviceGone.rawValue)
        try assertLedgerInvariants(n)
    }

    func conformDevicesRegisteredBeforeTheStartAreTargetedWithoutSearchingTheAudience() throws {
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 20, batchSize: 10)
        for device in devices.values { try world.setDeviceLastRegistered(device, Date().addingTimeInterval(-86_400)) }
        let store: QueueStore = workerSession
        let ids = devices.values.sorted { $0.uuidString < $1.uuidString }
        let rows = try store.batchLoadDevices([DeviceBatch(notificationID: n, deviceIDs: ids)])[0]
        XCTAssertEqual(rows.count, 20)
        XCTAssertTrue(rows.allSatisfy { $0.found && $0.targeted && $0.charged })
        // A deactivated device is not targeted, whatever its registration time.
        try world.deactivateDevice(ids[0])
        let again = try store.batchLoadDevices([DeviceBatch(notificationID: n, deviceIDs: ids)])[0]
        XCTAssertFalse(again[0].targeted)
        XCTAssertTrue(again.dropFirst().allSatisfy(\.targeted))
    }
}

/// The send-time targeting scenarios above on the in-memory store; on PostgreSQL in `PGQueueConformanceTests`.
final class SendTimeTargetingTests: WorkerTestCase {
    func testADeviceMovedToAUserOutsideTheAudienceAfterTheStartIsNotSent() throws { try conformADeviceMovedToAUserOutsideTheAudienceAfterTheStartIsNotSent() }
    func testAMoveStampedJustBeforeTheStartButUnseenByItIsStillCaught() throws { try conformAMoveStampedJustBeforeTheStartButUnseenByItIsStillCaught() }
    func testDevicesRegisteredBeforeTheStartAreTargetedWithoutSearchingTheAudience() throws { try conformDevicesRegisteredBeforeTheStartAreTargetedWithoutSearchingTheAudience() }
}
