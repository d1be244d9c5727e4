import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// Issue 2 "Bad input": rows the registry would never write (corrupt key, unknown platform,
/// non-object data, jobs written by hand). Each fails only what it touches, is refunded (R-SEND-9),
/// and nothing is lost: every notification ends final and every job completed. An app deleted under
/// a queued notification is in the conformance suite; a row PostgreSQL holds that cannot be read
/// is in `QueueTests`.
final class BadInputTests: WorkerTestCase {
    /// Every notification final and every job completed (none discarded, none left running).
    private func assertNothingLost(file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try world.openNotifications(), 0, "a notification was left unfinished", file: file, line: line)
        XCTAssertTrue(try world.jobs().allSatisfy { $0.state == .completed }, "a job was not completed", file: file, line: line)
    }

    /// Eight good devices (keyed and keyless, both platforms: the batch is sealed across cores).
    private func goodDevices(_ app: UUID, user: String) throws -> [UUID] {
        try (0..<8).map { i in
            try register(app, user: user, platform: i % 2 == 0 ? "ios" : "android",
                         key: i % 4 < 2 ? try P256PrivateKey.generate() : nil)
        }
    }

    /// A stored key that is 65 bytes with prefix 0x04 but not on the curve fails that delivery
    /// INVALID_DEVICE_KEY (refunded); the other devices of the batch are sent.
    func testCorruptStoredKeyFailsOnlyThatDelivery() throws {
        let app = try createApp()
        let good = try goodDevices(app, user: "u1")
        let corrupt = try register(app, user: "u1", platform: "ios", key: try P256PrivateKey.generate())
        let n = try enqueue(app, users: ["u1"])
        let offCurve = [UInt8(0x04)] + [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 31) + [1]
        try world.setDeviceKey(corrupt, raw: offCurve)
        XCTAssertThrowsError(try P256PublicKey(raw: offCurve), "the point really is off the curve")
        try drain(try makeWorker())

        let rows = try deliveries(n)
        XCTAssertEqual(rows[corrupt]?.status, "failed")
        XCTAssertEqual(rows[corrupt]?.errorCode, "INVALID_DEVICE_KEY")
        XCTAssertNil(rows[corrupt]?.payload)
        XCTAssertEqual(try net(n, corrupt), 0, "refunded")
        for d in good { XCTAssertEqual(rows[d]?.status, "sent") }
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(try notification(n).deviceCount, good.count)
        try assertLedgerInvariants(n)
        try assertNothingLost()
    }

    /// A device row with a platform this worker does not know fails UNKNOWN_PLATFORM for that one
    /// only (refunded), without failing the batch.
    func testUnknownPlatformFailsOnlyThatDelivery() throws {
        let app = try createApp()
        let good = try goodDevices(app, user: "u1")
        let odd = try register(app, user: "u1", platform: "android")
        let n = try enqueue(app, users: ["u1"])
        try world.setDevicePlatform(odd, "blackberry")
        try drain(try makeWorker())

        let rows = try deliveries(n)
        XCTAssertEqual(rows[odd]?.status, "failed")
        XCTAssertEqual(rows[odd]?.errorCode, "UNKNOWN_PLATFORM")
        XCTAssertEqual(try net(n, odd), 0, "refunded")
        for d in good { XCTAssertEqual(rows[d]?.status, "sent") }
        XCTAssertEqual(try notification(n).deviceCount, good.count)
        try assertLedgerInvariants(n)
        try assertNothingLost()
    }

    /// `data` that is not a JSON object fails every delivery INVALID_DATA, all refunded, and the
    /// notification still ends (failed ALL_DEVICES_REFUSED); a notification queued beside it is unaffected.
    func testNonObjectDataFailsEveryDeliveryInvalidDataAndTheNotificationEnds() throws {
        let app = try createApp()
        let devices = try goodDevices(app, user: "u1")
        let n = try enqueue(app, users: ["u1"]) { $0.data = #"{"a":1}"# }
        let fine = try enqueue(app, users: ["u1"]) { $0.data = #"{"a":2}"# }
        try world.setNotificationData(n, "[1,2]")
        try drain(try makeWorker())

        let rows = try deliveries(n)
        XCTAssertEqual(rows.count, devices.count)
        for d in devices {
            XCTAssertEqual(rows[d]?.errorCode, "INVALID_DATA")
            XCTAssertEqual(try ledger(n)[d]?.refunds, 1, "refunded")
        }
        let state = try notification(n)
        XCTAssertEqual(state.status, "failed")
        XCTAssertEqual(state.errorCode, "ALL_DEVICES_REFUSED")
        XCTAssertEqual(state.deviceCount, 0)
        XCTAssertEqual(try notification(fine).status, "sent")
        XCTAssertEqual(try notification(fine).deviceCount, devices.count)
        try assertLedgerInvariants(n)
        try assertNothingLost()
    }

    /// A reserved `data` key (`hk`: an Android app would read it as an envelope) that reached the
    /// queue without the CLI's acceptance check (the API called push_enqueue directly) is refused
    /// INVALID_DATA at send time, refunded, and nothing reaches a provider.
    func testReservedDataKeyThatBypassedAcceptanceIsRefusedAtSendTime() throws {
        let app = try createApp()
        let devices = try goodDevices(app, user: "u1")
        let n = try enqueue(app, users: ["u1"]) { $0.data = #"{"hk":"{\"v\":2}"}"# }
        let router = RecordingRouter()
        try drain(try makeWorker(router))
        XCTAssertTrue(router.pushes.isEmpty, "nothing handed to a provider")
        let rows = try deliveries(n)
        for d in devices {
            XCTAssertEqual(rows[d]?.errorCode, "INVALID_DATA")
            XCTAssertEqual(try ledger(n)[d]?.refunds, 1, "refunded")
        }
        try assertLedgerInvariants(n)
        try assertNothingLost()
    }

    /// A batch job written by hand for a notification scheduled an hour ahead (pending: its policy
    /// not read yet) is set aside, MALFORMED_JOB, never sent; the notification stays scheduled.
    func testABatchJobOfAPendingNotificationIsSetAsideNotSentEarly() throws {
        let app = try createApp()
        let device = try register(app, user: "u")
        let n = try enqueue(app, users: ["u"]) { $0.sendAt = Date().addingTimeInterval(3600) }
        try world.addJob(kind: .batch, notification: n, deviceIDs: [device], priority: 0, runAt: nil)
        let router = RecordingRouter()
        XCTAssertEqual(try runOnce(try makeWorker(router)), 1)
        XCTAssertEqual(router.pushes.count, 0, "nothing sent before the send time")
        let bad = try XCTUnwrap(try world.jobs().first { $0.kind == .batch })
        XCTAssertEqual(bad.state, .discarded)
        XCTAssertTrue(bad.lastError?.hasPrefix("MALFORMED_JOB: a batch job of a notification that is pending") == true)
        XCTAssertEqual(try notification(n).status, "pending")
        XCTAssertEqual(try world.jobs().filter { $0.kind == .notification && $0.state == .available }.count, 1,
                       "its own job still waits for the send time")
        XCTAssertEqual(try deliveries(n).count, 0)
    }

    /// A notification job whose notification is no longer pending can never start (NOT_PENDING):
    /// it is set aside after one attempt, not retried with backoff until its attempts run out.
    func testANotificationJobOfAFinalNotificationIsSetAsideAfterOneAttempt() throws {
        let app = try createApp()
        _ = try register(app, user: "u")
        let n = try enqueue(app, users: ["u"])
        let router = RecordingRouter()
        try drain(try makeWorker(router))
        XCTAssertEqual(try notification(n).status, "sent")
        try world.addJob(kind: .notification, notification: n, deviceIDs: nil, priority: 0, runAt: nil)
        XCTAssertEqual(try runOnce(try makeWorker(router)), 1)
        let job = try XCTUnwrap(try world.jobs().first { $0.state != .completed })
        XCTAssertEqual(job.state, .discarded)
        XCTAssertEqual(job.attempt, 1)
        let error = job.lastError ?? ""
        XCTAssertTrue(error.contains("not pending"), error)
        XCTAssertEqual(router.pushes.count, 1, "nothing sent again")
    }
}
