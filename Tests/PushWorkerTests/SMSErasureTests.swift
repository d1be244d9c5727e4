import Foundation
import XCTest
import PushAcceptance
import PushCore
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// R-SMS-1: the phone and the text are erased with the rest of the notification's content once
/// final (retention, `Maintainer`), an SMS still waiting keeping its own until it ends; a replay of
/// the idempotency key after the erasure still answers the first notification (R-API-5); and the
/// opt-in `push_notification.sms_finished` event (written with the change, R-PRV-4), never carrying them.
final class SMSErasureTests: SMSTestCase {
    private func stored(_ n: UUID) throws -> (notification: [String?], sms: [String?], erased: Bool) {
        let a = try conn.exec("SELECT sms_phone, sms_text FROM push_notifications WHERE id = $1::uuid", [.uuid(n)])
        let b = try conn.exec("""
            SELECT phone, text, encode(request, 'escape') AS request, content_erased_at IS NOT NULL AS erased
              FROM push_sms_outbox WHERE notification_id = $1::uuid
            """, [.uuid(n)])
        return ([try a.decode(0, "sms_phone"), try a.decode(0, "sms_text")],
                [try b.decode(0, "phone"), try b.decode(0, "text"), try b.decode(0, "request")], try b.bool(0, "erased"))
    }

    func testContentErasureClearsPhoneAndTextOnceTheSMSIsFinal() throws {
        let fake = try startTwilio(["--retry-after", "3600"])
        try setTwilio(fake.baseURL)
        let sent = try smsNotification(mode: .test, phone: "+33611111111", text: "code 1111", idempotencyKey: "k-sent")
        let waiting = try smsNotification(mode: .live, phone: "+19990000429", text: "code 2222")   // deferred (429)
        let d = try dispatcher()
        XCTAssertEqual(try d.runOnce(smsConn), 2)
        XCTAssertEqual(try sms(sent).status, "queued")
        XCTAssertEqual(try sms(waiting).status, "pending")
        XCTAssertEqual(try stored(sent).sms[0], "+33611111111")

        let r = try Maintainer(config: Maintainer.Config()).runOnce(connection: conn)
        XCTAssertEqual(r.erased, 2, "both notifications are final (sms_fallback): their content goes")
        XCTAssertEqual(r.smsErased, 1, "only the final SMS")
        let s = try stored(sent)
        XCTAssertEqual(s.notification, [nil, nil])
        XCTAssertEqual(s.sms, [nil, nil, nil])
        XCTAssertTrue(s.erased)
        let report = try sms(sent)
        XCTAssertTrue(report.erased)
        XCTAssertEqual(report.status, "queued", "the outcome stays")
        XCTAssertNotNil(report.providerMessageID)
        XCTAssertEqual(report.segments, 1)
        XCTAssertNil(report.request)

        // The waiting SMS keeps its own copy (its notification's is gone) and is sent as given.
        let w = try stored(waiting)
        XCTAssertEqual(w.notification, [nil, nil])
        XCTAssertEqual(w.sms[0], "+19990000429")
        XCTAssertEqual(w.sms[1], "code 2222")
        try smsDueNow()
        XCTAssertEqual(try d.runOnce(smsConn), 1)
        XCTAssertEqual(try sms(waiting).status, "queued")
        XCTAssertEqual(fake.log("message").first?["to"] as? String, "+19990000429")
        XCTAssertEqual(fake.log("message").first?["body"] as? String, "code 2222")
        XCTAssertEqual(try Maintainer(config: Maintainer.Config()).runOnce(connection: conn).smsErased, 1)
        XCTAssertEqual(try stored(waiting).sms, [nil, nil, nil])
        XCTAssertTrue(try sms(waiting).erased)

        // R-API-5: the key replayed after the erasure still names the first notification.
        var q = SendRequest(appID: appID, mode: .test, userIDs: ["carol"])
        q.title = "Hi Carol"
        q.body = "secret"
        q.smsFallback = .init(phone: "+33611111111", text: "code 1111")
        q.idempotencyKey = "k-sent"
        let replay = try AcceptanceService(connection: conn).send(q)
        XCTAssertFalse(replay.created)
        XCTAssertEqual(replay.notificationID, sent)
    }

