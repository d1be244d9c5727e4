import Foundation
import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// R-IDS-1: an `ids_only` notification's iOS and Android payloads, byte for byte
/// (`Tests/Vectors/pushfleet_ids_only_v1.json`), the same for a keyed and a keyless device and
/// whatever `require_encryption` says; the allow-list of keys and value types (as R-ENC-7 has for sealed payloads) over random
/// notifications.
final class IDsOnlyPayloadTests: XCTestCase {
    private struct Vector: Decodable {
        struct Case: Decodable {
            let name: String
            let placeholder: [String: String]
            let apns_payload: String
            let fcm_request_body: String
            let fcm_rule_size: Int
        }
        let notification_id: UUID
        let marker: String
        let fcm_token: String
        let fcm_ttl_seconds: Int
        let cases: [Case]
    }

    /// The vector's `notification` objects, read with Foundation's parser (not PushCore's).
    private func vectorContents() throws -> [NotificationContent] {
        let root = try XCTUnwrap(try TestVectors.jsonObject(.pushfleetIDsOnlyV1) as? [String: Any])
        let cases = try XCTUnwrap(root["cases"] as? [[String: Any]])
        return try cases.map { c in
            let n = try XCTUnwrap(c["notification"] as? [String: Any])
            var content = NotificationContent(title: n["title"] as? String, body: n["body"] as? String,
                                              badge: n["badge"] as? Int, sound: n["sound"] as? String,
                                              threadId: n["thread_id"] as? String, collapseKey: n["collapse_key"] as? String,
                                              priority: Priority(rawValue: n["priority"] as? String ?? "high") ?? .high,
                                              pushType: PushType(rawValue: n["push_type"] as? String ?? "alert") ?? .alert)
            if let data = n["data"] as? [String: String] {
                content.data = JSONObject(data.sorted { $0.key < $1.key }.map { .init($0.key, .string($0.value)) })
            }
            content.presentation.category = n["category"] as? String
            content.presentation.interruptionLevel = (n["interruption_level"] as? String).flatMap(IOSPresentation.InterruptionLevel.init)
            if let sound = n["critical_sound"] as? [String: Any] {
                content.presentation.criticalSound = .init(name: sound["name"] as? String ?? "",
                                                           volume: (sound["volume"] as? Double).flatMap(UnitFraction.init))
            }
            content.localization = LocalizedText(titleLocKey: n["title_loc_key"] as? String, titleLocArgs: n["title_loc_args"] as? [String],
                                                 bodyLocKey: n["body_loc_key"] as? String, bodyLocArgs: n["body_loc_args"] as? [String])
            try content.validate()
            return content
        }
    }

    private func makePlanner(_ content: NotificationContent, _ placeholders: AppPlaceholders = AppPlaceholders(), id: UUID,
                         requireEncryption: Bool = true, mode: ContentMode = .idsOnly) -> DeliveryPlanner {
        DeliveryPlanner(content: content, placeholders: placeholders, requireEncryption: requireEncryption, mode: .live,
                        contentMode: mode, notificationID: id, platforms: ProviderTable.standard.planning)
    }

    private func device(_ platform: String, token: String = "tok", keyed: Bool) -> DeviceSnapshot {
        DeviceSnapshot(platform: Platform(rawValue: platform), token: token, apnsEnvironment: platform == "ios" ? .sandbox : nil,
                       publicKey: keyed ? sampleKey : nil, kid: keyed ? sampleKid : nil)
    }

    /// The body a planned delivery hands the provider; fails for anything but a plaintext payload.
    private func body(_ decision: PlanDecision, ttl: Int = 3600, file: StaticString = #filePath, line: UInt = #line) -> [UInt8]? {
        guard case .send(let planned) = decision, case .plaintext(let payload) = planned.body else {
            XCTFail("not planned as a plain payload: \(decision)", file: file, line: line)
            return nil
        }
        XCTAssertFalse(planned.encrypted, "an ids_only payload seals nothing", file: file, line: line)
        XCTAssertLessThanOrEqual(planned.finalSize, PayloadSizeRule.limit, file: file, line: line)
        return payload.requestBody(ttlSeconds: ttl)
    }

    // MARK: - The vector

