import XCTest
@testable import PushCore

/// R-SEND-13: Web Push `Topic` from the collapse key; `data` keys reserved at acceptance.
final class WebPushTopicTests: XCTestCase {
    /// A stand-in digest that records its input and returns 32 fixed bytes (0, 1, …, 31).
    private final class Digest {
        var inputs: [[UInt8]] = []
        func hash(_ bytes: [UInt8]) -> [UInt8] { inputs.append(bytes); return (0..<32).map { UInt8($0) } }
    }

    func testShortBase64URLKeyIsUsedAsIs() {
        let digest = Digest()
        XCTAssertEqual(WebPushTopic.topic(collapseKey: "order-42_A", sha256: digest.hash), "order-42_A")
        XCTAssertEqual(WebPushTopic.topic(collapseKey: String(repeating: "a", count: 32), sha256: digest.hash),
                       String(repeating: "a", count: 32))
        XCTAssertTrue(digest.inputs.isEmpty)
    }

    func testLongOrForeignKeyIsHashedAndCutTo32() {
        let digest = Digest()
        let expected = String("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8".prefix(32))
        XCTAssertEqual(WebPushTopic.topic(collapseKey: String(repeating: "a", count: 33), sha256: digest.hash), expected)
        XCTAssertEqual(WebPushTopic.topic(collapseKey: "has space", sha256: digest.hash), expected)
        XCTAssertEqual(WebPushTopic.topic(collapseKey: "a/b", sha256: digest.hash), expected)
        XCTAssertEqual(digest.inputs, [Array(String(repeating: "a", count: 33).utf8), Array("has space".utf8), Array("a/b".utf8)])
    }

    func testReservedDataKeysAreRefusedAtAcceptance() {
        for key in ["hk", "from", "message_type", "google.x", "gcm.notification.title", "gcm.n"] {
            let content = NotificationContent(data: JSONObject([.init(key, .string("v"))]))
            XCTAssertThrowsError(try content.validate(), key) { error in
                XCTAssertEqual((error as? PushError)?.code, .validationError)
            }
        }
        for key in ["hkx", "fromage", "google", "order"] {
            XCTAssertNoThrow(try NotificationContent(data: JSONObject([.init(key, .string("v"))])).validate(), key)
        }
    }
}
