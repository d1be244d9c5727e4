import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// The send-time policy matrix (R-SEND-3..5, R-SEND-11, R-APP-4, R-MODE-2) and plaintext shapes (R-PLAIN-1/2).
final class DeliveryPlannerTests: XCTestCase {
    private let content = NotificationContent(title: "Hello", body: "World",
                                              data: JSONObject([.init("order", .string("42")), .init("n", .number("7"))]),
                                              badge: 2, sound: "ping", threadId: "th", collapseKey: "ck", priority: .normal)

    private func device(_ platform: String, key: Bool) -> DeviceSnapshot {
        DeviceSnapshot(platform: Platform(rawValue: platform), token: "tok-\(platform)", apnsEnvironment: platform == "ios" ? .sandbox : nil,
                       publicKey: key ? sampleKey : nil, kid: key ? sampleKid : nil)
    }

    private enum Expect: Equatable { case encrypted, plaintext, webPush, refused(ErrorCode) }

    private func classify(_ decision: PlanDecision) -> Expect {
        switch decision {
        case .refuse(let error): return .refused(error.code)
        case .send(let planned):
            switch planned.body {
            case .sealed: return .encrypted
            case .plaintext: return .plaintext
            case .webPush: return .webPush
            }
        }
    }

    /// Key / no key × require on/off × ios/android/web.
    func testPolicyMatrix() {
        let table: [(platform: String, key: Bool, require: Bool, expect: Expect)] = [
            ("ios", true, false, .encrypted), ("ios", true, true, .encrypted),                          // R-SEND-3
            ("ios", false, false, .plaintext),                                                          // R-SEND-4
            ("ios", false, true, .refused(.encryptionKeyMissing)),                                      // R-SEND-5
            ("android", true, false, .encrypted), ("android", true, true, .encrypted),                  // R-SEND-3
            ("android", false, false, .plaintext),                                                      // R-SEND-4
            ("android", false, true, .refused(.encryptionKeyMissing)),                                  // R-SEND-5
            ("web", true, false, .webPush), ("web", true, true, .webPush),                              // R-SEND-11
            ("web", false, false, .webPush), ("web", false, true, .webPush),                            // R-SEND-11
        ]
        for row in table {
            let decision = DeliveryPlanner.plan(content: content, placeholders: AppPlaceholders(),
                                                requireEncryption: row.require, mode: .live, device: device(row.platform, key: row.key))
            XCTAssertEqual(classify(decision), row.expect, "\(row)")
            if case .send(let planned) = decision {
                XCTAssertEqual(planned.encrypted, row.expect != .plaintext, "\(row)")
                XCTAssertEqual(planned.priority, .normal)
                XCTAssertEqual(planned.collapseKey, "ck")
                XCTAssertEqual(planned.token, "tok-\(row.platform)")
            }
            if case .refuse(let error) = decision {
                XCTAssertEqual(LedgerRule.action(for: .failed(error.code), chargedAtAcceptance: true), .refund,
                               "R-SEND-5: refunded, never charged")
            }
        }
    }

    func testUnknownPlatformIsRefused() {
        let decision = DeliveryPlanner.plan(content: content, placeholders: AppPlaceholders(), requireEncryption: false,
                                            mode: .live, device: DeviceSnapshot(platform: "windows", token: "t"))
        XCTAssertEqual(classify(decision), .refused(.unknownPlatform))
    }

