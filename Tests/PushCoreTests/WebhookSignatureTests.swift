import Foundation
import XCTest
import PushCore

/// R-HOOK-1: Standard Webhooks signatures (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`).
final class WebhookSignatureTests: XCTestCase {
    /// The example of the Standard Webhooks specification (and of its reference libraries' tests):
    /// secret, message id, timestamp and body give exactly this signature.
    func testSpecificationExampleSignature() throws {
        let secret = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = try WebhookSignature.sign(messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                                  body: Array(#"{"test": 2432232314}"#.utf8), secret: secret)
        XCTAssertEqual(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    func testHeaderCarriesOneSignaturePerSecretInOrderAndEachVerifies() throws {
        let current = try WebhookSecret.generate(), previous = try WebhookSecret.generate(), other = try WebhookSecret.generate()
        let body = Array(#"{"id":"pevt_x"}"#.utf8)
        let header = try WebhookSignature.header(messageID: "msg_1", timestamp: 1_800_000_000, body: body,
                                                 secrets: [current, previous])
        let parts = header.split(separator: " ").map(String.init)
        XCTAssertEqual(parts.count, 2)
        XCTAssertEqual(parts[0], try WebhookSignature.sign(messageID: "msg_1", timestamp: 1_800_000_000, body: body, secret: current))
        XCTAssertEqual(parts[1], try WebhookSignature.sign(messageID: "msg_1", timestamp: 1_800_000_000, body: body, secret: previous))
        for s in [current, previous] {
            XCTAssertTrue(WebhookSignature.verify(header: header, messageID: "msg_1", timestamp: 1_800_000_000, body: body, secret: s))
        }
        XCTAssertFalse(WebhookSignature.verify(header: header, messageID: "msg_1", timestamp: 1_800_000_000, body: body, secret: other))
    }

    func testVerifyRefusesAnAlteredBodyTimestampOrMessageID() throws {
        let secret = try WebhookSecret.generate()
        let body = Array(#"{"type":"push_device.deactivated"}"#.utf8)
        let header = try WebhookSignature.header(messageID: "msg_a", timestamp: 1_800_000_000, body: body, secrets: [secret])
        XCTAssertTrue(WebhookSignature.verify(header: header, messageID: "msg_a", timestamp: 1_800_000_000, body: body, secret: secret))
        var altered = body
        altered[3] ^= 1
        XCTAssertFalse(WebhookSignature.verify(header: header, messageID: "msg_a", timestamp: 1_800_000_000, body: altered, secret: secret))
        XCTAssertFalse(WebhookSignature.verify(header: header, messageID: "msg_a", timestamp: 1_800_000_001, body: body, secret: secret))
        XCTAssertFalse(WebhookSignature.verify(header: header, messageID: "msg_b", timestamp: 1_800_000_000, body: body, secret: secret))
    }

    func testSecretsAreWhsecBase64Of24RandomBytesAndRoundTrip() throws {
        let a = try WebhookSecret.generate(), b = try WebhookSecret.generate()
        XCTAssertEqual(a.key.count, 24)
        XCTAssertNotEqual(a.key, b.key)
        XCTAssertTrue(a.text.hasPrefix("whsec_"))
        XCTAssertEqual(try WebhookSecret(text: a.text), a)
        XCTAssertFalse(a.description.contains(a.text.dropFirst(6)), "a description never shows the secret")
        XCTAssertThrowsError(try WebhookSecret(text: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "no prefix")
        XCTAssertThrowsError(try WebhookSecret(text: "whsec_AAAA"), "3 bytes is too short")
        XCTAssertThrowsError(try WebhookSecret(text: "whsec_!!!"), "not base64")
    }

    func testMessageIDIsStablePerEventAndEndpointAndDiffersOtherwise() throws {
        let event = UUID(), endpoint = UUID()
        let id = try WebhookSignature.messageID(eventID: event, endpointID: endpoint)
        XCTAssertEqual(id, try WebhookSignature.messageID(eventID: event, endpointID: endpoint))
        XCTAssertNotNil(id.range(of: "^msg_[0-9a-f]{32}$", options: .regularExpression), id)
        XCTAssertNotEqual(id, try WebhookSignature.messageID(eventID: event, endpointID: UUID()), "per endpoint")
        XCTAssertNotEqual(id, try WebhookSignature.messageID(eventID: UUID(), endpointID: endpoint), "per event")
    }
}
