import Foundation
import PushCore
import PushProviders
import XCTest

/// Raw Web Push answers (RFC 8030 §5, §7, §8.4; RFC 8292 §4) shaped for the answer table.
final class WebPushAnswerParserTests: XCTestCase {
    private func response(_ status: Int, headers: [String: String] = [:], body: String = "",
                          truncated: Bool = false) -> HTTPOutcome {
        .response(HTTPResponse(status: status, headers: headers, body: Array(body.utf8), bodyTruncated: truncated))
    }

    private func classify(_ answer: ProviderAnswer) -> AnswerOutcome {
        ProviderAnswerTable.classify(answer, provider: .webpush, credentialsVerified: false)
    }

    /// 201 Created (and 202 Accepted with `Prefer: respond-async`): the `Location` is the message id.
    func testCreatedKeepsLocationAsMessageId() {
        let created = WebPushAnswerParser.answer(for: response(201, headers: ["location": "https://push.example.net/m/42"]))
        XCTAssertEqual(created, ProviderAnswer(transport: .response, httpStatus: 201, messageId: "https://push.example.net/m/42"))
        XCTAssertEqual(classify(created), .sent(messageId: "https://push.example.net/m/42"))
        let accepted = WebPushAnswerParser.answer(for: response(202, headers: ["location": "/m/7"]))
        XCTAssertEqual(accepted.messageId, "/m/7")
        let bare = WebPushAnswerParser.answer(for: response(201))
        XCTAssertNil(bare.messageId)
        XCTAssertEqual(classify(bare), .sent(messageId: nil))
        let long = WebPushAnswerParser.answer(for: response(201, headers: ["location": String(repeating: "a", count: 5000)]))
        XCTAssertEqual(long.messageId?.count, WebPushAnswerParser.messageIdLimit)
    }

    /// Apple's JSON `reason` is kept (403 `BadJwtToken` → credentials invalid); other bodies only
    /// feed the bounded raw detail, and the status decides.
    func testJSONReasonIsKeptAndStatusDecidesOtherwise() {
        let apple = WebPushAnswerParser.answer(for: response(403, body: #"{"reason":"BadJwtToken"}"#))
        XCTAssertEqual(apple.reason, "BadJwtToken")
        XCTAssertEqual(classify(apple), .credentialsInvalid(reason: "BadJwtToken"))
        let mozilla = WebPushAnswerParser.answer(for: response(410, body: #"{"code":410,"errno":106,"error":"Gone","message":"Request did not validate"}"#))
        XCTAssertNil(mozilla.reason)
        XCTAssertEqual(mozilla.rawDetail?.hasPrefix(#"HTTP 410: {"code":410"#), true, mozilla.rawDetail ?? "")
        XCTAssertEqual(classify(mozilla), .deactivateDevice(reason: .unregistered, verdictAt: nil))
        let missing = WebPushAnswerParser.answer(for: response(401, body: "<html>Unauthorized</html>"))
        XCTAssertNil(missing.reason)
        XCTAssertEqual(classify(missing), .credentialsInvalid(reason: "HTTP 401"))
        let bad = WebPushAnswerParser.answer(for: response(400, body: "bad\u{1}header\n"))
        XCTAssertEqual(bad.rawDetail, "HTTP 400: bad?header?")
        guard case .failed(let error) = classify(bad) else { return XCTFail("400 must fail") }
        XCTAssertEqual(error.code, .providerError)
    }

    /// Raw detail stays bounded whatever the body size; a truncated body is still parsed safely.
    func testRawDetailIsBounded() {
        let huge = WebPushAnswerParser.answer(for: response(500, body: String(repeating: "x", count: 70_000), truncated: true))
        XCTAssertEqual(huge.rawDetail?.count, WebPushAnswerParser.rawDetailLimit)
        XCTAssertEqual(classify(huge), .transient)
        let empty = WebPushAnswerParser.answer(for: response(413))
        XCTAssertEqual(empty.rawDetail, "HTTP 413")
        XCTAssertEqual(classify(empty), .payloadTooLarge)
    }

    /// RFC 9110 §10.2.3: `Retry-After` delay-seconds are kept; an HTTP-date or junk is dropped.
    func testRetryAfterSeconds() {
        let slow = WebPushAnswerParser.answer(for: response(429, headers: ["retry-after": "30"]))
        XCTAssertEqual(slow.retryAfterSeconds, 30)
        XCTAssertEqual(classify(slow), .deferral(retryAfter: 30))
        let dated = WebPushAnswerParser.answer(for: response(429, headers: ["retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"]))
        XCTAssertNil(dated.retryAfterSeconds)
        XCTAssertEqual(classify(dated), .deferral(retryAfter: nil))
        XCTAssertEqual(WebPushAnswerParser.answer(for: response(503, headers: ["retry-after": "5"])).retryAfterSeconds, 5)
    }

    /// A redirect is an answer, not followed; the table fails it (PROVIDER_ERROR).
    func testRedirectIsAnAnswerNotFollowed() {
        let moved = WebPushAnswerParser.answer(for: response(307, headers: ["location": "https://10.0.0.1/x"]))
        XCTAssertEqual(moved.httpStatus, 307)
        XCTAssertNil(moved.messageId)
        XCTAssertEqual(moved.rawDetail, "HTTP 307 (redirect not followed)")
        XCTAssertEqual(classify(moved).ending, .failed(.providerError))
    }

    /// Transport failures keep their kind and curl's text (clipped); all transient.
    func testTransportFailuresKeepTheirKind() {
        let cases: [(HTTPOutcome, ProviderAnswer.Transport)] = [
            (.timeout("curl 28 Timeout"), .timeout), (.connectionError("curl 16 HTTP/2 stream reset"), .connectionError),
            (.notSent("curl 7 " + String(repeating: "z", count: 400)), .notSent),
        ]
        for (outcome, transport) in cases {
            let answer = WebPushAnswerParser.answer(for: outcome)
            XCTAssertEqual(answer.transport, transport)
            XCTAssertNil(answer.httpStatus)
            XCTAssertLessThanOrEqual(answer.rawDetail?.count ?? 0, WebPushAnswerParser.rawDetailLimit)
            XCTAssertTrue(answer.rawDetail?.hasPrefix("curl") ?? false)
            XCTAssertEqual(classify(answer), .transient)
        }
    }
}
