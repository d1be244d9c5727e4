import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
import XCTest

/// Web Push client against `scripts/fakes/fake_webpush.py` over real HTTP/2 + TLS on 127.0.0.1
/// (RFC 8030, RFC 8291, RFC 8292). The fake checks VAPID and headers and decrypts
/// every body with the subscription's private key.
final class WebPushClientTests: XCTestCase {
    private let fakes = StartedFakes()

    override func tearDown() {
        fakes.stopAll()
    }

    private func startFake(_ subscriptions: [FakeWebPushSubscription]) throws -> FakeWebPushService {
        fakes.keep(try FakeWebPushService.start(subscriptions))
    }

    private func table(_ answer: ProviderAnswer, verified: Bool = false) -> AnswerOutcome {
        ProviderAnswerTable.classify(answer, provider: .webpush, credentialsVerified: verified)
    }

    // MARK: - Answers

    /// RFC 8030 / ProviderAnswerTable webpush rows: every scenario in one concurrent batch,
    /// answers in request order, each mapped to its table outcome.
    func testEveryPushServiceAnswerMapsToItsTableOutcome() throws {
        let keys = try VAPIDKeys.generate()
        let other = try VAPIDKeys.generate()
        let paths = ["/push/ok-1", "/push/gone-1", "/push/notfound-1", "/push/toolarge-1", "/push/slow-1", "/push/err-1"]
        var subs = try paths.map { try FakeWebPushSubscription.make($0, vapidPublicKey: keys.publicKeyBase64URL) }
        subs.append(try FakeWebPushSubscription.make("/push/ok-otherkey", vapidPublicKey: other.publicKeyBase64URL))
        let fake = try startFake(subs)
        let client = try WebPushTestSupport.client(keys: keys)
        let batch = try subs.enumerated().map { i, sub in
            try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub, id: Int64(i))
        }
        let answers = client.send(batch)
        XCTAssertEqual(answers.count, batch.count)
        XCTAssertTrue(answers.allSatisfy { $0.transport == .response }, "\(answers)")

        let ok = answers[0]
        XCTAssertEqual(ok.httpStatus, 201)
        let location = try XCTUnwrap(ok.messageId)
        XCTAssertTrue(location.hasPrefix("/m/"), location)
        XCTAssertEqual(table(ok), .sent(messageId: location))

        XCTAssertEqual(answers[1].httpStatus, 410)
        XCTAssertEqual(table(answers[1]), .deactivateDevice(reason: .unregistered, verdictAt: nil))
        XCTAssertEqual(answers[2].httpStatus, 404)
        XCTAssertEqual(table(answers[2]), .deactivateDevice(reason: .unregistered, verdictAt: nil))
        XCTAssertEqual(answers[3].httpStatus, 413)
        XCTAssertEqual(table(answers[3]), .payloadTooLarge)
        XCTAssertEqual(answers[4].httpStatus, 429)
        XCTAssertEqual(answers[4].retryAfterSeconds, 7)
        XCTAssertEqual(table(answers[4]), .deferral(retryAfter: 7))
        XCTAssertEqual(answers[5].httpStatus, 503)
        XCTAssertEqual(table(answers[5]), .transient)

