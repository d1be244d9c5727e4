import Foundation
import XCTest
import PushCore
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// R-SEND-6 and R-SMS-1 end to end: a notification that no device can take sends its SMS fallback
/// once: through the simulator in test mode (R-MODE-2: never a network), through Twilio (the fake)
/// in live mode; the outcome on the notification; one `sms` ledger row for an SMS the provider took
/// or may have taken (R-SEND-9).
final class SMSFallbackTests: SMSTestCase {
    func testTheSeedsNotificationSendsExactlyOneSMSThroughTheSimulatorAndNeverTheNetworkInTestMode() throws {
        let fake = try startTwilio()
        try setTwilio(fake.baseURL)   // a live set exists: test mode must not use it
        let n = try smsNotification(mode: .test, text: "Votre code : 123456")
        XCTAssertEqual(try sms(n).status, "pending")
        let d = try dispatcher()
        try runSMS(d)
        let s = try sms(n)
        XCTAssertEqual(s.status, "queued")
        XCTAssertEqual(s.provider, "simulator")
        XCTAssertEqual(s.providerMessageID, "SM" + n.uuidString.lowercased().replacingOccurrences(of: "-", with: ""))
        XCTAssertEqual(s.attempts, 1)
        XCTAssertEqual(s.segments, 1)
        XCTAssertEqual(s.encoding, "GSM-7")
        XCTAssertEqual(s.request, "To=%2B33612345678&From=%2B15005550006&Body=Votre%20code%20%3A%20123456",
                       "the exact form body it would have sent")
        XCTAssertNotNil(s.sentAt)
        XCTAssertEqual(try smsLedger(n).map { "\($0.mode) \($0.reason)" }, ["test queued"])
        XCTAssertEqual(try outbox(n).state, "done")
        // Nothing more goes out, however often the dispatcher runs.
        try runSMS(d, rounds: 3)
        XCTAssertEqual(try sms(n).attempts, 1)
        XCTAssertEqual(d.recordedCount, 1)
        XCTAssertTrue(fake.log("request").isEmpty, "test mode reached the network")
        XCTAssertEqual(try twilioState().state, .unverified, "test mode never touches credential state (R-APP-3)")
        XCTAssertEqual(metrics.finished.value(["simulator", "queued", ""]), 1)
    }

    func testTwiliosMagicNumbersAnswerInTestMode() throws {
        let invalid = try smsNotification(mode: .test, phone: "+15005550001")
        let unroutable = try smsNotification(mode: .test, phone: "+15005550002")
        try runSMS(try dispatcher())
        for (n, code) in [(invalid, "21211"), (unroutable, "21612")] {
            let s = try sms(n)
            XCTAssertEqual(s.status, "failed")
            XCTAssertEqual(s.errorCode, "SMS_REJECTED")
            XCTAssertEqual(s.providerErrorCode, code)
            XCTAssertNil(s.providerMessageID)
            XCTAssertEqual(try smsLedger(n).count, 0, "no ledger row: no provider took it")
        }
    }

    func testALiveSMSIsPostedOnceToTwilioWithItsFormAndBasicAuthAndVerifiesTheSet() throws {
        let fake = try startTwilio()
        try setTwilio(fake.baseURL)
        let n = try smsNotification(mode: .live, text: "Ton code : 4242 €")
        let d = try dispatcher()
        try runSMS(d, rounds: 4)
        let requests = fake.log("request")
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(requests[0]["auth_user"] as? String, Self.account)
        XCTAssertEqual(requests[0]["auth_ok"] as? Bool, true)
        XCTAssertEqual(requests[0]["path"] as? String, "/2010-04-01/Accounts/\(Self.account)/Messages.json")
        XCTAssertEqual(requests[0]["form"] as? [String: [String]],
                       ["To": ["+33612345678"], "From": ["+15005550006"], "Body": ["Ton code : 4242 €"]])
        let message = try XCTUnwrap(fake.log("message").first)
        let s = try sms(n)
        XCTAssertEqual(s.status, "queued")
        XCTAssertEqual(s.provider, "twilio")
        XCTAssertEqual(s.providerMessageID, message["sid"] as? String, "Twilio's SID recorded")
        XCTAssertEqual(s.segments, 1)
        XCTAssertEqual(s.encoding, "GSM-7")   // € is in the GSM extension table
        XCTAssertNil(s.request, "live mode keeps no request body")
        XCTAssertEqual(try smsLedger(n).map { "\($0.mode) \($0.reason)" }, ["live queued"])
        let set = try twilioState()
        XCTAssertEqual(set.state, .verified, "R-APP-3: the first accepted message verifies the set")
        XCTAssertNotNil(set.firstAcceptedAt)
    }

