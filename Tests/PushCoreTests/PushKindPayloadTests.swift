import XCTest
@testable import PushCore

/// R-KIND-1..3 byte for byte: each push type × platform × key / no key, the sealed plaintext's extra
/// fields, the presentation fields in clear, loc-key placeholders, and the headers each push type
/// asks of its provider.
final class PushKindPayloadTests: XCTestCase {
    /// base64url of the fake envelope's 65 bytes of 0x04.
    private static let enc = String(repeating: "BAQE", count: 21) + "BAQ"

    /// An alert with every field of every kind.
    private let alert = NotificationContent(
        title: "Hi", body: "B", data: JSONObject([.init("k", .string("v"))]), badge: 3, sound: "s", threadId: "t",
        collapseKey: "ck", priority: .normal,
        presentation: IOSPresentation(interruptionLevel: .timeSensitive, relevanceScore: UnitFraction(0.75),
                                      category: "CAT", targetContentId: "tgt"),
        localization: LocalizedText(titleLocKey: "TK", titleLocArgs: ["a1"], bodyLocKey: "BK", bodyLocArgs: ["b1", "b2"]),
        channelId: "chan")
    /// A background push: data and the collapse key only.
    private let background = NotificationContent(data: JSONObject([.init("k", .string("v"))]), collapseKey: "ck",
                                                 pushType: .background)

    private let placeholders = AppPlaceholders(title: "P", body: "Q")
    private let locPlaceholders = AppPlaceholders(title: "P", body: "Q", titleLocKey: "PH_T", bodyLocKey: "PH_B")

    private func device(_ platform: String, key: Bool) -> DeviceSnapshot {
        DeviceSnapshot(platform: Platform(rawValue: platform), token: "tok-\(platform)", apnsEnvironment: platform == "ios" ? .sandbox : nil,
                       publicKey: key ? sampleKey : nil, kid: key ? sampleKid : nil)
    }

    /// The planned delivery and its provider body (encrypted ones rendered with a fake envelope of
    /// the planned lengths; Web Push: the plaintext RFC 8291 encrypts).
    private func body(_ content: NotificationContent, _ platform: String, key: Bool,
                      placeholders: AppPlaceholders? = nil) throws -> (PlannedDelivery, String) {
        let planner = DeliveryPlanner(content: content, placeholders: placeholders ?? self.placeholders,
                                      requireEncryption: false, mode: .live)
        guard case .send(let planned) = planner.plan(device(platform, key: key)) else {
            throw PushError(.providerError, "refused")
        }
        switch planned.body {
        case .plaintext(let payload):
            return (planned, payload.requestBody(ttlSeconds: 60).text)
        case .sealed(let plaintext, let template):
            let payload = try template.render(envelope: fakeEnvelope(plaintextLength: plaintext.count))
            XCTAssertEqual(payload.ruleSize, planned.finalSize, "R-SEND-7: the planned size is the built one")
            return (planned, payload.requestBody(ttlSeconds: 60).text)
        case .webPush(let plaintext):
            return (planned, plaintext.text)
        }
    }

    private func envelope(_ plaintext: [UInt8]) -> String {
        fakeEnvelope(plaintextLength: plaintext.count).jsonBytes.text
    }

    // MARK: - Alert × platform × key