        // Bad VAPID: the subscription was created with another applicationServerKey (RFC 8292 §4) → 403.
        // Issue 7: a VAPID refusal marks the app's VAPID credentials invalid and never touches the
        // device, whether or not the credentials were verified before.
        let mismatch = answers[6]
        XCTAssertEqual(mismatch.httpStatus, 403)
        XCTAssertEqual(mismatch.reason, "VapidKeyMismatch")
        XCTAssertEqual(table(mismatch, verified: false), .credentialsInvalid(reason: "VapidKeyMismatch"))
        XCTAssertEqual(table(mismatch, verified: true), .credentialsInvalid(reason: "VapidKeyMismatch"))
        for answer in answers.dropFirst() {
            let detail = try XCTUnwrap(answer.rawDetail)
            XCTAssertTrue(detail.hasPrefix("HTTP \(answer.httpStatus ?? 0)"), detail)
            XCTAssertLessThanOrEqual(detail.count, WebPushAnswerParser.rawDetailLimit)
        }
        XCTAssertEqual(fake.log().count, batch.count, "one request per push, no retries inside the client")
    }

    /// RFC 8292 §2: a JWT whose `exp` has passed (our clock far behind) is refused 403; the table
    /// treats every web 403 as a VAPID refusal: credentials invalid, devices untouched (issue 7).
    func testExpiredVapidTokenIsRefused403() throws {
        let keys = try VAPIDKeys.generate()
        let sub = try FakeWebPushSubscription.make("/push/ok-1")
        let fake = try startFake([sub])
        let past = ManualClock(Int64(Date().timeIntervalSince1970) - 2 * 86_400)
        let client = try WebPushTestSupport.client(keys: keys, clock: past)
        let answer = client.send([try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub)])[0]
        XCTAssertEqual(answer.httpStatus, 403)
        XCTAssertEqual(answer.reason, "ExpiredJwtToken")
        XCTAssertEqual(table(answer), .credentialsInvalid(reason: "ExpiredJwtToken"))
        let entry = try XCTUnwrap(fake.log(path: sub.path).first)
        XCTAssertEqual(entry["reason"] as? String, "ExpiredJwtToken")
        XCTAssertTrue(entry["plaintext"] is NSNull, "refused before decryption")
    }

    // MARK: - Body and headers

    /// RFC 8291: the fake decrypts our body with the subscription's private key; the plaintext is
    /// exactly what was encrypted and the body is plaintext + 103 bytes (one 4096-byte record).
    func testPushServiceDecryptsExactlyThePlaintextWeEncrypted() throws {
        let keys = try VAPIDKeys.generate()
        let sub = try FakeWebPushSubscription.make("/push/ok-plain")
        let fake = try startFake([sub])
        let client = try WebPushTestSupport.client(keys: keys)
        let plaintext = #"{"v":2,"kid":"abc","title":"Grüße / é","body":"\u00e9"}"#
        let push = try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub, plaintext: plaintext)
        XCTAssertEqual(client.send([push])[0].httpStatus, 201)
        let entry = try XCTUnwrap(fake.log(path: sub.path).first)
        XCTAssertEqual(entry["plaintext"] as? String, plaintext)
        XCTAssertTrue(entry["decrypt_error"] is NSNull)
        XCTAssertEqual(entry["body_length"] as? Int, plaintext.utf8.count + WebPushEncryption.overhead)
        XCTAssertEqual(entry["record_size"] as? Int, 4096)
        XCTAssertEqual(entry["content_encoding"] as? String, "aes128gcm")
        XCTAssertEqual(entry["protocol"] as? String, "h2")
        // Our own decryption agrees (the browser side of RFC 8291).
        XCTAssertEqual(try WebPushDecryption.decrypt(body: push.payload, userAgentPrivateKey: sub.privateKey, auth: sub.auth),
                       Array(plaintext.utf8))
    }

    /// R-SEND-10 (TTL = seconds left, Urgency from priority) and R-SEND-13 (Topic from the collapse
    /// key, only when there is one), as the push service received them.
    func testTTLUrgencyAndTopicHeadersFollowTheRules() throws {
        let keys = try VAPIDKeys.generate()
        let subs = try (1...5).map { try FakeWebPushSubscription.make("/push/ok-h\($0)") }
        let fake = try startFake(subs)
        let client = try WebPushTestSupport.client(keys: keys)
        let longKey = "order 42 / a collapse key longer than thirty-two characters"
        let batch = [
            try WebPushTestSupport.push(fake.endpoint(subs[0].path), to: subs[0], ttl: 3600, priority: .high, collapseKey: "order-42"),
            try WebPushTestSupport.push(fake.endpoint(subs[1].path), to: subs[1], ttl: 59, priority: .normal, collapseKey: longKey),
            try WebPushTestSupport.push(fake.endpoint(subs[2].path), to: subs[2], ttl: 0, priority: .normal),
            try WebPushTestSupport.push(fake.endpoint(subs[3].path), to: subs[3], ttl: -5, collapseKey: ""),
            try WebPushTestSupport.push(fake.endpoint(subs[4].path), to: subs[4], ttl: 99_999_999),
        ]
        XCTAssertEqual(client.send(batch).map(\.httpStatus), [201, 201, 201, 201, 201])
        func entry(_ i: Int) throws -> [String: Any] { try XCTUnwrap(fake.log(path: subs[i].path).first) }
        XCTAssertEqual(try entry(0)["ttl"] as? String, "3600")
        XCTAssertEqual(try entry(0)["urgency"] as? String, "high")
        XCTAssertEqual(try entry(0)["topic"] as? String, "order-42")
        XCTAssertEqual(try entry(1)["ttl"] as? String, "59")
        XCTAssertEqual(try entry(1)["urgency"] as? String, "normal")
        let hashed = try WebPushTopic.topic(forCollapseKey: longKey)
        XCTAssertEqual(hashed.count, 32)
        XCTAssertEqual(try entry(1)["topic"] as? String, hashed)
        XCTAssertEqual(try entry(2)["ttl"] as? String, "0", "ttl 0 = now or never")
        XCTAssertTrue(try entry(2)["topic"] is NSNull, "no collapse key, no Topic")
        XCTAssertEqual(try entry(3)["ttl"] as? String, "0", "an expired push never asks for a negative TTL")
        XCTAssertTrue(try entry(3)["topic"] is NSNull, "an empty collapse key is none")
        XCTAssertEqual(try entry(4)["ttl"] as? String, String(Expiry.maxTTLSeconds), "capped at 28 days")
    }

    // MARK: - VAPID

    /// RFC 8292 §2: claims as the service saw them, and one token per origin reused for
    /// 20 sends spread over 9.5 hours, replaced once fewer than 60 minutes remain before `exp`.
    func testVapidTokenIsReusedAcrossTwentySendsToOneOrigin() throws {
        let keys = try VAPIDKeys.generate()
        let sub = try FakeWebPushSubscription.make("/push/ok-reuse", vapidPublicKey: keys.publicKeyBase64URL)
        let fake = try startFake([sub])
        let start = Int64(Date().timeIntervalSince1970)
        let clock = ManualClock(start)
        let cache = CountingTokenCache()
        let client = try WebPushTestSupport.client(keys: keys, clock: clock, tokenCache: cache)
        for i in 0..<20 {
            let answer = client.send([try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub, id: Int64(i))])[0]
            XCTAssertEqual(answer.httpStatus, 201, "send \(i): \(answer)")
            clock.advance(30 * 60)
        }
        let vapids = fake.log(path: sub.path).compactMap { $0["vapid"] as? [String: Any] }
        XCTAssertEqual(vapids.count, 20)
        XCTAssertEqual(Set(vapids.compactMap { $0["exp"] as? Int }), [Int(start + 12 * 3600)], "one token for all 20")
        XCTAssertEqual(cache.mints, 1)
        let claims = try XCTUnwrap(vapids.first)
        XCTAssertEqual(claims["aud"] as? String, fake.origin)
        XCTAssertEqual(claims["sub"] as? String, WebPushTestSupport.subject)
        XCTAssertEqual(claims["k"] as? String, keys.publicKeyBase64URL)

        // One second before exp − 60 min: still reused; at exp − 60 min: replaced.
        clock.advance(start + 11 * 3600 - 1 - clock.nowUnixSeconds())
        XCTAssertEqual(client.send([try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub)])[0].httpStatus, 201)
        XCTAssertEqual(cache.mints, 1)
        clock.advance(1)
        XCTAssertEqual(client.send([try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub)])[0].httpStatus, 201)
        XCTAssertEqual(cache.mints, 2)
        let renewed = fake.log(path: sub.path).last?["vapid"] as? [String: Any]
        XCTAssertEqual(renewed?["exp"] as? Int, Int(start + 23 * 3600))
    }

    // MARK: - Redirects

    /// Issue 7: a 307 from the push service is an answer, never followed (CURLOPT_FOLLOWLOCATION 0);
    /// the table makes it a final PROVIDER_ERROR.
    func testRedirectIsNotFollowed() throws {
        let keys = try VAPIDKeys.generate()
        let sub = try FakeWebPushSubscription.make("/push/redirect-1")
        let target = try FakeWebPushSubscription.make("/push/ok-redirected")
        let fake = try startFake([sub, target])
        let client = try WebPushTestSupport.client(keys: keys)
        let answer = client.send([try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub)])[0]
        XCTAssertEqual(answer.transport, .response)
        XCTAssertEqual(answer.httpStatus, 307)
        XCTAssertNil(answer.messageId)
        XCTAssertTrue(answer.rawDetail?.contains("redirect not followed") ?? false, answer.rawDetail ?? "")
        guard case .failed(let error) = table(answer) else { return XCTFail("\(table(answer))") }
        XCTAssertEqual(error.code, .providerError)
        XCTAssertEqual(fake.log().map { $0["path"] as? String }, [sub.path], "the Location was never requested")
    }
}

/// An in-memory token cache that counts how many tokens it had minted.
final class CountingTokenCache: ProviderTokenCache, @unchecked Sendable {
    private let inner = InMemoryProviderTokenCache()
    private let lock = NSLock()
    private var count = 0

    var mints: Int { lock.lock(); defer { lock.unlock() }; return count }

    func currentToken(for key: String, now: Int64, mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        try inner.currentToken(for: key, now: now) { now in
            lock.lock(); count += 1; lock.unlock()
            return try mint(now)
        }
    }

    func replaceToken(for key: String, rejected: String, now: Int64,
                      mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        try inner.replaceToken(for: key, rejected: rejected, now: now, mint: mint)
    }
}