    func testAnInvalidNumberEndsFailedWithTwiliosCode() throws {
        let fake = try startTwilio()
        try setTwilio(fake.baseURL)
        let n = try smsNotification(mode: .live, phone: "+15005550001")
        try runSMS(try dispatcher())
        let s = try sms(n)
        XCTAssertEqual(s.status, "failed")
        XCTAssertEqual(s.errorCode, "SMS_REJECTED")
        XCTAssertEqual(s.providerErrorCode, "21211")
        XCTAssertEqual(fake.log("request").count, 1, "final: not retried")
        XCTAssertEqual(try smsLedger(n).count, 0)
        XCTAssertEqual(try twilioState().state, .unverified)
    }

    func testRateLimitedOrUnavailableWithRetryAfterIsRetriedThenQueued() throws {
        let fake = try startTwilio(["--retry-after", "30"])
        try setTwilio(fake.baseURL)
        let limited = try smsNotification(mode: .live, phone: "+19990000429")
        let unavailable = try smsNotification(mode: .live, phone: "+19990000503")
        let d = try dispatcher()
        try runSMS(d)
        for n in [limited, unavailable] {
            XCTAssertEqual(try sms(n).status, "pending")
            let o = try outbox(n)
            XCTAssertEqual(o.state, "available")
            XCTAssertGreaterThan(o.runAt.timeIntervalSinceNow, 20, "waits the Retry-After given (30 s)")
            XCTAssertEqual(o.failures, 0, "a deferral is not a failed attempt")
        }
        try smsDueNow()
        try runSMS(d)
        for n in [limited, unavailable] {
            let s = try sms(n)
            XCTAssertEqual(s.status, "queued")
            XCTAssertEqual(s.attempts, 2)
            XCTAssertEqual(try smsLedger(n).count, 1)
        }
        XCTAssertEqual(fake.log("request").count, 4)
        XCTAssertEqual(fake.log("message").count, 2)
        XCTAssertEqual(metrics.retries.current, 2)
    }

    func testATimeoutOrResetAfterWritingIsUnknownAndNeverResent() throws {
        let fake = try startTwilio()
        try setTwilio(fake.baseURL)
        let hung = try smsNotification(mode: .live, phone: "+19990000408")
        let reset = try smsNotification(mode: .live, phone: "+19990000499")
        let failing = try smsNotification(mode: .live, phone: "+19990000500")
        let d = try dispatcher(requestTimeoutMillis: 1_000)
        try runSMS(d)
        for n in [hung, reset, failing] {
            let s = try sms(n)
            XCTAssertEqual(s.status, "unknown", "\(s)")
            XCTAssertNil(s.errorCode)
            XCTAssertEqual(try outbox(n).state, "done")
            XCTAssertEqual(try smsLedger(n).map(\.reason), ["unknown"], "it may have been sent: usage bills it")
        }
        XCTAssertEqual(try sms(failing).providerErrorCode, "20500")
        try smsDueNow()
        try runSMS(d, rounds: 3)
        XCTAssertEqual(fake.log("request").count, 3, "none written twice")
        XCTAssertEqual(metrics.finished.value(["twilio", "unknown", ""]), 3)
    }

    func testUnauthorizedInvalidatesTheSetAndLaterSMSFailFastUntilItIsReplaced() throws {
        _ = try conn.exec("""
            INSERT INTO push_webhook_endpoints (id, app_id, mode, url, event_types, secret_sealed)
            VALUES (gen_random_uuid(), $1::uuid, 'live', 'https://hooks.example.com/h', '{push_app.credentials_invalid}', '\\x00')
            """, [.uuid(appID)])
        let fake = try startTwilio()
        try setTwilio(fake.baseURL, token: String(repeating: "0", count: 32))
        let first = try smsNotification(mode: .live)
        let d = try dispatcher()
        try runSMS(d)
        XCTAssertEqual(try sms(first).status, "failed")
        XCTAssertEqual(try sms(first).errorCode, "CREDENTIALS_INVALID")
        XCTAssertEqual(try sms(first).providerErrorCode, "20003")
        let set = try twilioState()
        XCTAssertEqual(set.state, .invalid)
        XCTAssertEqual(set.invalidReason, "20003")
        let events = try events("push_app.credentials_invalid")   // in the record's transaction (R-PRV-4)
        XCTAssertEqual(events.map { "\($0["kind"] ?? "") \($0["reason"] ?? "")" }, ["twilio 20003"])
        // R-APP-4: while the set is invalid, the next SMS fails at once without a request.
        let second = try smsNotification(mode: .live)
        try runSMS(d)
        XCTAssertEqual(try sms(second).errorCode, "CREDENTIALS_INVALID")
        XCTAssertEqual(try sms(second).attempts, 0)
        XCTAssertEqual(fake.log("request").count, 1)
        // A replaced set is used again.
        try setTwilio(fake.baseURL)
        let third = try smsNotification(mode: .live)
        try runSMS(d)
        XCTAssertEqual(try sms(third).status, "queued")
        XCTAssertEqual(try twilioState().state, .verified)
    }