    func testVectorBytesForKeyedAndKeylessDevicesWhateverTheEncryptionPolicy() throws {
        let vector = try TestVectors.decode(Vector.self, from: .pushfleetIDsOnlyV1)
        XCTAssertEqual(IDsOnlyMarker.json(notificationID: vector.notification_id).text, vector.marker)
        let contents = try vectorContents()
        XCTAssertEqual(contents.count, vector.cases.count)
        for (c, content) in zip(vector.cases, contents) {
            let p = c.placeholder
            let placeholders = AppPlaceholders(title: p["title"] ?? "", body: p["body"] ?? "",
                                               titleLocKey: p["title_loc_key"], bodyLocKey: p["body_loc_key"])
            for require in [true, false] {
                let planner = makePlanner(content, placeholders, id: vector.notification_id, requireEncryption: require)
                for keyed in [false, true] {
                    XCTAssertEqual(body(planner.plan(device("ios", keyed: keyed)))?.text, c.apns_payload, "\(c.name) keyed=\(keyed)")
                    let fcm = planner.plan(device("android", token: vector.fcm_token, keyed: keyed))
                    XCTAssertEqual(body(fcm, ttl: vector.fcm_ttl_seconds)?.text, c.fcm_request_body, "\(c.name) keyed=\(keyed)")
                    if case .send(let planned) = fcm {
                        XCTAssertEqual(planned.finalSize, c.fcm_rule_size, "R-SEND-7's FCM measure: data keys and values")
                    }
                }
            }
            // The same notification in sealed mode is another payload (the vector is not what sealed sends).
            let sealed = makePlanner(content, placeholders, id: vector.notification_id, requireEncryption: false, mode: .sealed)
            if case .send(let planned) = sealed.plan(device("ios", keyed: false)), case .plaintext(let payload) = planned.body {
                XCTAssertNotEqual(payload.requestBody(ttlSeconds: 1).text, c.apns_payload)
            }
        }
    }

    // MARK: - The allow-list over random notifications

    private enum Kind { case string, number, object }

    private let apnsAllowed: [String: Set<Kind>] = [
        "aps": [.object], "aps.alert": [.object], "aps.alert.title": [.string], "aps.alert.body": [.string],
        "aps.alert.title-loc-key": [.string], "aps.alert.loc-key": [.string], "aps.mutable-content": [.number],
        "aps.badge": [.number], "aps.sound": [.string, .object], "aps.sound.critical": [.number],
        "aps.sound.name": [.string], "aps.sound.volume": [.number], "aps.content-available": [.number],
        "pf": [.object], "pf.v": [.number], "pf.id": [.string],
    ]
    private let fcmAllowed: [String: Set<Kind>] = [
        "message": [.object], "message.token": [.string], "message.data": [.object], "message.data.pf": [.string],
        "message.android": [.object], "message.android.priority": [.string], "message.android.ttl": [.string],
        "message.android.collapse_key": [.string],
    ]
    private let markerAllowed: [String: Set<Kind>] = ["v": [.number], "id": [.string]]

    @discardableResult
    private func check(_ value: JSONValue, path: String, allowed: [String: Set<Kind>],
                       file: StaticString = #filePath, line: UInt = #line) -> Set<String> {
        guard case .object(let object) = value else { XCTFail("not an object at \(path)", file: file, line: line); return [] }
        var seen = Set<String>()
        for member in object.members {
            let p = path.isEmpty ? member.key : path + "." + member.key
            seen.insert(p)
            guard let kinds = allowed[p] else { XCTFail("key not allowed: \(p)", file: file, line: line); continue }
            switch member.value {
            case .string where kinds.contains(.string), .number where kinds.contains(.number): break
            case .object where kinds.contains(.object): seen.formUnion(check(member.value, path: p, allowed: allowed, file: file, line: line))
            default: XCTFail("wrong value type at \(p)", file: file, line: line)
            }
        }
        return seen
    }

