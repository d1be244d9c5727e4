import Foundation
import XCTest
import PushCore
import PushCrypto
@testable import PushStore
@testable import PushWorker

/// The worker with `LiveRouter` delivering Web Push (issue 7) to `fake_webpush.py`, one test per
/// answer of the Web Push rows of `ProviderAnswerTable` (RFC 8030 §5, §7, §8.4; RFC 8292 §4), with the
/// device, credential, event and ledger (R-SEND-9) effects of each.
final class LiveWebPushTests: LiveWebPushTestCase {
    func testCreated201IsSentWithLocationVerifiesVAPIDAndFakeDecryptsExactPlaintextR_ENC_3_R_SEND_11() throws {
        try setVAPID()
        let s = try fake.take("ok")
        let d = try webDevice(s)
        let n = try send(collapseKey: "c1", priority: "normal")
        try drain()

        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "sent")
        XCTAssertNil(del.errorCode)
        XCTAssertEqual(del.provider, "webpush")
        XCTAssertTrue(del.encrypted, "R-SEND-11: a web delivery counts as encrypted")
        XCTAssertEqual(del.attempts, 1)
        let logged = fake.log(path: s.path)
        XCTAssertEqual(logged.count, 1)
        let line = try XCTUnwrap(logged.first)
        XCTAssertEqual(line["status"] as? Int, 201)
        // The Location of the created message resource is the provider message id (RFC 8030 §5).
        let messageID = try XCTUnwrap(del.providerMessageID)
        XCTAssertTrue(messageID.hasPrefix("/m/") && messageID.count == 35, messageID)
        // R-ENC-3 / RFC 8291: the fake decrypted exactly the sealed plaintext, and nothing else.
        XCTAssertNil(line["decrypt_error"] as? String)
        XCTAssertEqual(line["plaintext"] as? String, Self.plaintext)
        XCTAssertEqual(line["body_length"] as? Int, Self.plaintext.utf8.count + 103, "R-SEND-7: body = plaintext + 103")
        XCTAssertEqual(line["content_encoding"] as? String, "aes128gcm")
        XCTAssertEqual(line["protocol"] as? String, "h2")
        XCTAssertEqual(line["urgency"] as? String, "normal")  // R-SEND-10
        XCTAssertEqual(line["topic"] as? String, "c1")  // R-SEND-13, R-ENC-6
        let ttl = try XCTUnwrap(Int(try XCTUnwrap(line["ttl"] as? String)))
        XCTAssertTrue((2_419_000...2_419_200).contains(ttl), "R-SEND-10: TTL = seconds left, got \(ttl)")
        let claims = try XCTUnwrap(line["vapid"] as? [String: Any])
        XCTAssertEqual(claims["sub"] as? String, Self.subject)
        XCTAssertEqual(claims["k"] as? String, vapid.publicKeyBase64URL)
        XCTAssertEqual(claims["aud"] as? String, "https://127.0.0.1:\(fake.port)")

