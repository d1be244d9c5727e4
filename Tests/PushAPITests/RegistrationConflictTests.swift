import Foundation
import XCTest

/// R-DEV-2 (product decision) through the API: a token registered again with another platform is
/// 409 `TOKEN_PLATFORM_CONFLICT` naming `platform`, and nothing is written.
final class RegistrationConflictTests: APITestCase {
    func testATokenKeepsItsPlatform() throws {
        let id = try register(token: "platform_tok")
        let before = try fingerprint()
        let r = try call("PUT", "/v1/push/devices", key: testKey,
                         json: #"{"app_id":"\#(appID)","token":"platform_tok","platform":"android","user_id":"someone_else"}"#)
        XCTAssertEqual(r.status, 409, r.text)
        XCTAssertEqual(r.errorCode, "TOKEN_PLATFORM_CONFLICT", r.text)
        XCTAssertEqual(r.errorField, "platform", r.text)
        XCTAssertEqual(try fingerprint(), before, "the device is left as it was")
        let shown = try call("GET", "/v1/push/devices/\(id)", key: testKey)
        XCTAssertEqual(shown.json["platform"] as? String, "ios", shown.text)
    }
}
