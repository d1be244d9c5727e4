import XCTest
@testable import PushCrypto

/// R-SEND-13: Web Push `Topic` from the collapse key.
final class WebPushTopicTests: XCTestCase {
    func testKeyOfAtMost32Base64URLCharactersIsUsedAsIsPerRSEND13() throws {
        XCTAssertEqual(try WebPushTopic.topic(forCollapseKey: "a"), "a")
        XCTAssertEqual(try WebPushTopic.topic(forCollapseKey: "order-42_status"), "order-42_status")
        let thirtyTwo = String(repeating: "Ab9-_", count: 6) + "xy"
        XCTAssertEqual(thirtyTwo.count, 32)
        XCTAssertEqual(try WebPushTopic.topic(forCollapseKey: thirtyTwo), thirtyTwo)
    }

    func testLongerKeyIsTheFirst32CharactersOfBase64URLSHA256PerRSEND13() throws {
        let thirtyThree = String(repeating: "k", count: 33)
        // base64url(SHA-256("k" x 33)), first 32 characters, computed independently with Python hashlib.
        XCTAssertEqual(try WebPushTopic.topic(forCollapseKey: thirtyThree), "k-B-Ic3qTbEsMAY56qyzZP5p8FrjwOye")
        // A 64-byte key (R-SEND-13's acceptance limit) is hashed the same way.
        XCTAssertEqual(try WebPushTopic.topic(forCollapseKey: String(repeating: "k", count: 64)),
                       "JRm0m89p_qwnCsPIYxU56MrtTH5qYsbM")
    }

    func testSHA256MatchesTheFIPS180Example() throws {
        XCTAssertEqual(Base64URL.encode(try WebPushDigest.sha256(Array("abc".utf8))),
                       "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")
    }

    func testKeysWithCharactersOutsideTheAlphabetAreHashed() throws {
        for key in ["has space", "a/b", "a+b", "é", "dot.ted", ""] {
            let topic = try WebPushTopic.topic(forCollapseKey: key)
            XCTAssertEqual(topic.count, 32, key)
            XCTAssertTrue(WebPushTopic.isValidTopic(topic), key)
            XCTAssertNotEqual(topic, key)
        }
    }

    func testTopicIsDeterministicAndDistinguishesKeys() throws {
        let long = String(repeating: "x", count: 64)
        XCTAssertEqual(try WebPushTopic.topic(forCollapseKey: long), try WebPushTopic.topic(forCollapseKey: long))
        XCTAssertNotEqual(try WebPushTopic.topic(forCollapseKey: long), try WebPushTopic.topic(forCollapseKey: long + "y"))
    }

    func testIsValidTopicBoundaries() {
        XCTAssertFalse(WebPushTopic.isValidTopic(""))
        XCTAssertTrue(WebPushTopic.isValidTopic(String(repeating: "a", count: 32)))
        XCTAssertFalse(WebPushTopic.isValidTopic(String(repeating: "a", count: 33)))
        XCTAssertFalse(WebPushTopic.isValidTopic("a=b"))
    }
}