    /// A random notification whose every content text is a fresh secret (recorded in `secrets`).
    private func randomNotification(_ rng: inout SplitMix64, secrets: inout [String]) -> NotificationContent {
        func secret(_ tag: String) -> String {
            // Hex, so its bytes are the same whether or not a writer escapes them; a fixed prefix
            // that appears in no payload field name.
            let s = "Q\(tag)" + String(rng.next(), radix: 16) + (rng.next() % 3 == 0 ? "é\u{1F600}\"\n" : "")
            secrets.append(s)
            return s
        }
        let background = rng.next() % 4 == 0
        var c = NotificationContent(collapseKey: rng.next() % 2 == 0 ? "ck-\(rng.next() % 100)" : nil,
                                    priority: rng.next() % 2 == 0 ? .high : .normal, pushType: background ? .background : .alert)
        if rng.next() % 4 != 0 {
            var members: [JSONObject.Member] = []
            for _ in 0..<(1 + rng.next() % 4) {
                members.append(.init(secret("k"), rng.next() % 2 == 0 ? .string(secret("v"))
                                     : .object(JSONObject([.init(secret("k"), .string(secret("v")))]))))
            }
            c.data = JSONObject(members)
        }
        if background { return c }
        if rng.next() % 4 != 0 { c.title = secret("t") }
        if rng.next() % 4 != 0 { c.body = secret("b") }
        if rng.next() % 2 == 0 { c.threadId = secret("th") }
        if rng.next() % 2 == 0 { c.badge = Int(rng.next() % 1000) }
        if rng.next() % 3 == 0 {
            c.presentation.interruptionLevel = .critical
            c.presentation.criticalSound = .init(name: "alarm.caf", volume: UnitFraction(tenThousandths: Int(rng.next() % 10_001)))
        } else if rng.next() % 2 == 0 {
            c.sound = "default"
            c.presentation.interruptionLevel = .timeSensitive
        }
        if rng.next() % 2 == 0 { c.presentation.category = secret("cat") }
        if rng.next() % 2 == 0 { c.presentation.targetContentId = secret("tc") }
        if rng.next() % 2 == 0 { c.presentation.relevanceScore = UnitFraction(tenThousandths: 1234) }
        if rng.next() % 2 == 0 { c.localization = LocalizedText(titleLocKey: secret("tlk"), titleLocArgs: [secret("tla")]) }
        if rng.next() % 2 == 0 { c.localization.bodyLocKey = secret("blk"); c.localization.bodyLocArgs = [secret("bla"), secret("bla")] }
        if rng.next() % 2 == 0 { c.channelId = secret("ch") }
        return c
    }

    /// The notification with every content field dropped: what an ids_only payload may depend on.
    private func contentFree(_ c: NotificationContent) -> NotificationContent {
        var s = NotificationContent(badge: c.badge, sound: c.sound, collapseKey: c.collapseKey, priority: c.priority, pushType: c.pushType)
        s.presentation.criticalSound = c.presentation.criticalSound
        return s
    }

