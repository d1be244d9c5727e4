import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// R-ENC-7: for an encrypted delivery the provider-visible JSON has only allowed keys and
/// value types, and neither title, body nor any data value appears anywhere in its bytes.
final class EncryptedPayloadAllowListTests: XCTestCase {
    private enum Kind { case string, number, object }

    /// Allowed key paths and value types in an encrypted APNs body.
    private let apnsAllowed: [String: Kind] = [
        "aps": .object, "aps.alert": .object, "aps.alert.title": .string, "aps.alert.body": .string,
        "aps.mutable-content": .number, "aps.badge": .number, "aps.sound": .string, "aps.thread-id": .string,
        "hk": .object, "hk.v": .number, "hk.kid": .string, "hk.enc": .string, "hk.ct": .string,
    ]
    /// Allowed key paths and value types in an encrypted FCM request body.
    private let fcmAllowed: [String: Kind] = [
        "message": .object, "message.token": .string, "message.data": .object, "message.data.hk": .string,
        "message.android": .object, "message.android.priority": .string, "message.android.ttl": .string,
        "message.android.collapse_key": .string,
    ]
    private let envelopeAllowed: [String: Kind] = ["v": .number, "kid": .string, "enc": .string, "ct": .string]

    private func check(_ value: JSONValue, path: String, allowed: [String: Kind], file: StaticString = #filePath, line: UInt = #line) {
        guard case .object(let object) = value else { return XCTFail("top level is not an object", file: file, line: line) }
        for member in object.members {
            let p = path.isEmpty ? member.key : path + "." + member.key
            guard let kind = allowed[p] else { XCTFail("key not allowed: \(p)", file: file, line: line); continue }
            switch (kind, member.value) {
            case (.string, .string), (.number, .number): break
            case (.object, .object): check(member.value, path: p, allowed: allowed, file: file, line: line)
            default: XCTFail("wrong value type at \(p)", file: file, line: line)
            }
        }
    }

    private let secretTitle = "TITLE-SECRET-7f3a"
    private let secretBody = "BODY-SECRET-91c2"
    private let secretData = "DATA-SECRET-55e0"
    private let secretKey = "DATAKEY-SECRET-0b1d"

    private var content: NotificationContent {
        NotificationContent(title: secretTitle, body: secretBody,
                            data: JSONObject([.init(secretKey, .string(secretData)),
                                              .init("nested", .object(JSONObject([.init("deep", .string(secretData + "-2"))]))),
                                              .init("num", .number("8675309"))]),
                            badge: 4, sound: "default", threadId: "thread-a", collapseKey: "ck-1")
    }

    private func assertNoContent(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let text = bytes.text
        for secret in [secretTitle, secretBody, secretData, secretKey, "8675309", "nested"] {
            XCTAssertFalse(text.contains(secret), "\(secret) visible to the provider", file: file, line: line)
        }
    }

    private func render(_ platform: String, requireEncryption: Bool) throws -> ProviderPayload {
        let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(), requireEncryption: requireEncryption, mode: .live)
        guard case .send(let planned) = planner.plan(DeviceSnapshot(platform: Platform(rawValue: platform), token: "tok", apnsEnvironment: platform == "ios" ? .sandbox : nil, publicKey: sampleKey, kid: sampleKid)),
              case .sealed(let plaintext, let template) = planned.body else {
            throw PushError(.providerError, "not planned encrypted")
        }
        // The sealed plaintext does carry the content (it is what gets encrypted).
        XCTAssertTrue(plaintext.text.contains(secretTitle))
        return try template.render(envelope: fakeEnvelope(plaintextLength: plaintext.count))
    }

    func testEncryptedAPNsBodyHasOnlyAllowedKeysAndNoContent() throws {
        for require in [false, true] {
            guard case .body(let body) = try render("ios", requireEncryption: require) else { return XCTFail("not APNs") }
            check(try JSONParser.parse(utf8: body), path: "", allowed: apnsAllowed)
            assertNoContent(body)
        }
    }

    func testEncryptedFCMBodyHasOnlyAllowedKeysAndNoContent() throws {
        for require in [false, true] {
            let payload = try render("android", requireEncryption: require)
            let body = payload.requestBody(ttlSeconds: 3600)
            let value = try JSONParser.parse(utf8: body)
            check(value, path: "", allowed: fcmAllowed)
            assertNoContent(body)
            // data.hk is itself an envelope with only v, kid, enc, ct.
            guard case .object(let top) = value, case .object(let message)? = top["message"],
                  case .object(let data)? = message["data"], case .string(let hk)? = data["hk"] else {
                return XCTFail("no data.hk")
            }
            check(try JSONParser.parse(hk), path: "", allowed: envelopeAllowed)
        }
    }

    /// R-ENC-5: badge, sound and thread id travel only inside the envelope on Android.
    func testEncryptedFCMCarriesNoBadgeSoundOrThread() throws {
        let body = try render("android", requireEncryption: false).requestBody(ttlSeconds: 1).text
        XCTAssertFalse(body.contains("thread-a"))
        XCTAssertFalse(body.contains("\"sound\""))
        XCTAssertFalse(body.contains("notification"))
        XCTAssertTrue(body.contains(#""collapse_key":"ck-1""#), "R-ENC-6: collapse key outside the envelope")
    }
}