    func testNoSetOrNoKeyFailsCredentialsInvalidWithoutACall() throws {
        let n = try smsNotification(mode: .live)
        try runSMS(try dispatcher())
        XCTAssertEqual(try sms(n).status, "failed")
        XCTAssertEqual(try sms(n).errorCode, "CREDENTIALS_INVALID")
        XCTAssertEqual(try sms(n).attempts, 0)
    }

    func testARefusedConnectionIsRetriedAndTheSMSGoesOutOnceTheProviderAnswers() throws {
        let fake = try startTwilio()
        let closed = try startTwilio()
        let deadURL = closed.baseURL
        closed.stop()
        try setTwilio(deadURL)
        let n = try smsNotification(mode: .live)
        let d = try dispatcher()
        try runSMS(d, rounds: 1)
        XCTAssertEqual(try sms(n).status, "pending")
        XCTAssertEqual(try outbox(n).failures, 1, "connection refused: a failed attempt, nothing written")
        try setTwilio(fake.baseURL)
        try smsDueNow()
        try runSMS(d)
        XCTAssertEqual(try sms(n).status, "queued")
        XCTAssertEqual(fake.log("message").count, 1)
    }

    func testAnSMSPastItsDeadlineFailsExpiredWithoutACall() throws {
        let n = try smsNotification(mode: .test)
        _ = try conn.exec("UPDATE push_notifications SET expires_at = now() - interval '1 day' WHERE id = $1::uuid", [.uuid(n)])
        _ = try conn.exec("UPDATE push_sms_outbox SET created_at = now() - interval '2 hours' WHERE notification_id = $1::uuid",
                          [.uuid(n)])
        try runSMS(try dispatcher())
        XCTAssertEqual(try sms(n).status, "failed")
        XCTAssertEqual(try sms(n).errorCode, "EXPIRED")
        XCTAssertEqual(try sms(n).attempts, 0)
        XCTAssertEqual(try smsLedger(n).count, 0)
    }

    func testTheCLIShowsTheSegmentsAtAcceptanceAndTheOutcomeOnTheNotification() throws {
        let env = ["DATABASE_URL": database.conninfo]
        let text = String(repeating: "é", count: 200) + "ж"   // 201 UTF-16 units: 3 parts of 67
        let sent = try LiveWebPushCLI.run(LiveWebPushCLI.executable, [
            "send", "--app", appID.uuidString.lowercased(), "--mode", "test", "--user", "carol", "--title", "Hi",
            "--sms-phone", "+33612345678", "--sms-text", text, "--json"], environment: env)
        XCTAssertEqual(sent.status, 0, sent.output)
        let answer = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(sent.output.utf8)) as? [String: Any], sent.output)
        XCTAssertEqual(answer["sms_segments"] as? Int, 3)
        XCTAssertEqual(answer["sms_encoding"] as? String, "UCS-2")
        let id = try XCTUnwrap((answer["notification_id"] as? String).flatMap { PrefixedID.parse($0, as: .notification) },
                               "the prefixed id (R-API-4)")
        let refused = try LiveWebPushCLI.run(LiveWebPushCLI.executable, [
            "send", "--app", appID.uuidString.lowercased(), "--mode", "test", "--user", "carol", "--title", "Hi",
            "--sms-phone", "06 12 34 56 78", "--sms-text", "hi", "--json"], environment: env)
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.output.contains("\"field\":\"sms_fallback.phone\""), refused.output)
        XCTAssertTrue(refused.output.contains("VALIDATION_ERROR"), refused.output)
        try drain()
        try runSMS(try dispatcher())
        let shown = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["notifications", "show", id.uuidString], environment: env)
        XCTAssertTrue(shown.output.contains("sms queued  provider=simulator"), shown.output)
        XCTAssertTrue(shown.output.contains("segments=3 UCS-2"), shown.output)
        XCTAssertTrue(shown.output.contains("request (test mode, not sent): To=%2B33612345678&From=%2B15005550006&Body="), shown.output)
        XCTAssertTrue(shown.output.contains("ledger sms  queued"), shown.output)
        let json = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["notifications", "show", id.uuidString, "--json"], environment: env)
        let sms = (try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])?["sms"] as? [String: Any]
        XCTAssertEqual(sms?["status"] as? String, "queued")
        XCTAssertEqual(sms?["segments"] as? Int, 3)
    }
}