    func testAlertPayloadsByteForByte() throws {
        let sealed = #"{"title":"Hi","body":"B","data":{"k":"v"},"badge":3,"sound":"s","thread_id":"t","title_loc_key":"TK","title_loc_args":["a1"],"body_loc_key":"BK","body_loc_args":["b1","b2"]}"#
        XCTAssertEqual(SealedPlaintext.bytes(for: alert).text, sealed, "R-KIND-3: loc texts sealed after R-ENC-3's six, in order")
        let env = envelope(Array(sealed.utf8))
        let clearAPS = #""badge":3,"sound":"s","thread-id":"t","interruption-level":"time-sensitive","relevance-score":0.75,"category":"CAT","target-content-id":"tgt""#
        let expected: [(String, Bool, String)] = [
            ("ios", false, #"{"aps":{"alert":{"title":"Hi","body":"B","title-loc-key":"TK","title-loc-args":["a1"],"loc-key":"BK","loc-args":["b1","b2"]},"# + clearAPS + #"},"data":{"k":"v"}}"#),
            ("ios", true, #"{"aps":{"alert":{"title":"P","body":"Q"},"mutable-content":1,"# + clearAPS + #"},"hk":"# + env + "}"),
            ("android", false, #"{"message":{"token":"tok-android","notification":{"title":"Hi","body":"B"},"data":{"k":"v"},"android":{"priority":"NORMAL","ttl":"60s","collapse_key":"ck","notification":{"sound":"s","tag":"t","notification_count":3,"channel_id":"chan","title_loc_key":"TK","title_loc_args":["a1"],"body_loc_key":"BK","body_loc_args":["b1","b2"]}}}}"#),
            ("android", true, #"{"message":{"token":"tok-android","data":{"hk":"# + JSONWriter.string(.string(env)) + #"},"android":{"priority":"NORMAL","ttl":"60s","collapse_key":"ck"}}}"#),
            ("web", false, sealed), ("web", true, sealed),
        ]
        for (platform, key, text) in expected {
            let (planned, built) = try body(alert, platform, key: key)
            XCTAssertEqual(built, text, "\(platform) key \(key)")
            XCTAssertEqual(planned.pushType, .alert)
        }
    }

    /// R-KIND-3: an app's loc keys replace the literal placeholder (never with args), and nothing of
    /// the content (title, body, data, the notification's own loc keys and args) is in clear.
    func testLocKeyPlaceholdersReplaceTheLiteralOnesAndNoContentIsInClear() throws {
        let (_, built) = try body(alert, "ios", key: true, placeholders: locPlaceholders)
        XCTAssertTrue(built.hasPrefix(#"{"aps":{"alert":{"title-loc-key":"PH_T","loc-key":"PH_B"},"mutable-content":1,"badge":3,"#), built)
        for secret in ["Hi", "\"B\"", "TK", "BK", "a1", "b1", "b2", "\"k\"", ":\"v\"", "\"P\"", "\"Q\"", "loc-args", "title-loc-args"] {
            XCTAssertFalse(built.contains(secret), "\(secret) in clear: \(built)")
        }
        // One key alone replaces only its part.
        let titleOnly = AppPlaceholders(title: "P", body: "Q", titleLocKey: "PH_T")
        XCTAssertTrue(try body(alert, "ios", key: true, placeholders: titleOnly).1
            .hasPrefix(#"{"aps":{"alert":{"title-loc-key":"PH_T","body":"Q"},"#))
        let bodyOnly = AppPlaceholders(title: "P", body: "Q", bodyLocKey: "PH_B")
        XCTAssertTrue(try body(alert, "ios", key: true, placeholders: bodyOnly).1
            .hasPrefix(#"{"aps":{"alert":{"title":"P","loc-key":"PH_B"},"#))
        // Plaintext devices never see the placeholder, loc keys or not.
        XCTAssertFalse(try body(alert, "ios", key: false, placeholders: locPlaceholders).1.contains("PH_"))
    }

    // MARK: - Background × platform × key

    func testBackgroundPayloadsByteForByte() throws {
        let sealed = #"{"data":{"k":"v"}}"#
        XCTAssertEqual(SealedPlaintext.bytes(for: background).text, sealed, "R-KIND-1: the envelope seals the data only")
        let env = envelope(Array(sealed.utf8))
        let expected: [(String, Bool, String)] = [
            ("ios", false, #"{"aps":{"content-available":1},"data":{"k":"v"}}"#),
            ("ios", true, #"{"aps":{"content-available":1},"hk":"# + env + "}"),
            ("android", false, #"{"message":{"token":"tok-android","data":{"k":"v"},"android":{"priority":"HIGH","ttl":"60s","collapse_key":"ck"}}}"#),
            ("android", true, #"{"message":{"token":"tok-android","data":{"hk":"# + JSONWriter.string(.string(env)) + #"},"android":{"priority":"HIGH","ttl":"60s","collapse_key":"ck"}}}"#),
            ("web", false, sealed), ("web", true, sealed),
        ]
        for (platform, key, text) in expected {
            // The app's placeholders, loc keys or not, never reach a background push.
            let (planned, built) = try body(background, platform, key: key, placeholders: locPlaceholders)
            XCTAssertEqual(built, text, "\(platform) key \(key)")
            XCTAssertEqual(planned.pushType, .background)
            XCTAssertEqual(planned.collapseKey, "ck", "R-ENC-6: the collapse key travels outside")
        }
        // With no data at all: a bare wake-up, and an empty sealed object for keyed devices.
        let bare = NotificationContent(pushType: .background)
        XCTAssertEqual(APNsPayload.plaintext(content: bare).text, #"{"aps":{"content-available":1}}"#)
        XCTAssertEqual(SealedPlaintext.bytes(for: bare).text, "{}")
        XCTAssertEqual(try body(bare, "ios", key: true).1, #"{"aps":{"content-available":1},"hk":"# + envelope(Array("{}".utf8)) + "}")
    }

    /// R-KIND-1 headers: background is `apns-push-type: background` with `apns-priority: 5` whatever the
    /// priority, Web Push `Urgency: low`; FCM keeps R-SEND-10's priority (asserted in the bodies above).
    func testPushTypeHeaders() {
        XCTAssertEqual(PushType.background.apnsPushType, "background")
        XCTAssertEqual(PushType.alert.apnsPushType, "alert")
        XCTAssertEqual(PushType.background.apnsPriority(.high), 5, "Apple refuses 10 for a background push")
        XCTAssertEqual(PushType.background.apnsPriority(.normal), 5)
        XCTAssertEqual(PushType.alert.apnsPriority(.high), 10)
        XCTAssertEqual(PushType.alert.apnsPriority(.normal), 5)
        XCTAssertEqual(PushType.background.webPushUrgency(.high), "low")
        XCTAssertEqual(PushType.alert.webPushUrgency(.high), "high")
        XCTAssertEqual(PushType.alert.webPushUrgency(.normal), "normal")
    }

    // MARK: - Presentation fields one by one

    /// Each presentation field alone, in clear in `aps` for plaintext and encrypted iOS alike, and
    /// absent from Android and Web payloads (R-KIND-2).
    func testEachPresentationFieldAloneIsInClearOnIOSAndIgnoredElsewhere() throws {
        let cases: [(IOSPresentation, String)] = [
            (IOSPresentation(interruptionLevel: .passive), #""interruption-level":"passive""#),
            (IOSPresentation(interruptionLevel: .active), #""interruption-level":"active""#),
            (IOSPresentation(relevanceScore: UnitFraction(0)), #""relevance-score":0"#),
            (IOSPresentation(relevanceScore: UnitFraction(1)), #""relevance-score":1"#),
            (IOSPresentation(relevanceScore: UnitFraction(0.0001)), #""relevance-score":0.0001"#),
            (IOSPresentation(category: "MSG"), #""category":"MSG""#),
            (IOSPresentation(targetContentId: "room-\"7\""), #""target-content-id":"room-\"7\"""#),
            (IOSPresentation(interruptionLevel: .critical, criticalSound: .init(name: "alarm.caf", volume: UnitFraction(0.5))),
             #""sound":{"critical":1,"name":"alarm.caf","volume":0.5},"interruption-level":"critical""#),
            (IOSPresentation(interruptionLevel: .critical, criticalSound: .init(name: "default")),
             #""sound":{"critical":1,"name":"default"},"interruption-level":"critical""#),
        ]
        for (presentation, member) in cases {
            let c = NotificationContent(title: "x", presentation: presentation)
            XCTAssertNoThrow(try c.validate())
            XCTAssertEqual(APNsPayload.plaintext(content: c).text, #"{"aps":{"alert":{"title":"x"},"# + member + "}}")
            XCTAssertTrue(try body(c, "ios", key: true).1.hasPrefix(#"{"aps":{"alert":{"title":"P","body":"Q"},"mutable-content":1,"# + member + #"},"hk":"#))
            for (platform, key) in [("android", false), ("android", true), ("web", false)] {
                let built = try body(c, platform, key: key).1
                for name in ["interruption", "relevance", "category", "target", "critical", "MSG", "alarm"] {
                    XCTAssertFalse(built.contains(name), "\(name) sent to \(platform): \(built)")
                }
            }
        }
    }

    func testUnitFractionSpellingAndRange() {
        XCTAssertEqual(UnitFraction(0.25)?.description, "0.25")
        XCTAssertEqual(UnitFraction(0.1)?.description, "0.1")
        XCTAssertEqual(UnitFraction(0.1234)?.description, "0.1234")
        XCTAssertEqual(UnitFraction(1.0)?.description, "1")
        XCTAssertEqual(UnitFraction(0.0)?.description, "0")
        for bad in [-0.0001, 1.0001, 0.12345, .nan, .infinity, 2] { XCTAssertNil(UnitFraction(bad), "\(bad)") }
        XCTAssertEqual(UnitFraction(0.3)?.value, 0.3)
    }

    /// Strict and exact: a value is taken only when it is the double of a decimal of at most four
    /// places, as that decimal's text reads (every k / 10,000 from its text); anything else is
    /// refused however close (1e-11 is not 0, nor 0.00005 0.0001), and a number text that would
    /// read as 0 or infinity out of a double's range is no number (`1e-400`, `1e400`).
    func testUnitFractionIsExactAndNumberTextStrict() throws {
        for k in 0...10_000 {
            let text = k == 10_000 ? "1" : "0." + String(repeating: "0", count: 4 - String(k).count) + String(k)
            let d = try XCTUnwrap(JSONValue.double(fromNumberText: text), text)
            XCTAssertEqual(UnitFraction(d)?.tenThousandths, k, text)
        }
        for text in ["1e-11", "0.00005", "0.99995", "0.12341", "1e-300", "0.50000001", "5e-324"] {
            let d = try XCTUnwrap(JSONValue.double(fromNumberText: text), text)
            XCTAssertNil(UnitFraction(d), text)
        }
        XCTAssertEqual(UnitFraction(try XCTUnwrap(JSONValue.double(fromNumberText: "2.5e-1")))?.tenThousandths, 2500)
        for text in ["1e-400", "-1e-400", "0.1e-330", "1e400", "-1e400", "x", ""] {
            XCTAssertNil(JSONValue.double(fromNumberText: text), text)
        }
        for text in ["0", "-0", "0e-400", "0.000e5", "0E0"] { XCTAssertEqual(JSONValue.double(fromNumberText: text), 0, text) }
    }

    // MARK: - Refused combinations

    /// R-KIND-1: a background push refuses every field that shows something, naming it.
    func testBackgroundRefusesEveryShownField() {
        var base = background
        base.data = nil
        XCTAssertNoThrow(try base.validate())
        let cases: [(String, (inout NotificationContent) -> Void)] = [
            ("title", { $0.title = "t" }), ("body", { $0.body = "" }), ("badge", { $0.badge = 0 }),
            ("sound", { $0.sound = "s" }), ("thread_id", { $0.threadId = "t" }),
            ("interruption_level", { $0.presentation.interruptionLevel = .passive }),
            ("relevance_score", { $0.presentation.relevanceScore = UnitFraction(0.5) }),
            ("category", { $0.presentation.category = "c" }), ("target_content_id", { $0.presentation.targetContentId = "t" }),
            ("critical_sound", { $0.presentation.criticalSound = .init(name: "a") }),
            ("title_loc_key", { $0.localization.titleLocKey = "k" }), ("title_loc_args", { $0.localization.titleLocArgs = ["a"] }),
            ("body_loc_key", { $0.localization.bodyLocKey = "k" }), ("body_loc_args", { $0.localization.bodyLocArgs = ["a"] }),
            ("channel_id", { $0.channelId = "c" }),
        ]
        for (field, set) in cases {
            var c = base
            set(&c)
            XCTAssertThrowsError(try c.validate(), field) { error in
                XCTAssertEqual((error as? PushError)?.code, .validationError)
                XCTAssertEqual((error as? PushError)?.field, field)
            }
            c.pushType = .alert
            if field != "title_loc_args" && field != "body_loc_args" && field != "critical_sound" {
                XCTAssertNoThrow(try c.validate(), "\(field) is fine on an alert")
            }
        }
    }

    func testCriticalAndLocArgsCombinations() {
        func refused(_ c: NotificationContent, _ field: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try c.validate(), file: file, line: line) { error in
                XCTAssertEqual((error as? PushError)?.field, field, file: file, line: line)
            }
        }
        refused(NotificationContent(title: "x", presentation: IOSPresentation(interruptionLevel: .critical)), "interruption_level")
        refused(NotificationContent(title: "x", presentation: IOSPresentation(criticalSound: .init(name: "a"))), "critical_sound")
        refused(NotificationContent(title: "x", presentation: IOSPresentation(interruptionLevel: .timeSensitive, criticalSound: .init(name: "a"))), "critical_sound")
        refused(NotificationContent(title: "x", sound: "s", presentation: IOSPresentation(interruptionLevel: .critical, criticalSound: .init(name: "a"))), "critical_sound")
        refused(NotificationContent(title: "x", localization: LocalizedText(titleLocArgs: ["a"])), "title_loc_args")
        refused(NotificationContent(title: "x", localization: LocalizedText(titleLocKey: "k", bodyLocArgs: ["a"])), "body_loc_args")
        XCTAssertNoThrow(try NotificationContent(localization: LocalizedText(titleLocKey: "k", titleLocArgs: [], bodyLocKey: "b")).validate())
    }

    // MARK: - The 4096-byte rule for background pushes

    /// R-SEND-7 for background pushes: the largest data that fits passes, one byte more is refused
    /// "cut 1 byte", on every platform with and without a key.
    func testBackgroundBoundaryLargestFitsOneMoreByteRefused() throws {
        try assertBoundary(placeholders: placeholders) { n in
            NotificationContent(data: JSONObject([.init("k", .string(String(repeating: "v", count: n)))]), collapseKey: "ck",
                                pushType: .background)
        }
    }

    /// R-SEND-7 for an alert carrying every kind field (presentation fields and critical sound in
    /// clear, loc texts, channel) under loc-key placeholders: the planned size counts each of them,
    /// so the boundary is exact on every platform here too.
    func testAlertWithEveryKindFieldBoundaryLargestFitsOneMoreByteRefused() throws {
        let presentation = IOSPresentation(interruptionLevel: .critical, relevanceScore: UnitFraction(0.1234), category: "CAT",
                                           targetContentId: "tgt", criticalSound: .init(name: "alarm.caf", volume: UnitFraction(0.5)))
        try assertBoundary(placeholders: locPlaceholders) { n in
            NotificationContent(title: "Hi", data: JSONObject([.init("k", .string(String(repeating: "v", count: n)))]), badge: 7,
                                threadId: "t", collapseKey: "ck", presentation: presentation,
                                localization: LocalizedText(titleLocKey: "TK", titleLocArgs: ["a"], bodyLocKey: "BK"),
                                channelId: "chan")
        }
    }

    /// For `content(n)` (n content bytes in `data`), on every platform with and without a key: the
    /// largest n whose built payload is at most 4096 bytes is planned at exactly that size, and n + 1
    /// is refused PUSH_PAYLOAD_TOO_LARGE "cut 1 byte of content".
    private func assertBoundary(placeholders: AppPlaceholders, _ content: (Int) -> NotificationContent,
                                file: StaticString = #filePath, line: UInt = #line) throws {
        for (platform, key) in [("ios", false), ("ios", true), ("android", false), ("android", true), ("web", false)] {
            func built(_ n: Int) throws -> Int {
                let c = content(n), sealed = SealedPlaintext.bytes(for: c)
                switch (platform, key) {
                case ("ios", false): return APNsPayload.plaintext(content: c).count
                case ("ios", true): return APNsPayload.encrypted(content: c, placeholders: placeholders,
                                                                envelope: fakeEnvelope(plaintextLength: sealed.count)).count
                case ("android", false): return FCMMessage.plaintext(token: "t", content: c).ruleSize
                case ("android", true): return FCMMessage.encrypted(token: "t", content: c,
                                                                    envelope: fakeEnvelope(plaintextLength: sealed.count)).ruleSize
                default: return sealed.count + PayloadSizeRule.webPushOverhead
                }
            }
            let label = "\(platform) key \(key)"
            var n = 2_000
            while try built(n + 1) <= 4096 { n += 1 }
            XCTAssertLessThanOrEqual(try built(n), 4096, file: file, line: line)
            XCTAssertGreaterThan(try built(n), 4096 - 4, "\(label): within base64's step of the limit", file: file, line: line)
            let planner = DeliveryPlanner(content: content(n), placeholders: placeholders, requireEncryption: false, mode: .live)
            guard case .send(let planned) = planner.plan(device(platform, key: key)) else {
                XCTFail("\(label): the largest push that fits was refused", file: file, line: line); continue
            }
            XCTAssertEqual(planned.finalSize, try built(n), label, file: file, line: line)
            let over = DeliveryPlanner(content: content(n + 1), placeholders: placeholders, requireEncryption: false, mode: .live)
            guard case .refuse(let error) = over.plan(device(platform, key: key)) else {
                XCTFail("\(label): one byte more was not refused", file: file, line: line); continue
            }
            XCTAssertEqual(error.code, .pushPayloadTooLarge, file: file, line: line)
            XCTAssertTrue(error.message.hasSuffix("cut 1 byte of content"), "\(label): \(error.message)", file: file, line: line)
        }
    }

    /// R-SEND-5 and R-SEND-11 whatever the push type: under `require_encryption` a keyless iOS or
    /// Android device is refused ENCRYPTION_KEY_MISSING (refunded) for a background push exactly as
    /// for an alert, a keyed one is sealed, and a Web device is always encrypted.
    func testRequireEncryptionAppliesToBackgroundPushesUnchanged() {
        for content in [alert, background] {
            let planner = DeliveryPlanner(content: content, placeholders: placeholders, requireEncryption: true, mode: .live)
            for platform in ["ios", "android"] {
                guard case .refuse(let error) = planner.plan(device(platform, key: false)) else {
                    XCTFail("\(content.pushType) \(platform): a keyless device was not refused"); continue
                }
                XCTAssertEqual(error.code, .encryptionKeyMissing)
                XCTAssertEqual(LedgerRule.action(for: .failed(error.code), chargedAtAcceptance: true), .refund)
                guard case .send(let planned) = planner.plan(device(platform, key: true)), case .sealed = planned.body else {
                    XCTFail("\(content.pushType) \(platform): a keyed device was not sealed"); continue
                }
                XCTAssertTrue(planned.encrypted)
            }
            guard case .send(let web) = planner.plan(device("web", key: false)) else { XCTFail("web refused"); continue }
            XCTAssertTrue(web.encrypted)
            XCTAssertEqual(web.pushType, content.pushType)
        }
    }

    /// FCM's measure counts the loc keys and args (what a plaintext Android notification shows), and
    /// the content floor with it, so the SQL floor (sql/0011) stays a lower bound.
    func testFCMMeasureCountsLocTexts() {
        let c = NotificationContent(title: "ab", localization: LocalizedText(titleLocKey: "kk", titleLocArgs: ["é", "x"],
                                                                              bodyLocKey: "b", bodyLocArgs: ["yy"]))
        XCTAssertEqual(FCMMessage.plaintext(token: "t", content: c).ruleSize, 2 + 2 + 2 + 1 + 1 + 2)
        XCTAssertEqual(DeliveryPlanner(content: c, placeholders: placeholders, requireEncryption: false, mode: .live)
            .contentFloorCheck.contentLength, 10)
    }
}