        let cred = try XCTUnwrap(try credential(.webpush))
        XCTAssertEqual(cred.state, .verified, "R-APP-3: the first live acceptance verifies the VAPID set")
        XCTAssertNotNil(cred.firstAcceptedAt)
        XCTAssertEqual(try ledger(n, d), ["charge"])  // R-SEND-9: sent nets one charge
        let r = try report(n)
        XCTAssertEqual(r.status, "sent")
        XCTAssertEqual(r.deviceCount, 1)
    }

    func testGone410DeactivatesDeviceUnregisteredWithOneEventR_PRV_1() throws {
        try assertDeactivatedUnregistered(scenario: "gone", status: 410)
    }

    func testNotFound404DeactivatesDeviceUnregisteredWithOneEventR_PRV_1() throws {
        try assertDeactivatedUnregistered(scenario: "notfound", status: 404)
    }

    /// R-PRV-1 with R-DEV-8: registered before the request, so the request time (the verdict's time
    /// for Web Push) is newer and the device goes.
    private func assertDeactivatedUnregistered(scenario: String, status: Int, file: StaticString = #filePath,
                                               line: UInt = #line) throws {
        try setVAPID()
        let s = try fake.take(scenario)
        let d = try webDevice(s)
        let n = try send()
        try drain()
        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "failed", file: file, line: line)
        XCTAssertEqual(del.errorCode, "UNREGISTERED", file: file, line: line)
        XCTAssertEqual(fake.log(path: s.path).map { $0["status"] as? Int }, [status], file: file, line: line)
        let state = try deviceState(d)
        XCTAssertFalse(state.active, file: file, line: line)
        XCTAssertEqual(state.reason, "UNREGISTERED", file: file, line: line)
        let ev = try events("push_device.deactivated")
        XCTAssertEqual(ev.count, 1, file: file, line: line)
        XCTAssertEqual(ev.first?["device_id"] as? String, d.uuidString.lowercased(), file: file, line: line)
        XCTAssertEqual(ev.first?["reason"] as? String, "UNREGISTERED", file: file, line: line)
        XCTAssertEqual(try ledger(n, d), ["charge"], file: file, line: line)  // R-SEND-9: rejected for the endpoint itself
        // The VAPID set was not refused, but no notification was accepted with it: still unverified (R-APP-3).
        XCTAssertEqual(try credential(.webpush)?.state, .unverified, file: file, line: line)
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 0, file: file, line: line)
    }

    func testGone410OlderThanReRegistrationKeepsDeviceR_DEV_8() throws {
        try setVAPID()
        let s = try fake.take("gone")
        let d = try webDevice(s)
        // The browser subscribed again after the request went out (the request time is the verdict's time).
        try world.setDeviceLastRegistered(d, Date().addingTimeInterval(3600))
        let n = try send()
        try drain()
        XCTAssertEqual(fake.log(path: s.path).count, 1)
        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "failed")
        XCTAssertEqual(del.errorCode, "UNREGISTERED")
        XCTAssertTrue(try deviceState(d).active)
        XCTAssertNil(try deviceState(d).reason)
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
        XCTAssertEqual(try ledger(n, d), ["charge"])  // R-SEND-9: the ending is UNREGISTERED either way
    }

    func testPayloadTooLarge413FailsRefundedDeviceKept() throws {
        try setVAPID()
        let s = try fake.take("toolarge")
        let d = try webDevice(s)
        let n = try send()
        try drain()
        XCTAssertEqual(fake.log(path: s.path).map { $0["status"] as? Int }, [413])
        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "failed")
        XCTAssertEqual(del.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertTrue(try deviceState(d).active)
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
        XCTAssertEqual(try ledger(n, d), ["charge", "refund"])  // R-SEND-9: the provider's too-large nets zero
        XCTAssertEqual(try report(n).status, "failed")
    }

    func testTooManyRequests429WithRetryAfterIsADeferralNotAFailureR_SEND_12() throws {
        try setVAPID()
        let s = try fake.take("slow")
        let d = try webDevice(s)
        let n = try send(collapseKey: "news.update:42")
        try drain()
        var del = try delivery(n, d)
        XCTAssertEqual(del.status, "retrying")
        XCTAssertEqual(del.attempts, 1)
        let wait = try XCTUnwrap(del.nextAttemptAt).timeIntervalSinceNow
        XCTAssertGreaterThanOrEqual(wait, Double(LiveWebPushFake.retryAfter) - 2, "waits the Retry-After given")
        XCTAssertEqual(try failures(d), 0, "a deferral is not a failed attempt")
        XCTAssertEqual(try ledger(n, d), ["charge"])
        // Deferred again: still no failed attempt, the device and credentials are untouched.
        try dueNow()
        try drain()
        del = try delivery(n, d)
        XCTAssertEqual(del.status, "retrying")
        XCTAssertEqual(del.attempts, 2)
        XCTAssertEqual(try failures(d), 0)
        XCTAssertEqual(fake.log(path: s.path).map { $0["status"] as? Int }, [429, 429])
        // R-SEND-13: a key that is not base64url travels hashed; the fake checked the header's syntax.
        let topic = try XCTUnwrap(fake.log(path: s.path).first?["topic"] as? String)
        XCTAssertEqual(topic, try WebPushTopic.topic(forCollapseKey: "news.update:42"))
        XCTAssertEqual(topic.count, 32)
        XCTAssertTrue(try deviceState(d).active)
        XCTAssertEqual(try credential(.webpush)?.state, .unverified)
    }

    func testServiceUnavailable503IsTransientThenRetriesExhaustedRefundedR_SEND_12() throws {
        try makeWorker(retryPolicy: RetryPolicy(baseDelay: 1, maxDelay: 300, maxFailedAttempts: 2, minimumRetryAfter: 1))
        try setVAPID()
        let s = try fake.take("err")
        let d = try webDevice(s)
        let n = try send()
        try drain()
        let first = try delivery(n, d)
        XCTAssertEqual(first.status, "retrying")
        XCTAssertNil(first.errorCode)
        XCTAssertEqual(try failures(d), 1, "a 5xx counts as a failed attempt")
        XCTAssertGreaterThan(try XCTUnwrap(first.nextAttemptAt).timeIntervalSinceNow, 0)
        XCTAssertEqual(try ledger(n, d), ["charge"])
        try dueNow()
        try drain()
        let last = try delivery(n, d)
        XCTAssertEqual(last.status, "failed")
        XCTAssertEqual(last.errorCode, "RETRIES_EXHAUSTED")
        XCTAssertEqual(last.attempts, 2)
        XCTAssertEqual(fake.log(path: s.path).map { $0["status"] as? Int }, [503, 503])
        XCTAssertTrue(try deviceState(d).active)
        XCTAssertEqual(try ledger(n, d), ["charge", "refund"])  // R-SEND-9: RETRIES_EXHAUSTED nets zero
    }

    func testServiceUnavailable503ThenCreatedIsSentOnRetryResealedR_ENC_8() throws {
        try setVAPID()
        let s = try fake.take("flaky")
        let d = try webDevice(s)
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d).status, "retrying")
        try dueNow()
        try drain()
        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "sent")
        XCTAssertEqual(del.attempts, 2)
        XCTAssertTrue(try XCTUnwrap(del.providerMessageID).hasPrefix("/m/"))
        let logged = fake.log(path: s.path)
        XCTAssertEqual(logged.map { $0["status"] as? Int }, [503, 201])
        // Each attempt was encrypted afresh and decrypts to the same plaintext.
        XCTAssertEqual(logged.map { $0["plaintext"] as? String }, [Self.plaintext, Self.plaintext])
        XCTAssertEqual(logged.map { $0["urgency"] as? String }, ["high", "high"])  // R-SEND-10 default
        XCTAssertTrue(logged.allSatisfy { $0["topic"] is NSNull }, "no collapse key, no Topic header")
        XCTAssertEqual(try ledger(n, d), ["charge"])
        XCTAssertEqual(try credential(.webpush)?.state, .verified)
    }
}
