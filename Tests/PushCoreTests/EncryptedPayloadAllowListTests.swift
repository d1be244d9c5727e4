import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// R-ENC-7: for an encrypted delivery the provider-visible JSON has only allowed keys and
/// value types, and neither title, body, any data value nor the notification's loc texts appear
/// anywhere in its bytes. R-KIND-2: the APNs allow-list names exactly the presentation fields beside
/// badge, sound and thread id (every allowed key is seen in some payload below, and no other).
final class EncryptedPayloadAllowListTests: XCTestCase {
    private enum Kind { case string, number, object }

    /// Allowed key paths and value types in an encrypted APNs body: R-ENC-4's, the placeholder's loc
    /// keys (R-KIND-3), the presentation fields with the critical sound dictionary (R-KIND-2), and a
    /// background push's `content-available` (R-KIND-1).
    private let apnsAllowed: [String: Set<Kind>] = [
        "aps": [.object], "aps.alert": [.object], "aps.alert.title": [.string], "aps.alert.body": [.string],
        "aps.alert.title-loc-key": [.string], "aps.alert.loc-key": [.string],
        "aps.mutable-content": [.number], "aps.badge": [.number], "aps.sound": [.string, .object],
        "aps.sound.critical": [.number], "aps.sound.name": [.string], "aps.sound.volume": [.number],
        "aps.thread-id": [.string], "aps.interruption-level": [.string], "aps.relevance-score": [.number],
        "aps.category": [.string], "aps.target-content-id": [.string], "aps.content-available": [.number],
        "hk": [.object], "hk.v": [.number], "hk.kid": [.string], "hk.enc": [.string], "hk.ct": [.string],
    ]
    /// Allowed key paths and value types in an encrypted FCM request body.
    private let fcmAllowed: [String: Set<Kind>] = [
        "message": [.object], "message.token": [.string], "message.data": [.object], "message.data.hk": [.string],
        "message.android": [.object], "message.android.priority": [.string], "message.android.ttl": [.string],
        "message.android.collapse_key": [.string],
    ]
    private let envelopeAllowed: [String: Set<Kind>] = ["v": [.number], "kid": [.string], "enc": [.string], "ct": [.string]]

    /// Checks `value` against `allowed`; returns the key paths seen.
    @discardableResult
    private func check(_ value: JSONValue, path: String, allowed: [String: Set<Kind>],
                       file: StaticString = #filePath, line: UInt = #line) -> Set<String> {
        guard case .object(let object) = value else { XCTFail("top level is not an object", file: file, line: line); return [] }
        var seen = Set<String>()
        for member in object.members {
            let p = path.isEmpty ? member.key : path + "." + member.key
            seen.insert(p)
            guard let kinds = allowed[p] else { XCTFail("key not allowed: \(p)", file: file, line: line); continue }
            switch member.value {
            case .string where kinds.contains(.string), .number where kinds.contains(.number): break
            case .object where kinds.contains(.object):
                seen.formUnion(check(member.value, path: p, allowed: allowed, file: file, line: line))
            default: XCTFail("wrong value type at \(p)", file: file, line: line)
            }
        }
        return seen
    }

    private let secretTitle = "TITLE-SECRET-7f3a"
    private let secretBody = "BODY-SECRET-91c2"
    private let secretData = "DATA-SECRET-55e0"
    private let secretKey = "DATAKEY-SECRET-0b1d"

    private let secretLoc = ["TITLE-LOC-SECRET", "TITLE-ARG-SECRET", "BODY-LOC-SECRET", "BODY-ARG-SECRET"]

    private var content: NotificationContent {
        NotificationContent(title: secretTitle, body: secretBody,
                            data: JSONObject([.init(secretKey, .string(secretData)),
                                              .init("nested", .object(JSONObject([.init("deep", .string(secretData + "-2"))]))),
                                              .init("num", .number("8675309"))]),
                            badge: 4, sound: "default", threadId: "thread-a", collapseKey: "ck-1",
                            presentation: IOSPresentation(interruptionLevel: .timeSensitive, relevanceScore: UnitFraction(0.5),
                                                          category: "MESSAGE", targetContentId: "room-1"),
                            localization: LocalizedText(titleLocKey: secretLoc[0], titleLocArgs: [secretLoc[1]],
                                                        bodyLocKey: secretLoc[2], bodyLocArgs: [secretLoc[3]]),
                            channelId: "channel-a")
    }

    /// The other shapes an encrypted APNs body takes: a critical alert under loc-key placeholders,
    /// and a background push.
    private var critical: NotificationContent {
        var c = content
        c.sound = nil
        c.presentation.interruptionLevel = .critical
        c.presentation.criticalSound = .init(name: "alarm.caf", volume: UnitFraction(0.8))
        return c
    }

    private var background: NotificationContent {
        NotificationContent(data: content.data, collapseKey: "ck-1", pushType: .background)
    }

    private func assertNoContent(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let text = bytes.text
        for secret in [secretTitle, secretBody, secretData, secretKey, "8675309", "nested"] + secretLoc {
            XCTAssertFalse(text.contains(secret), "\(secret) visible to the provider", file: file, line: line)
        }
    }

    private func render(_ platform: String, requireEncryption: Bool, content: NotificationContent? = nil,
                        placeholders: AppPlaceholders = AppPlaceholders()) throws -> ProviderPayload {
        let content = content ?? self.content
        let planner = DeliveryPlanner(content: content, placeholders: placeholders, requireEncryption: requireEncryption, mode: .live)
        guard case .send(let planned) = planner.plan(DeviceSnapshot(platform: Platform(rawValue: platform), token: "tok", apnsEnvironment: platform == "ios" ? .sandbox : nil, publicKey: sampleKey, kid: sampleKid)),
              case .sealed(let plaintext, let template) = planned.body else {
            throw PushError(.providerError, "not planned encrypted")
        }
        // The sealed plaintext does carry the content (it is what gets encrypted).
        XCTAssertTrue(plaintext.text.contains(content.title ?? secretData))
        return try template.render(envelope: fakeEnvelope(plaintextLength: plaintext.count))
    }

    func testEncryptedAPNsBodyHasOnlyAllowedKeysAndNoContent() throws {
        let locPlaceholders = AppPlaceholders(titleLocKey: "PLACEHOLDER_TITLE", bodyLocKey: "PLACEHOLDER_BODY")
        var seen = Set<String>()
        for require in [false, true] {
            for (c, p) in [(content, AppPlaceholders()), (critical, locPlaceholders), (background, locPlaceholders)] {
                guard case .body(let body) = try render("ios", requireEncryption: require, content: c, placeholders: p) else {
                    return XCTFail("not APNs")
                }
                seen.formUnion(check(try JSONParser.parse(utf8: body), path: "", allowed: apnsAllowed))
                assertNoContent(body)
            }
        }
        XCTAssertEqual(seen, Set(apnsAllowed.keys), "R-KIND-2: the allow-list names exactly what an encrypted body holds")
    }

    func testEncryptedFCMBodyHasOnlyAllowedKeysAndNoContent() throws {
        for (require, c) in [(false, content), (true, content), (true, critical), (false, background)] {
            let payload = try render("android", requireEncryption: require, content: c)
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
        for name in ["channel", "MESSAGE", "room-1", "interruption", "relevance"] {
            XCTAssertFalse(body.contains(name), "R-ENC-5, R-KIND-2: \(name) not on an encrypted Android message")
        }
        XCTAssertTrue(body.contains(#""collapse_key":"ck-1""#), "R-ENC-6: collapse key outside the envelope")
    }
}