    func testRandomIDsOnlyPayloadsHaveOnlyAllowedKeysAndNoByteOfContent() throws {
        var rng = SplitMix64(seed: 0x1d5_0a1c)
        var seenAPNs = Set<String>(), seenFCM = Set<String>()
        for round in 0..<400 {
            var secrets: [String] = []
            let content = randomNotification(&rng, secrets: &secrets)
            XCTAssertNoThrow(try content.validate(), "round \(round)")
            let placeholders = rng.next() % 2 == 0 ? AppPlaceholders(title: "New message", body: "Open the app")
                : AppPlaceholders(titleLocKey: "PH_TITLE", bodyLocKey: "PH_BODY")
            let id = UUID()
            let planner = makePlanner(content, placeholders, id: id, requireEncryption: rng.next() % 2 == 0)
            let bare = makePlanner(contentFree(content), placeholders, id: id)
            for keyed in [false, true] {
                guard let apns = body(planner.plan(device("ios", keyed: keyed))),
                      let fcm = body(planner.plan(device("android", keyed: keyed))) else { return }
                // Not one byte depends on the content: the payload equals the content-free notification's.
                XCTAssertEqual(apns, body(bare.plan(device("ios", keyed: false))), "round \(round)")
                XCTAssertEqual(fcm, body(bare.plan(device("android", keyed: false))), "round \(round)")
                for text in [apns.text, fcm.text] {
                    for s in secrets { XCTAssertFalse(text.contains(s), "round \(round): \(s) visible to the provider") }
                }
                let a = try JSONParser.parse(utf8: apns)
                seenAPNs.formUnion(check(a, path: "", allowed: apnsAllowed))
                let f = try JSONParser.parse(utf8: fcm)
                seenFCM.formUnion(check(f, path: "", allowed: fcmAllowed))
                // The marker: version 1 and this notification's id, on both platforms.
                guard case .object(let top) = a, case .object(let pf)? = top["pf"],
                      case .object(let ft) = f, case .object(let message)? = ft["message"],
                      case .object(let data)? = message["data"], case .string(let fpf)? = data["pf"] else {
                    return XCTFail("no marker")
                }
                XCTAssertEqual(pf["v"], .number("1"))
                XCTAssertEqual(pf["id"], .string(PrefixedID.format(.notification, id)))
                XCTAssertEqual(try JSONParser.parse(fpf), .object(pf))
                check(try JSONParser.parse(fpf), path: "", allowed: markerAllowed)
                // Background: content-available, no placeholder; alert: mutable-content and the placeholder.
                guard case .object(let aps)? = top["aps"] else { return XCTFail("no aps") }
                if content.pushType == .background {
                    XCTAssertEqual(aps.members.map(\.key), ["content-available"])
                } else {
                    XCTAssertEqual(aps["mutable-content"], .number("1"))
                    guard case .object(let alert)? = aps["alert"] else { return XCTFail("no placeholder") }
                    let shown = Set(alert.members.compactMap { m -> String? in if case .string(let s) = m.value { return s }; return nil })
                    XCTAssertTrue(shown.isSubset(of: ["New message", "Open the app", "PH_TITLE", "PH_BODY"]), "only the placeholder")
                }
            }
        }
        XCTAssertEqual(seenAPNs, Set(apnsAllowed.keys), "every allowed key is met, so the list is exactly what ids_only sends")
        XCTAssertEqual(seenFCM, Set(fcmAllowed.keys))
    }

    // MARK: - The decision, exhaustively

