import Foundation
import XCTest
import PushTestSupport
@testable import PushStore

/// `LedgerStore.check` (R-SEND-8, R-SEND-9) against hand-written rows: a sound notification
/// passes; each deliberately broken row is reported with its kind.
final class LedgerStoreTests: PGTestCase {
    private var app: UUID!

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, migrations: Migrator.loadMigrations(directory: RepoPaths.sqlDirectory)).migrate()
        app = try conn.exec("INSERT INTO push_apps (name) VALUES ('ledger') RETURNING id").uuid(0, "id")
    }

    /// A final notification; `accepted` sets its acceptance time.
    private func notification(status: String = "sent", deviceCount: Int, accepted: String = "now()") throws -> UUID {
        try conn.exec("""
            INSERT INTO push_notifications (app_id, mode, user_ids, accepted_at, expires_at, status, device_count, finished_at)
            VALUES ($1, 'test', '{u}', \(accepted), \(accepted) + interval '1 day', $2, $3, now()) RETURNING id
            """, [.uuid(app), .text(status), .int(deviceCount)]).uuid(0, "id")
    }

    private func delivery(_ n: UUID, _ d: UUID, status: String, code: String? = nil) throws {
        try conn.exec("""
            INSERT INTO push_deliveries (notification_id, device_id, status, error_code, apns_id, finished_at)
            VALUES ($1, $2, $3, $4, push_apns_id($1, $2), now())
            """, [.uuid(n), .uuid(d), .text(status), code.map(PGValue.text)])
    }

    private func ledger(_ n: UUID, _ d: UUID, _ kind: String) throws {
        try conn.exec("INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode) VALUES ($1, $2, $3, $4, 'test')",
                      [.uuid(n), .uuid(d), .text(kind), .uuid(app)])
    }

    /// sent (charged), UNREGISTERED (charged at send), EXPIRED (charged then refunded),
    /// ENCRYPTION_KEY_MISSING (never charged): device_count 2 (R-SEND-9).
    private func soundNotification() throws -> UUID {
        let n = try notification(deviceCount: 2)
        let (a, b, c, d) = (UUID(), UUID(), UUID(), UUID())
        try delivery(n, a, status: "sent"); try ledger(n, a, "charge")
        try delivery(n, b, status: "failed", code: "UNREGISTERED"); try ledger(n, b, "charge")
        try delivery(n, c, status: "failed", code: "EXPIRED"); try ledger(n, c, "charge"); try ledger(n, c, "refund")
        try delivery(n, d, status: "failed", code: "ENCRYPTION_KEY_MISSING")
        return n
    }

    func testSoundLedgerHasNoViolations() throws {
        _ = try soundNotification()
        let cancelled = try notification(status: "cancelled", deviceCount: 0)
        let e = UUID()
        try ledger(cancelled, e, "charge"); try ledger(cancelled, e, "refund")
        XCTAssertEqual(try LedgerStore(connection: conn).check(), [])
        let scope = try LedgerStore(connection: conn).checkScope()
        XCTAssertEqual(scope, LedgerCheckScope(notifications: 2, finalNotifications: 2, ledgerRows: 6, deliveries: 4))
    }

    /// R-SMS-1: one `sms` row for an SMS queued or unknown, none for a failed one; any other
    /// combination is SMS_LEDGER_MISMATCH; the rows never count as a device's charge.
    func testSMSLedgerRowsMatchTheSMSOutcomes() throws {
        let none = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        func smsNotification(_ status: String, ledgerRow: Bool) throws -> UUID {
            let n = try notification(status: "sms_fallback", deviceCount: 0)
            try conn.exec("""
                INSERT INTO push_sms_outbox (notification_id, app_id, phone, text, status, finished_at)
                VALUES ($1, $2, '+15005550006', 't', $3, CASE WHEN $3 = 'pending' THEN NULL ELSE now() END)
                """, [.uuid(n), .uuid(app), .text(status)])
            if ledgerRow { try ledger(n, none, "sms") }
            return n
        }
        _ = try smsNotification("queued", ledgerRow: true)
        _ = try smsNotification("unknown", ledgerRow: true)
        _ = try smsNotification("failed", ledgerRow: false)
        _ = try smsNotification("pending", ledgerRow: false)
        XCTAssertEqual(try LedgerStore(connection: conn).check(), [])
        let missing = try smsNotification("queued", ledgerRow: false)
        let extra = try smsNotification("failed", ledgerRow: true)
        let found = try LedgerStore(connection: conn).check()
        XCTAssertEqual(Set(found.map { "\($0.violation) \($0.notificationID)" }),
                       ["SMS_LEDGER_MISMATCH \(missing)", "SMS_LEDGER_MISMATCH \(extra)"])
        XCTAssertTrue(found.contains { $0.detail == "sms queued, 0 sms ledger row(s)" }, "\(found)")
    }

    func testSentDeliveryWithRefundIsANetMismatchAndMiscountsDeviceCount() throws {
        let n = try soundNotification()
        let a = try conn.exec("SELECT device_id FROM push_deliveries WHERE notification_id = $1 AND status = 'sent'",
                              [.uuid(n)]).uuid(0, "device_id")
        try ledger(n, a, "refund")  // the broken row
        let v = try LedgerStore(connection: conn).check()
        XCTAssertEqual(v.map(\.violation), ["DEVICE_COUNT_MISMATCH", "NET_MISMATCH"])
        XCTAssertEqual(v[1].deviceID, a)
        XCTAssertEqual(v[1].detail, "delivery sent nets 0, expected 1")
        XCTAssertEqual(v[0].detail, "device_count 2, devices netting one charge 1")
    }

    func testRefundWithoutChargeAndUnrefundedFailureAreReported() throws {
        let n = try soundNotification()
        let d = try conn.exec("SELECT device_id FROM push_deliveries WHERE notification_id = $1 AND error_code = 'ENCRYPTION_KEY_MISSING'",
                              [.uuid(n)]).uuid(0, "device_id")
        try ledger(n, d, "refund")
        let stray = try notification(deviceCount: 0)
        let s = UUID()
        try delivery(stray, s, status: "failed", code: "RETRIES_EXHAUSTED"); try ledger(stray, s, "charge")
        let v = try LedgerStore(connection: conn).check()
        // The stray notification also says device_count 0 while its device nets one.
        XCTAssertEqual(v.map(\.violation), ["DEVICE_COUNT_MISMATCH", "NET_MISMATCH", "REFUND_WITHOUT_CHARGE"])
        XCTAssertEqual(v[0].notificationID, stray)
        XCTAssertEqual(v.first { $0.violation == "REFUND_WITHOUT_CHARGE" }?.deviceID, d)
        let mismatch = try XCTUnwrap(v.first { $0.violation == "NET_MISMATCH" })
        XCTAssertEqual(mismatch.deviceID, s)
        XCTAssertEqual(mismatch.detail, "delivery failed RETRIES_EXHAUSTED nets 1, expected 0")
    }

    /// The primary key forbids a second charge; with it dropped (a damaged copy), the check still sees it.
    func testDuplicateChargeIsReportedEvenWithoutTheConstraint() throws {
        let n = try soundNotification()
        try conn.exec("ALTER TABLE push_ledger DROP CONSTRAINT push_ledger_pkey")
        let a = try conn.exec("SELECT device_id FROM push_deliveries WHERE notification_id = $1 AND status = 'sent'",
                              [.uuid(n)]).uuid(0, "device_id")
        try ledger(n, a, "charge")
        let v = try LedgerStore(connection: conn).check()
        XCTAssertEqual(v.map(\.violation), ["DEVICE_COUNT_MISMATCH", "DUPLICATE_CHARGE"])
        XCTAssertEqual(v[1].detail, "2 charge rows")
    }

    func testFinalNotificationWithChargedDeviceButNoDeliveryIsReported() throws {
        let n = try notification(deviceCount: 0)
        let lost = UUID()
        try ledger(n, lost, "charge")  // charged at acceptance, never delivered nor refunded
        let v = try LedgerStore(connection: conn).check()
        XCTAssertEqual(v.map(\.violation), ["DEVICE_COUNT_MISMATCH", "NET_MISMATCH"])
        XCTAssertEqual(v[1].detail, "delivery missing nets 1, expected 0")
    }

    func testSinceAndUntilBoundTheNotificationsChecked() throws {
        let old = try notification(deviceCount: 5, accepted: "now() - interval '2 days'")  // broken: no devices
        _ = old
        _ = try soundNotification()
        let store = LedgerStore(connection: conn)
        XCTAssertEqual(try store.check().map(\.violation), ["DEVICE_COUNT_MISMATCH"])
        XCTAssertEqual(try store.check(since: Date().addingTimeInterval(-86_400)), [])
        XCTAssertEqual(try store.check(until: Date().addingTimeInterval(-86_400)).count, 1)
        XCTAssertEqual(try store.checkScope(since: Date().addingTimeInterval(-86_400)).notifications, 1)
    }
}
