import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// Issue 2 "Bad input": rows the registry would never write (corrupt key, unknown platform,
/// non-object data) or an app deleted under a queued notification. Each fails only what it
/// touches, is refunded (R-SEND-9), and nothing is lost: every notification ends final and every
/// job completed.
final class BadInputTests: WorkerTestCase {
    /// Every notification final and every job completed (none discarded, none left running).
    private func assertNothingLost(file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_notifications WHERE finished_at IS NULL"), 0,
                       "a notification was left unfinished", file: file, line: line)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state <> 'completed'"), 0,
                       "a job was not completed", file: file, line: line)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_deliveries WHERE status = 'retrying'"), 0,
                       file: file, line: line)
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
        XCTAssertEqual(try conn.exec("UPDATE push_devices SET public_key = $1 WHERE id = $2",
                                     [.bytea(offCurve), .uuid(corrupt)]).affectedRowCount, 1)
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
        XCTAssertEqual(try conn.exec("UPDATE push_devices SET platform = 'blackberry' WHERE id = $1", [.uuid(odd)])
            .affectedRowCount, 1)
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
        XCTAssertEqual(try conn.exec("UPDATE push_notifications SET data = '[1,2]' WHERE id = $1", [.uuid(n)])
            .affectedRowCount, 1)
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

    /// A notification whose app was deleted before its send time ends NO_DEVICES, every
    /// acceptance charge refunded with a DEVICE_GONE delivery; nothing reaches a provider.
    func testAppDeletedBeforeSendTimeEndsNoDevicesWithDeviceGoneRefunds() throws {
        let app = try createApp()
        let devices = try goodDevices(app, user: "u1")
        let n = try enqueue(app, users: ["u1"]) { $0.sendAt = Date().addingTimeInterval(0.4) }
        XCTAssertTrue(try AppStore(connection: conn).appDelete(id: app))
        let router = RecordingRouter()
        try drain(try makeWorker(router))

        XCTAssertTrue(router.pushes.isEmpty, "nothing handed to a provider")
        let state = try notification(n)
        XCTAssertEqual(state.status, "failed")
        XCTAssertEqual(state.errorCode, "NO_DEVICES")
        let rows = try deliveries(n)
        XCTAssertEqual(rows.count, devices.count)
        for d in devices {
            XCTAssertEqual(rows[d]?.errorCode, "DEVICE_GONE")
            XCTAssertEqual(try ledger(n)[d]?.charges, 1)
            XCTAssertEqual(try ledger(n)[d]?.refunds, 1)
        }
        try assertLedgerInvariants(n)
        try assertNothingLost()
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

    /// A batch job written by hand for a notification scheduled an hour ahead (pending: its policy
    /// not read yet) is set aside, MALFORMED_JOB, never sent; the notification stays scheduled.
    func testABatchJobOfAPendingNotificationIsSetAsideNotSentEarly() throws {
        let app = try createApp()
        let device = try register(app, user: "u")
        let n = try enqueue(app, users: ["u"]) { $0.sendAt = Date().addingTimeInterval(3600) }
        try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            VALUES ('batch', $1::uuid, $2::uuid, ARRAY[$3::uuid], 0, now())
            """, [.uuid(n), .uuid(app), .uuid(device)])
        let router = RecordingRouter()
        XCTAssertEqual(try makeWorker(router).runOnce(connection: workerConn), 1)
        XCTAssertEqual(router.pushes.count, 0, "nothing sent before the send time")
        let bad = try conn.exec("SELECT state, last_error FROM push_jobs WHERE kind = 'batch'")
        XCTAssertEqual(try bad.string(0, "state"), "discarded")
        XCTAssertTrue(try bad.string(0, "last_error").hasPrefix("MALFORMED_JOB: a batch job of a notification that is pending"))
        XCTAssertEqual(try notification(n).status, "pending")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE kind = 'notification' AND state = 'available'"), 1,
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
        try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, priority, run_at)
            SELECT 'notification', id, app_id, 0, now() FROM push_notifications WHERE id = $1::uuid
            """, [.uuid(n)])
        XCTAssertEqual(try makeWorker(router).runOnce(connection: workerConn), 1)
        let job = try conn.exec("SELECT state, attempt, last_error FROM push_jobs WHERE state <> 'completed'")
        XCTAssertEqual(try job.string(0, "state"), "discarded")
        XCTAssertEqual(try job.int(0, "attempt"), 1)
        let error = try job.string(0, "last_error")
        XCTAssertTrue(error.contains("not pending"), error)
        XCTAssertEqual(router.pushes.count, 1, "nothing sent again")
    }
}
