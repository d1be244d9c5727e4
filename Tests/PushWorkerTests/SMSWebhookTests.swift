import Foundation
import XCTest
import PushCore
import PushCrypto
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// R-SMS-1 through the webhooks of issue 19: an endpoint made by the product's own path
/// (`WebhookEndpointStore`, which refuses types it does not know) opts in to
/// `push_notification.finished` and `push_notification.sms_finished`; the SMS dispatcher ends the
/// fallbacks; the webhook dispatcher delivers both events from the leased outbox to a receiver that
/// verifies them with the `standardwebhooks` package, `sms: queued` on the first, the SMS's outcome
/// on the second, never the phone or the text.
final class SMSWebhookTests: SMSTestCase {
    private var receiver: FakeProcess?
    private var hooks: WebhookDispatcher?

    override func tearDownWithError() throws {
        hooks?.stop(timeout: 15)
        receiver?.stop()
        try super.tearDownWithError()
    }

    func testSMSFinishedIsDeliveredSignedThroughTheOutboxAfterTheNotificationsFinished() throws {
        let dir = try FakeMaterial.directory() + "/sms-hooks-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try FakeProcess.start("webhook_receiver.py", arguments: ["--secrets-dir", dir], directory: dir)
        receiver = r
        let endpoint = try WebhookEndpointStore(connection: conn, keys: keys, allowLoopback: true).create(
            appID: appID, mode: .test, url: "http://127.0.0.1:\(r.port)/hooks/sms",
            eventTypes: ["push_notification.finished", "push_notification.sms_finished"])
        try endpoint.secret.text.write(toFile: dir + "/sms.secrets", atomically: true, encoding: .utf8)

        let queued = try smsNotification(mode: .test, phone: "+33644444444", text: "code 4444")
        let refused = try smsNotification(mode: .test, phone: "+15005550001", text: "code 5555")   // Twilio's invalid `To`
        try runSMS(try dispatcher())
        XCTAssertEqual(try sms(queued).status, "queued")
        XCTAssertEqual(try sms(refused).status, "failed")

        var c = WebhookDispatcherConfig(owner: "sms-hooks")
        c.allowLoopback = true
        c.pollInterval = 0.05
        c.leaseSeconds = 30
        let d = try WebhookDispatcher(config: c, databaseURL: database.conninfo, keys: keys, metrics: WebhookMetrics(),
                                      log: Log(level: .error))
        hooks = d
        d.start()
        let end = Date().addingTimeInterval(30)
        while r.log().count < 4, Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        let got = r.log()
        XCTAssertEqual(got.count, 4, "two finished and two sms_finished events: \(got)")
        for e in got {
            XCTAssertEqual(e["verified"] as? [Bool], [true], "standardwebhooks accepts \(e["type"] ?? "?")")
            XCTAssertEqual(e["status"] as? Int, 200)
        }
        func data(_ type: String, _ n: UUID) throws -> [String: Any] {
            let id = PrefixedID.format(.notification, n)
            let matching = got.filter { $0["type"] as? String == type }.compactMap { $0["data"] as? [String: Any] }
                .filter { $0["notification_id"] as? String == id }
            XCTAssertEqual(matching.count, 1, "\(type) of \(id): \(got)")
            return try XCTUnwrap(matching.first)
        }
        for n in [queued, refused] {
            let finished = try data("push_notification.finished", n)
            XCTAssertEqual(finished["status"] as? String, "sms_fallback")
            XCTAssertEqual(finished["sms"] as? String, "queued", "written before the SMS was sent, and says so")
        }
        let ok = try data("push_notification.sms_finished", queued)
        XCTAssertEqual(ok["app_id"] as? String, PrefixedID.format(.app, appID))
        XCTAssertEqual(ok["mode"] as? String, "test")
        XCTAssertEqual(ok["status"] as? String, "queued")
        XCTAssertEqual(ok["provider"] as? String, "simulator")
        XCTAssertEqual(ok["provider_message_id"] as? String, try sms(queued).providerMessageID)
        XCTAssertEqual(ok["segments"] as? Int, 1)
        XCTAssertTrue(ok["error_code"] is NSNull)
        let bad = try data("push_notification.sms_finished", refused)
        XCTAssertEqual(bad["status"] as? String, "failed")
        XCTAssertEqual(bad["error_code"] as? String, "SMS_REJECTED")
        XCTAssertEqual(bad["provider_error_code"] as? String, "21211")
        XCTAssertTrue(bad["provider_message_id"] is NSNull)
        let raw = try String(contentsOfFile: r.logPath, encoding: .utf8)
        for secret in ["33644444444", "code 4444", "15005550001", "code 5555"] {
            XCTAssertFalse(raw.contains(secret), "\(secret) left the service")
        }
        // The outbox rows of both kinds are done: each SMS once, each event to this endpoint once
        // (the base class's placeholder endpoints, which nobody can reach, hold rows of their own).
        func states() throws -> [String] {
            let r = try conn.exec("""
                SELECT kind, state, count(*)::int AS n FROM push_outbox
                 WHERE kind = 'sms' OR fair_key = $1::uuid GROUP BY kind, state ORDER BY 1, 2
                """, [.uuid(endpoint.endpoint.id)])
            return try r.rows.map { "\(try r.string($0, "kind")) \(try r.string($0, "state")) \(try r.int($0, "n"))" }
        }
        let recorded = Date().addingTimeInterval(15)   // the 200s are recorded just after the receiver logs them
        while try states() != ["sms done 2", "webhook done 4"], Date() < recorded { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(try states(), ["sms done 2", "webhook done 4"])
    }
}