    /// Issue 15 part 6 over sql/0012: erasing the user (`push_erase_user`) clears the phone, the
    /// text and test mode's request of their SMS that ended, at once, the outcome kept; one still
    /// waiting keeps its own copy, is sent as given, and retention erases it once it ends.
    func testEraseUserClearsTheirEndedSMSAndLeavesAWaitingOneToBeSent() throws {
        let fake = try startTwilio(["--retry-after", "3600"])
        try setTwilio(fake.baseURL)
        let sent = try smsNotification(mode: .test, phone: "+33633333333", text: "code 3333")
        let waiting = try smsNotification(mode: .live, phone: "+19990000429", text: "code 4444")   // deferred (429)
        let d = try dispatcher()
        XCTAssertEqual(try d.runOnce(smsConn), 2)
        XCTAssertEqual(try sms(sent).status, "queued")
        XCTAssertEqual(try sms(waiting).status, "pending")
        XCTAssertNotNil(try stored(sent).sms[2], "test mode stored the request (the test would prove nothing)")

        let service = AcceptanceService(connection: conn)
        XCTAssertEqual(try service.eraseUser(appID: appID, mode: .test, userID: "carol").notificationsErased, 1)
        XCTAssertEqual(try stored(sent).notification, [nil, nil])
        XCTAssertEqual(try stored(sent).sms, [nil, nil, nil])
        XCTAssertTrue(try stored(sent).erased)
        XCTAssertEqual(try sms(sent).status, "queued", "the outcome stays")
        XCTAssertEqual(try stored(waiting).sms[0], "+19990000429", "another mode's SMS is untouched")

        XCTAssertEqual(try service.eraseUser(appID: appID, mode: .live, userID: "carol").notificationsErased, 1)
        let w = try stored(waiting)
        XCTAssertEqual(w.notification, [nil, nil])
        XCTAssertEqual(Array(w.sms.prefix(2)), ["+19990000429", "code 4444"], "the waiting SMS keeps its copy")
        XCTAssertFalse(w.erased)
        try smsDueNow()
        XCTAssertEqual(try d.runOnce(smsConn), 1)
        XCTAssertEqual(try sms(waiting).status, "queued")
        XCTAssertEqual(fake.log("message").last?["to"] as? String, "+19990000429")
        XCTAssertEqual(try Maintainer(config: Maintainer.Config()).runOnce(connection: conn).smsErased, 1)
        XCTAssertEqual(try stored(waiting).sms, [nil, nil, nil])
        XCTAssertEqual(try service.eraseUser(appID: appID, mode: .live, userID: "carol").notificationsErased, 0, "idempotent")
    }

    /// Retention prunes the outbox rows of SMS that ended (after the finished jobs' day); the
    /// outcome stays on the SMS, one still waiting keeps its row, and nothing is sent again.
    func testRetentionPrunesTheOutboxRowsOfEndedSMSAndKeepsTheirOutcome() throws {
        let fake = try startTwilio(["--retry-after", "3600"])
        try setTwilio(fake.baseURL)
        let sent = try smsNotification(mode: .test, phone: "+33655555555")
        let waiting = try smsNotification(mode: .live, phone: "+19990000429")   // deferred (429): available
        let d = try dispatcher()
        XCTAssertEqual(try d.runOnce(smsConn), 2)
        func rows() throws -> [String] {
            let r = try conn.exec("SELECT state FROM push_outbox WHERE kind = 'sms' ORDER BY state")
            return try r.rows.map { try r.string($0, "state") }
        }
        XCTAssertEqual(try rows(), ["available", "done"])
        let maintainer = Maintainer(config: Maintainer.Config())
        XCTAssertEqual(try maintainer.runOnce(connection: conn).smsOutbox, 0, "kept for a day")
        let later = try maintainer.runOnce(connection: conn, now: Date().addingTimeInterval(2 * 86_400))
        XCTAssertEqual(later.smsOutbox, 1)
        XCTAssertEqual(try rows(), ["available"], "the waiting SMS keeps its row")
        let s = try sms(sent)
        XCTAssertEqual(s.status, "queued", "the outcome stays")
        XCTAssertNotNil(s.providerMessageID)
        XCTAssertEqual(try smsLedger(sent).count, 1)
        try smsDueNow()
        XCTAssertEqual(try d.runOnce(smsConn), 1, "only the waiting SMS is claimed")
        XCTAssertEqual(try sms(sent).attempts, 1)
        XCTAssertEqual(try sms(waiting).attempts, 2)
    }

    func testTheOptInSMSFinishedEventCarriesTheOutcomeNeverThePhoneOrTheText() throws {
        _ = try conn.exec("""
            INSERT INTO push_webhook_endpoints (id, app_id, mode, url, event_types, secret_sealed)
            VALUES (gen_random_uuid(), $1::uuid, 'test', 'https://hooks.example.com/h',
                    '{push_notification.finished,push_notification.sms_finished}', '\\x00')
            """, [.uuid(appID)])
        let n = try smsNotification(mode: .test, phone: "+33633333333", text: "code 3333")
        let finished = try events("push_notification.finished")
        XCTAssertEqual(finished.count, 1)
        XCTAssertEqual(finished[0]["status"] as? String, "sms_fallback")
        XCTAssertEqual(finished[0]["sms"] as? String, "queued", "written before the SMS is sent, and says so")
        XCTAssertTrue(try events("push_notification.sms_finished").isEmpty)
        try runSMS(try dispatcher())
        let done = try events("push_notification.sms_finished")
        XCTAssertEqual(done.count, 1)
        XCTAssertEqual(done[0]["notification_id"] as? String, n.uuidString.lowercased())
        XCTAssertEqual(done[0]["status"] as? String, "queued")
        XCTAssertEqual(done[0]["provider"] as? String, "simulator")
        XCTAssertEqual(done[0]["segments"] as? Int, 1)
        let text = try conn.exec("SELECT string_agg(payload::text, ' ') AS p FROM push_events").string(0, "p")
        XCTAssertFalse(text.contains("33633333333") || text.contains("code 3333"), text)
        // An endpoint that did not opt in gets no such event.
        _ = try conn.exec("UPDATE push_webhook_endpoints SET event_types = '{push_device.deactivated}'")
        _ = try smsNotification(mode: .test, phone: "+15005550001")
        try runSMS(try dispatcher())
        XCTAssertEqual(try events("push_notification.sms_finished").count, 1)
    }
}
