import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// R-SEND-9 ledger nets for every ending, idempotency keys (R-SEND-1) and cancellation.
final class LedgerTests: WorkerTestCase {
    /// R-SEND-9: sent, UNREGISTERED, INVALID_TOKEN and APP_MISMATCH (the simulator blames the
    /// device) net one charge, the last three deactivating the device with a push_device.deactivated
    /// event (R-PRV-1/2, R-PRV-4); ENCRYPTION_KEY_MISSING, PUSH_PAYLOAD_TOO_LARGE, DEVICE_GONE,
    /// EXPIRED and RETRIES_EXHAUSTED net zero; a device not charged at acceptance that is sent gets
    /// its missing charge; never more than one charge and one refund; device_count = devices netting one.
    func testLedgerNetsForEveryEnding() throws {
        let app = try createApp(requireEncryption: false)
        func keyed(_ user: String, _ token: String, platform: String = "ios") throws -> UUID {
            try register(app, user: user, platform: platform, token: token, key: try P256PrivateKey.generate())
        }
        var expected: [UUID: (ending: String, net: Int)] = [:]
        let sent = try keyed("u1", "accept-1")
        let unregistered = try keyed("u1", "test_unregistered")
        let invalidToken = try keyed("u1", "test_invalid_token", platform: "android")
        let appMismatch = try keyed("u1", "test_app_mismatch")
        let keyless = try register(app, user: "u1", platform: "android")
        let exhausted = try keyed("u1", "test_timeout")
        let gone = try keyed("u1", "moving-phone")
        let n1 = try enqueue(app, users: ["u1"])
        let late = try keyed("u1", "registered-after-acceptance")
        _ = try register(app, user: "u2", platform: "ios", token: "moving-phone")
        XCTAssertNotNil(try AppStore(connection: conn).appUpdate(id: app, requireEncryption: true))
        expected[sent] = ("sent", 1)
        expected[unregistered] = ("UNREGISTERED", 1)
        expected[invalidToken] = ("INVALID_TOKEN", 1)
        expected[appMismatch] = ("APP_MISMATCH", 1)
        expected[keyless] = ("ENCRYPTION_KEY_MISSING", 0)
        expected[exhausted] = ("RETRIES_EXHAUSTED", 0)
        expected[gone] = ("DEVICE_GONE", 0)
        expected[late] = ("sent", 1)

        let big = try keyed("big", "big-phone")
        let n2 = try enqueue(app, users: ["big"], title: String(repeating: "z", count: 3900), body: nil)
        let expiring = try keyed("exp", "test_unavailable")
        let n3 = try enqueue(app, users: ["exp"]) { $0.ttlSeconds = 0 }
        try drain(try makeWorker())

        let rows1 = try deliveries(n1)
        XCTAssertEqual(rows1.count, expected.count)
        for (device, e) in expected {
            let row = rows1[device]
            XCTAssertEqual(row.map { $0.status == "sent" ? "sent" : ($0.errorCode ?? "") }, e.ending)
            XCTAssertEqual(try net(n1, device), e.net, "R-SEND-9 net for \(e.ending)")
        }
        XCTAssertEqual(try ledger(n1)[keyless]?.charges, 1, "charged at acceptance, when the policy was off")
        XCTAssertEqual(try ledger(n1)[keyless]?.refunds, 1, "refunded: ENCRYPTION_KEY_MISSING nets zero")
        XCTAssertEqual(try ledger(n1)[late]?.charges, 1, "the missing charge is written for a device sent to")
        XCTAssertEqual(try notification(n1).deviceCount, 5)
        XCTAssertEqual(try notification(n1).encrypted, true)
        for (device, reason) in [(unregistered, "UNREGISTERED"), (invalidToken, "INVALID_TOKEN"), (appMismatch, "APP_MISMATCH")] {
            let r = try conn.exec("SELECT active, deactivation_reason FROM push_devices WHERE id = $1", [.uuid(device)])
            XCTAssertFalse(try r.bool(0, "active"), reason)
            XCTAssertEqual(try r.string(0, "deactivation_reason"), reason)
            XCTAssertEqual(try events(type: "push_device.deactivated", device: device), [reason], "R-PRV-4 event")
        }
        XCTAssertEqual(try events(type: "push_device.deactivated", device: sent), [])
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_credentials"), 0, "test mode never touches credentials")

        XCTAssertEqual(try deliveries(n2)[big]?.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertEqual(try net(n2, big), 0)
        XCTAssertEqual(try deliveries(n3)[expiring]?.errorCode, "EXPIRED")
        XCTAssertEqual(try net(n3, expiring), 0)
        for n in [n1, n2, n3] { try assertLedgerInvariants(n) }
        XCTAssertEqual(try int("""
            SELECT count(*)::int FROM (SELECT 1 FROM push_ledger GROUP BY notification_id, device_id, kind
                                        HAVING count(*) > 1) x
            """), 0)
    }

    /// R-SEND-1 / R-SEND-9: the same idempotency key twice gives one notification, one job and one
    /// set of acceptance charges; the second call reports `created` false.
    func testIdempotencyKeyTwiceMakesOneNotificationAndOneSetOfCharges() throws {
        let app = try createApp()
        try register(app, user: "u1")
        try register(app, user: "u1", platform: "android")
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: ["u1"])
        q.title = "Once"
        q.idempotencyKey = "order-17-shipped"
        let store = NotificationStore(connection: conn)
        let first = try store.enqueue(q)
        let second = try store.enqueue(q)
        XCTAssertTrue(first.created)
        XCTAssertFalse(second.created)
        XCTAssertEqual(first.id, second.id)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_notifications"), 1)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs"), 1)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_ledger WHERE kind = 'charge'"), 2)
        try drain(try makeWorker())
        XCTAssertEqual(try deliveries(first.id).count, 2)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_ledger WHERE kind = 'charge'"), 2)
        XCTAssertEqual(try notification(first.id).deviceCount, 2)
        XCTAssertFalse(try store.enqueue(q).created, "still one notification after it was sent")
    }

    /// Cancel before send time refunds every acceptance charge and the job never runs; cancel after
    /// the send time started (job taken up) or after the end returns false and refunds nothing.
    func testCancelBeforeSendTimeRefundsAllAndAfterStartReturnsFalse() throws {
        let app = try createApp()
        let a = try register(app, user: "u1"), b = try register(app, user: "u1", platform: "android")
        let store = NotificationStore(connection: conn)
        let sendAt = Date().addingTimeInterval(3600)
        let scheduled = try enqueue(app, users: ["u1"]) { $0.sendAt = sendAt }
        XCTAssertTrue(try store.cancel(id: scheduled))
        XCTAssertFalse(try store.cancel(id: scheduled), "cancelling twice is too late")
        XCTAssertEqual(try ledger(scheduled)[a]?.refunds, 1)
        XCTAssertEqual(try ledger(scheduled)[b]?.refunds, 1)
        XCTAssertEqual(try notification(scheduled).status, "cancelled")
        let queue = PGQueueStore(connection: workerConn)
        XCTAssertTrue(try queue.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30,
                                              now: sendAt.addingTimeInterval(60)).isEmpty, "the job never runs")
        XCTAssertTrue(try deliveries(scheduled).isEmpty)

        let started = try enqueue(app, users: ["u1"])
        let claimed = try queue.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30)
        XCTAssertEqual(claimed.map { $0.notification.id }, [started])
        XCTAssertFalse(try store.cancel(id: started), "its job was taken up: too late")
        try queue.jobRelease([claimed[0].lease])
        try drain(try makeWorker())
        XCTAssertFalse(try store.cancel(id: started), "final: too late")
        XCTAssertEqual(try notification(started).status, "sent")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_ledger WHERE notification_id = $1 AND kind = 'refund'",
                               [.uuid(started)]), 0)
        try assertLedgerInvariants(started)
    }
}
