import Foundation
import PushCore
import PushProviders
import XCTest

/// Token cache rules (APNs token auth, Google OAuth2) without a network.
final class ProviderTokenCacheTests: XCTestCase {
    private func minter(_ counter: Counter, lifetime: Int64 = 2700) -> (Int64) throws -> ProviderToken {
        { now in
            counter.value += 1
            return ProviderToken(value: "t\(counter.value)", issuedAt: now, refreshAt: now + lifetime)
        }
    }

    final class Counter { var value = 0 }

    func testTokenIsReusedUntilRefreshAtThenReplaced() throws {
        let cache = InMemoryProviderTokenCache(), n = Counter()
        XCTAssertEqual(try cache.currentToken(for: "k", now: 1000, mint: minter(n)).value, "t1")
        XCTAssertEqual(try cache.currentToken(for: "k", now: 1000 + 2699, mint: minter(n)).value, "t1")
        XCTAssertEqual(try cache.currentToken(for: "k", now: 1000 + 2700, mint: minter(n)).value, "t2")
        XCTAssertEqual(try cache.currentToken(for: "other", now: 1000, mint: minter(n)).value, "t3", "one token per key")
    }

    /// Issue 11: a rejected token is replaced at once, whatever its age (an APNs token 1 s old that
    /// APNs calls expired); a caller still holding it gets the replacement without a second mint.
    func testRejectedTokenIsReplacedAtOnceAndOnlyOnce() throws {
        let cache = InMemoryProviderTokenCache(), n = Counter()
        _ = try cache.currentToken(for: "k", now: 0, mint: minter(n))
        XCTAssertEqual(try cache.replaceToken(for: "k", rejected: "t1", now: 1, mint: minter(n)).value, "t2")
        XCTAssertEqual(try cache.replaceToken(for: "k", rejected: "t1", now: 2, mint: minter(n)).value,
                       "t2", "a token already replaced by another caller is kept")
        XCTAssertEqual(n.value, 2)
        XCTAssertEqual(try cache.currentToken(for: "k", now: 3, mint: minter(n)).value, "t2")
        XCTAssertEqual(try cache.replaceToken(for: "absent", rejected: "x", now: 3, mint: minter(n)).value, "t3")
    }

    func testMintFailureStoresNothing() {
        struct Boom: Error {}
        let cache = InMemoryProviderTokenCache(), n = Counter()
        XCTAssertThrowsError(try cache.currentToken(for: "k", now: 0, mint: { _ in throw Boom() }))
        XCTAssertEqual(try cache.currentToken(for: "k", now: 0, mint: minter(n)).value, "t1")
    }
}

/// Answer parsing on synthetic outcomes (Apple's "Handling notification responses from APNs",
/// Firebase's "ErrorCode").
final class ProviderAnswerParserTests: XCTestCase {
    func testAPNsTransportFailuresKeepCurlTextShort() {
        let long = String(repeating: "x", count: 1000)
        let a = APNsAnswerParser.answer(for: .timeout(long), apnsId: "id")
        XCTAssertEqual(a.transport, .timeout)
        XCTAssertNil(a.httpStatus)
        XCTAssertEqual(a.rawDetail?.count, APNsAnswerParser.rawDetailLimit)
        XCTAssertEqual(APNsAnswerParser.answer(for: .connectionError("reset"), apnsId: "id").transport, .connectionError)
        XCTAssertEqual(APNsAnswerParser.answer(for: .notSent("refused"), apnsId: "id").transport, .notSent)
    }

    func testAPNs200WithoutApnsIdHeaderFallsBackToTheRequestId() {
        let a = APNsAnswerParser.answer(for: .response(HTTPResponse(status: 200)), apnsId: "abc")
        XCTAssertEqual(a, ProviderAnswer(transport: .response, httpStatus: 200, messageId: "abc"))
    }

    func testAPNsRetryAfterAcceptsSecondsOnly() {
        func retry(_ value: String) -> Double? {
            APNsAnswerParser.answer(for: .response(HTTPResponse(status: 429, headers: ["retry-after": value],
                                                                body: Array(#"{"reason":"TooManyRequests"}"#.utf8))),
                                    apnsId: "i").retryAfterSeconds
        }
        XCTAssertEqual(retry("12"), 12)
        XCTAssertNil(retry("soon"))
        XCTAssertNil(retry("-3"))
    }

    func testAPNsNonUTF8GarbageIsSanitized() {
        let body: [UInt8] = [0x7B, 0xFF, 0x00, 0x0A, 0x41]
        let a = APNsAnswerParser.answer(for: .response(HTTPResponse(status: 500, body: body)), apnsId: "i")
        XCTAssertNil(a.reason)
        XCTAssertTrue(a.rawDetail?.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F } ?? false)
    }

    func testFCMReasonPrefersFcmErrorThenStatusAndDetectsTheToken() {
        func answer(_ json: String, status: Int = 400) -> ProviderAnswer {
            FCMAnswerParser.answer(for: .response(HTTPResponse(status: status, body: Array(json.utf8))))
        }
        let both = answer(#"{"error":{"status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#, status: 404)
        XCTAssertEqual(both.reason, "UNREGISTERED")
        XCTAssertEqual(answer(#"{"error":{"status":"PERMISSION_DENIED"}}"#, status: 403).reason, "PERMISSION_DENIED")
        XCTAssertNil(answer(#"{"error":{}}"#, status: 500).reason, "neither: HTTP status alone")
        XCTAssertTrue(answer(#"{"error":{"status":"INVALID_ARGUMENT","message":"Invalid value at 'message.token'"}}"#).namesToken)
        XCTAssertFalse(answer(#"{"error":{"status":"INVALID_ARGUMENT","message":"message too big"}}"#).namesToken)
        XCTAssertEqual(FCMAnswerParser.answer(for: .response(HTTPResponse(status: 200, body: Array(#"{"name":"projects/p/messages/1"}"#.utf8)))).messageId,
                       "projects/p/messages/1")
    }
}
