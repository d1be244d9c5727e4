import Foundation
import XCTest
import PushTestSupport
import PushCore
import PushCrypto
@testable import PushStore
@testable import PushWorker

/// Live Web Push batches: many answers in one batch, a retry that meets an invalidated VAPID set,
/// redirects, and the 4096-byte limit measured on the encrypted body (R-SEND-7).
final class LiveWebPushBatchTests: LiveWebPushTestCase {
    func testMixedBatchHandlesEachAnswerAndARetryAfterInvalidationIsRefusedWithoutRequestR_APP_4() throws {
        try setVAPID()
        var ok: [(UUID, FakeWebPushSubscription)] = []
        for _ in 0..<9 {
            let s = try fake.take("ok")
            ok.append((try webDevice(s), s))
        }
        let pinned = try (0..<2).map { _ in try fake.take("pinned") }
        let pinnedIDs = try pinned.map { try webDevice($0) }
        let gone = try fake.take("gone"), large = try fake.take("toolarge"), slow = try fake.take("slow")
        let goneID = try webDevice(gone), largeID = try webDevice(large), slowID = try webDevice(slow)
        let n = try send()
        try drain(rounds: 1)

        for (id, s) in ok {
            XCTAssertEqual(try delivery(n, id).status, "sent")
            XCTAssertEqual(fake.log(path: s.path).first?["plaintext"] as? String, Self.plaintext)
        }
        for id in pinnedIDs {
            XCTAssertEqual(try delivery(n, id).errorCode, "CREDENTIALS_INVALID")
            XCTAssertTrue(try deviceState(id).active)
        }
        XCTAssertEqual(try delivery(n, goneID).errorCode, "UNREGISTERED")
        XCTAssertFalse(try deviceState(goneID).active)
        XCTAssertEqual(try delivery(n, largeID).errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertEqual(try delivery(n, slowID).status, "retrying")
        // Refused and accepted in the same batch: invalid wins, the acceptance time is still kept (R-APP-3).
        let cred = try XCTUnwrap(try credential(.webpush))
        XCTAssertEqual(cred.state, .invalid)
        XCTAssertNotNil(cred.firstAcceptedAt)
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 1, "one event for the set, not one per refusal")
        XCTAssertEqual(try events("push_device.deactivated").count, 1)

        // The deferred delivery comes due while the set is invalid: refused at once, no request (R-APP-4).
        try dueNow()
        try drain()
        let retried = try delivery(n, slowID)
        XCTAssertEqual(retried.errorCode, "CREDENTIALS_INVALID")
        XCTAssertEqual(retried.attempts, 1)
        XCTAssertEqual(fake.log(path: slow.path).count, 1)
        XCTAssertEqual(try ledger(n, slowID), ["charge", "refund"])
        // R-SEND-9 across the notification: sent and UNREGISTERED net one charge, the rest zero.
        let r = try report(n)
        XCTAssertEqual(r.deviceCount, 10)
        XCTAssertEqual(r.status, "sent")
        XCTAssertEqual(try ledger(n, goneID), ["charge"])
        XCTAssertEqual(try ledger(n, largeID), ["charge", "refund"])
        for id in pinnedIDs { XCTAssertEqual(try ledger(n, id), ["charge", "refund"]) }
    }

    func testTwoOriginsInOneBatchEachGetAVAPIDTokenForTheirOwnAudienceRFC8292() throws {
        try setVAPID()
        // The fake's certificate names both 127.0.0.1 and localhost: two origins, one service.
        let a = try fake.take("ok"), b = try fake.take("ok")
        let byIP = try webDevice(a, host: "127.0.0.1"), byName = try webDevice(b, host: "localhost")
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, byIP).status, "sent")
        XCTAssertEqual(try delivery(n, byName).status, "sent")
        let audiences = [a, b].map { (fake.log(path: $0.path).first?["vapid"] as? [String: Any])?["aud"] as? String }
        XCTAssertEqual(audiences, ["https://127.0.0.1:\(fake.port)", "https://localhost:\(fake.port)"])
        XCTAssertEqual(fake.log(path: b.path).first?["plaintext"] as? String, Self.plaintext)
    }

    func testRedirect307IsNotFollowedAndFailsProviderErrorRefunded() throws {
        try setVAPID()
        let s = try fake.take("redirect")
        let d = try webDevice(s)
        let n = try send()
        try drain()
        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "failed")
        XCTAssertEqual(del.errorCode, "PROVIDER_ERROR")
        XCTAssertEqual(fake.log(path: s.path).map { $0["status"] as? Int }, [307])
        XCTAssertEqual(fake.log(path: "/push/ok-redirected").count, 0, "the redirect was not followed")
        XCTAssertTrue(try deviceState(d).active)
        XCTAssertEqual(try credential(.webpush)?.state, .unverified)
        XCTAssertEqual(try ledger(n, d), ["charge", "refund"])  // R-SEND-9: a provider error nets zero
    }

    func testBodyTheServiceCannotDecrypt400FailsProviderErrorDeviceKept() throws {
        try setVAPID()
        // The endpoint of a known subscription, registered with keys that are not the browser's.
        let s = try fake.take("ok")
        let stranger = try FakeWebPushSubscription.make(scenario: "ok")
        let d = try webDevice(endpoint: fake.endpoint(s.path), p256dh: stranger.p256dh, auth: stranger.auth)
        let n = try send()
        try drain()
        let del = try delivery(n, d)
        XCTAssertEqual(del.status, "failed", "a 400 is final")
        XCTAssertEqual(del.errorCode, "PROVIDER_ERROR")
        let line = try XCTUnwrap(fake.log(path: s.path).first)
        XCTAssertEqual(line["status"] as? Int, 400)
        XCTAssertNotNil(line["decrypt_error"] as? String)
        XCTAssertTrue(try deviceState(d).active)
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
        XCTAssertEqual(try credential(.webpush)?.state, .unverified)
        XCTAssertEqual(try ledger(n, d), ["charge", "refund"])
    }

    func testLargestBodyThatFitsIsSentAndOneByteMoreIsRefusedBeforeAnyRequestR_SEND_7() throws {
        try setVAPID()
        // {"title":"<t>"} is 12 + t bytes; the aes128gcm body is plaintext + 103 (RFC 8188 header 86,
        // delimiter 1, tag 16): a 3981-byte title makes exactly 4096 bytes.
        let fits = try fake.take("ok"), over = try fake.take("ok")
        let fitsID = try webDevice(fits, user: "u1"), overID = try webDevice(over, user: "u2")
        let title = String(repeating: "a", count: 3981)
        let n1 = try send(title: title, users: ["u1"])
        let n2 = try send(title: title + "a", users: ["u2"])
        try drain()

        XCTAssertEqual(try delivery(n1, fitsID).status, "sent")
        let line = try XCTUnwrap(fake.log(path: fits.path).first)
        XCTAssertEqual(line["body_length"] as? Int, 4096)
        XCTAssertEqual(line["plaintext"] as? String, #"{"title":""# + title + #""}"#)
        XCTAssertEqual(try ledger(n1, fitsID), ["charge"])

        let refused = try delivery(n2, overID)
        XCTAssertEqual(refused.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertTrue(refused.errorDetail?.contains("cut 1 byte") ?? false, String(describing: refused.errorDetail))
        XCTAssertEqual(fake.log(path: over.path).count, 0, "refused before any request")
        XCTAssertEqual(try ledger(n2, overID), ["charge", "refund"])
    }
}