    func testCorruptStoredKeyOrKidIsRefusedNotSentInPlaintext() {
        let bad: [DeviceSnapshot] = [
            DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .sandbox, publicKey: Array(sampleKey.dropLast()), kid: sampleKid),
            DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .sandbox, publicKey: [0x02] + sampleKey.dropFirst(), kid: sampleKid),
            DeviceSnapshot(platform: "android", token: "t", publicKey: sampleKey, kid: nil),
            DeviceSnapshot(platform: "android", token: "t", publicKey: sampleKey, kid: "short"),
        ]
        for d in bad {
            for require in [false, true] {
                let decision = DeliveryPlanner.plan(content: content, placeholders: AppPlaceholders(),
                                                    requireEncryption: require, mode: .live, device: d)
                XCTAssertEqual(classify(decision), .refused(.invalidDeviceKey))
            }
        }
    }

    /// R-APP-4: an invalid credential set fails its live deliveries at once; other sets unaffected;
    /// test mode never reads credential state (R-MODE-2).
    func testInvalidCredentialsRefuseLiveDeliveriesOfThatPlatformOnly() {
        for mode in Mode.allCases {
            let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(), requireEncryption: false,
                                          mode: mode, invalidCredentials: [.ios])
            XCTAssertEqual(classify(planner.plan(device("ios", key: true))),
                           mode == .live ? .refused(.credentialsInvalid) : .encrypted)
            XCTAssertEqual(classify(planner.plan(device("android", key: true))), .encrypted)
        }
    }

    /// R-SEND-5 comes before credentials: a keyless device under require_encryption is ENCRYPTION_KEY_MISSING.
    func testKeyPolicyIsCheckedBeforeCredentials() {
        let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(), requireEncryption: true,
                                      mode: .live, invalidCredentials: [.android])
        XCTAssertEqual(classify(planner.plan(device("android", key: false))), .refused(.encryptionKeyMissing))
    }

    /// R-PLAIN-1: iOS without a key.
    func testPlaintextIOSPayloadShape() {
        guard case .send(let planned) = DeliveryPlanner.plan(content: content, placeholders: AppPlaceholders(),
                                                             requireEncryption: false, mode: .live, device: device("ios", key: false)),
              case .plaintext(.body(let body)) = planned.body else { return XCTFail("not plaintext APNs") }
        XCTAssertEqual(body.text, #"{"aps":{"alert":{"title":"Hello","body":"World"},"badge":2,"sound":"ping","thread-id":"th"},"data":{"order":"42","n":7}}"#)
        XCTAssertEqual(planned.apnsEnvironment, .sandbox)
    }

    func testPlaintextIOSPayloadLeavesOutWhatIsAbsent() {
        XCTAssertEqual(APNsPayload.plaintext(content: NotificationContent(body: "b")).text, #"{"aps":{"alert":{"body":"b"}}}"#)
        XCTAssertEqual(APNsPayload.plaintext(content: NotificationContent(badge: 0)).text, #"{"aps":{"badge":0}}"#)
        XCTAssertEqual(APNsPayload.plaintext(content: NotificationContent(title: "t")).text, #"{"aps":{"alert":{"title":"t"}}}"#)
    }

    /// R-PLAIN-2: Android without a key; non-string data values as compact JSON text.
    func testPlaintextAndroidRequestBodyShape() {
        var c = content
        c.data = JSONObject([.init("s", .string("x")), .init("o", .object(JSONObject([.init("a", .array([.number("1"), .null]))]))),
                             .init("b", .bool(true))])
        guard case .send(let planned) = DeliveryPlanner.plan(content: c, placeholders: AppPlaceholders(),
                                                             requireEncryption: false, mode: .live, device: device("android", key: false)),
              case .plaintext(let payload) = planned.body else { return XCTFail("not plaintext FCM") }
        XCTAssertEqual(payload.requestBody(ttlSeconds: 60).text,
                       #"{"message":{"token":"tok-android","notification":{"title":"Hello","body":"World"},"data":{"s":"x","o":"{\"a\":[1,null]}","b":"true"},"android":{"priority":"NORMAL","ttl":"60s","collapse_key":"ck","notification":{"sound":"ping","tag":"th","notification_count":2}}}}"#)
        // R-SEND-7 measure: keys + values + title + body.
        XCTAssertEqual(payload.ruleSize, "s".utf8.count + 1 + 1 + #"{"a":[1,null]}"#.utf8.count + 1 + 4 + 5 + 5)
    }

    func testPlaintextAndroidMinimalMessage() {
        let body = FCMMessage.plaintext(token: "t", content: NotificationContent()).requestBody(ttlSeconds: 0)
        XCTAssertEqual(body.text, #"{"message":{"token":"t","android":{"priority":"HIGH","ttl":"0s"}}}"#)
    }

    /// R-SEND-11: web plaintext is the R-ENC-3 JSON, sized plaintext + 103.
    func testWebPushCarriesSealedPlaintextJSON() {
        guard case .send(let planned) = DeliveryPlanner.plan(content: content, placeholders: AppPlaceholders(),
                                                             requireEncryption: false, mode: .test, device: device("web", key: false)),
              case .webPush(let plaintext) = planned.body else { return XCTFail("not web push") }
        XCTAssertEqual(plaintext.text, #"{"title":"Hello","body":"World","data":{"order":"42","n":7},"badge":2,"sound":"ping","thread_id":"th"}"#)
        XCTAssertEqual(planned.finalSize, plaintext.count + 103)
        XCTAssertTrue(planned.encrypted)
    }

    /// R-ENC-3: members only when present, in order.
    func testSealedPlaintextOmitsAbsentMembers() {
        XCTAssertEqual(SealedPlaintext.bytes(for: NotificationContent()).text, "{}")
        XCTAssertEqual(SealedPlaintext.bytes(for: NotificationContent(sound: "s", threadId: "t")).text, #"{"sound":"s","thread_id":"t"}"#)
        XCTAssertEqual(SealedPlaintext.bytes(for: NotificationContent(body: "", badge: 0)).text, #"{"body":"","badge":0}"#)
    }

    /// R-ENC-4: placeholders in the clear alert, badge/sound/thread-id copied in clear too.
    func testEncryptedIOSUsesPlaceholdersAndCopiesBadgeSoundThread() throws {
        let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(title: "Ping", body: "Open the app"),
                                      requireEncryption: false, mode: .live)
        guard case .send(let planned) = planner.plan(device("ios", key: true)),
              case .sealed(let plaintext, let template) = planned.body,
              case .body(let body) = try template.render(envelope: fakeEnvelope(plaintextLength: plaintext.count)) else {
            return XCTFail("not sealed APNs")
        }
        let prefix = #"{"aps":{"alert":{"title":"Ping","body":"Open the app"},"mutable-content":1,"badge":2,"sound":"ping","thread-id":"th"},"hk":{"v":2,"kid":"cHRL-UfvREIeEx3Q","enc":""#
        XCTAssertTrue(body.text.hasPrefix(prefix), body.text)
        XCTAssertEqual(planned.finalSize, body.count)
    }

    func testPriorityMapping() {
        XCTAssertEqual(Priority.high.apnsPriority, 10)
        XCTAssertEqual(Priority.normal.apnsPriority, 5)
        XCTAssertEqual(Priority.high.fcmPriority, "HIGH")
        XCTAssertEqual(Priority.normal.fcmPriority, "NORMAL")
        XCTAssertEqual(Priority.high.webPushUrgency, "high")
        XCTAssertEqual(NotificationContent().priority, .high, "R-SEND-10: high is the default")
    }

    /// R-SEND-13: collapse key at most 64 bytes at acceptance.
    func testCollapseKeyLimitAtAcceptance() {
        XCTAssertNoThrow(try NotificationContent(collapseKey: String(repeating: "k", count: 64)).validate())
        XCTAssertThrowsError(try NotificationContent(collapseKey: String(repeating: "k", count: 65)).validate()) { error in
            XCTAssertEqual((error as? PushError)?.code, .validationError)
        }
        XCTAssertThrowsError(try NotificationContent(collapseKey: String(repeating: "é", count: 33)).validate())
    }

    func testPlannerRefusalsAlwaysRefund() {
        for code in [ErrorCode.unknownPlatform, .encryptionKeyMissing, .invalidDeviceKey, .credentialsInvalid, .pushPayloadTooLarge] {
            XCTAssertFalse(LedgerRule.netsCharge(.failed(code)), "\(code) must net zero")
        }
    }
}