    /// Every platform × key state × require_encryption × content mode × push type: the outcome the
    /// R-SEND-3..5, R-SEND-11 and R-IDS-1 table gives, and nothing else.
    func testDecisionTableOverEveryCombination() {
        enum KeyState: CaseIterable { case none, valid, malformed }
        let content = NotificationContent(title: "t", body: "b", data: JSONObject([.init("k", .string("v"))]))
        let background = NotificationContent(data: JSONObject([.init("k", .string("v"))]), pushType: .background)
        var cases = 0
        for platform in ["ios", "android", "web"] {
            for key in KeyState.allCases {
                for require in [false, true] {
                    for mode in ContentMode.allCases {
                        for c in [content, background] {
                            cases += 1
                            let planner = makePlanner(c, id: UUID(), requireEncryption: require, mode: mode)
                            let snapshot = DeviceSnapshot(platform: Platform(rawValue: platform), token: "tok",
                                                          apnsEnvironment: platform == "ios" ? .sandbox : nil,
                                                          publicKey: key == .none ? nil : (key == .valid ? sampleKey : [0x04, 1, 2]),
                                                          kid: key == .none ? nil : sampleKid)
                            let decision = planner.plan(snapshot)
                            let label = "\(platform) key=\(key) require=\(require) \(mode) \(c.pushType)"
                            switch (platform, mode, key) {
                            case ("web", _, _):
                                guard case .send(let p) = decision, case .webPush(let plaintext) = p.body else { XCTFail(label); continue }
                                XCTAssertEqual(plaintext, SealedPlaintext.bytes(for: c), "R-IDS-1: Web keeps the full content, \(label)")
                            case (_, .idsOnly, _):
                                guard case .send(let p) = decision, case .plaintext(let payload) = p.body else { XCTFail(label); continue }
                                XCTAssertFalse(p.encrypted, label)
                                let text = payload.requestBody(ttlSeconds: 1).text
                                XCTAssertTrue(text.contains(#""pf""#), label)
                                XCTAssertFalse(text.contains(#""k""#), label)
                            case (_, .sealed, .none):
                                if require {
                                    XCTAssertEqual(decision, .refuse(PushError(.encryptionKeyMissing, "the app requires encryption and the device has no key")), label)
                                } else {
                                    guard case .send(let p) = decision, case .plaintext = p.body else { XCTFail(label); continue }
                                }
                            case (_, .sealed, .valid):
                                guard case .send(let p) = decision, case .sealed = p.body else { XCTFail(label); continue }
                                XCTAssertTrue(p.encrypted, label)
                            case (_, .sealed, .malformed):
                                guard case .refuse(let e) = decision else { XCTFail(label); continue }
                                XCTAssertEqual(e.code, .invalidDeviceKey, label)
                            }
                            // policyDelivers (push_enqueue's charge predicate at acceptance) agrees with the planner.
                            if key != .malformed {
                                let delivers = DeliveryPlanner.policyDelivers(hasKey: key == .valid, encryptsItself: platform == "web",
                                                                              requireEncryption: require, contentMode: mode)
                                if case .send = decision { XCTAssertTrue(delivers, label) } else { XCTAssertFalse(delivers, label) }
                            }
                        }
                    }
                }
            }
        }
        XCTAssertEqual(cases, 3 * 3 * 2 * 2 * 2)
    }

    // MARK: - Sizes

    /// R-IDS-1 with R-SEND-7: ids_only payloads always fit, so content is bounded only by R-LIM-1
    /// (the floor fits), but a Web device still carries it; the same notification sealed does not fit.
    func testHugeContentFitsIDsOnlyAndIsRefusedSealedWithTheBytesToCut() {
        let big = NotificationContent(title: "t", body: String(repeating: "x", count: 20_000))
        let idsOnly = makePlanner(big, id: UUID())
        XCTAssertTrue(idsOnly.contentFloorCheck.fits)
        for platform in ["ios", "android"] {
            for keyed in [false, true] {
                XCTAssertNotNil(body(idsOnly.plan(device(platform, keyed: keyed))))
            }
        }
        guard case .refuse(let web) = idsOnly.plan(device("web", keyed: false)) else { return XCTFail("web carries the content") }
        XCTAssertEqual(web.code, .pushPayloadTooLarge)
        // The app made sealed again by the send time: the keyed device no longer fits and is refused, refunded.
        let sealed = makePlanner(big, id: UUID(), mode: .sealed)
        XCTAssertFalse(sealed.contentFloorCheck.fits)
        guard case .refuse(let e) = sealed.plan(device("ios", keyed: true)) else { return XCTFail("sealed fits?") }
        XCTAssertEqual(e.code, .pushPayloadTooLarge)
        XCTAssertEqual(LedgerRule.action(for: .failed(.pushPayloadTooLarge), chargedAtAcceptance: true), .refund)
        XCTAssertEqual(sealed.plan(device("ios", keyed: false)),
                       .refuse(PushError(.encryptionKeyMissing, "the app requires encryption and the device has no key")))
    }

    /// A provider whose writer has no ids_only form is refused in ids_only, never sent the content.
    func testAWriterWithoutAnIDsOnlyFormIsRefusedNotSentTheContent() {
        struct Plain: PayloadWriter {
            var encryptsItself: Bool { false }
            func prepare(_ n: PreparedNotification) -> any PreparedPayloads { P(bytes: APNsPayload.plaintext(content: n.content)) }
            struct P: PreparedPayloads {
                let bytes: [UInt8]
                func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body) {
                    (PayloadSizeRule.check(.plaintext, contentLength: bytes.count), .plaintext(.body(bytes)))
                }
            }
        }
        let pigeon = Platform(rawValue: "pigeon")
        let rules = [pigeon: PlatformRules(writer: Plain(), addressing: .token(apnsEnvironment: false))]
        let content = NotificationContent(title: "secret")
        let idsOnly = DeliveryPlanner(content: content, placeholders: AppPlaceholders(), requireEncryption: false, mode: .test,
                                      contentMode: .idsOnly, notificationID: UUID(), platforms: rules)
        guard case .refuse(let e) = idsOnly.plan(DeviceSnapshot(platform: pigeon, token: "tok")) else { return XCTFail("sent") }
        XCTAssertEqual(e.code, .unknownPlatform)
        let sealed = DeliveryPlanner(content: content, placeholders: AppPlaceholders(), requireEncryption: false, mode: .test,
                                     platforms: rules)
        guard case .send = sealed.plan(DeviceSnapshot(platform: pigeon, token: "tok")) else { return XCTFail("sealed refused") }
    }
}

/// A small deterministic generator (SplitMix64), so a failing round can be replayed.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
