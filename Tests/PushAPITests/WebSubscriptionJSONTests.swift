import Foundation
import XCTest
import PushCrypto
import PushTestSupport

/// A browser's `PushSubscription.toJSON()` registers as it is (fresh-user trial): its
/// `expirationTime` (W3C Push API: null or milliseconds since the epoch) is accepted and ignored,
/// any other type refused naming `subscription.expirationTime`.
final class WebSubscriptionJSONTests: APITestCase {
    func body(expiration: String) throws -> String {
        let s = try FakeWebPushSubscription.make(scenario: "ok")
        return #"{"app_id":"\#(appID)","platform":"web","user_id":"user_1042","subscription":{"endpoint":"https://push.example.com\#(s.path)","expirationTime":\#(expiration),"keys":{"p256dh":"\#(Base64URL.encode(s.p256dh))","auth":"\#(Base64URL.encode(s.auth))"}}}"#
    }

    func testToJSONShapeRegistersAndOtherTypesAreRefused() throws {
        for expiration in ["null", "1764633600000"] {
            let r = try call("PUT", "/v1/push/devices", key: testKey, json: try body(expiration: expiration))
            XCTAssertEqual(r.status, 200, "\(expiration): \(r.text)")
            XCTAssertEqual(r.json["platform"] as? String, "web")
        }
        XCTAssertEqual(try count("push_devices", "platform = 'web'"), 2)
        let before = try fingerprint()
        let refused = try call("PUT", "/v1/push/devices", key: testKey, json: try body(expiration: "\"tomorrow\""))
        XCTAssertEqual(refused.status, 400, refused.text)
        XCTAssertEqual(refused.errorField, "subscription.expirationTime")
        XCTAssertEqual(try fingerprint(), before, "a refused body writes nothing")
    }
}
