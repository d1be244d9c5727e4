import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// The encryption policy at the worker level (R-SEND-3..6, R-SEND-11), asserted on the rows.
final class PolicyMatrixTests: WorkerTestCase {
    private struct Case {
        var name: String
        var platform: String
        var keyed: Bool
        var device: UUID
    }

    /// Registers ios/android × key/no key plus one web device for `user` in `app`.
    private func matrixDevices(_ app: UUID, user: String) throws -> [Case] {
        var cases: [Case] = []
        for platform in ["ios", "android"] {
            for keyed in [true, false] {
                let id = try register(app, user: user, platform: platform, key: keyed ? try P256PrivateKey.generate() : nil)
                cases.append(Case(name: "\(platform)/\(keyed ? "key" : "no key")", platform: platform, keyed: keyed, device: id))
            }
        }
        cases.append(Case(name: "web", platform: "web", keyed: false, device: try registerWeb(app, user: user)))
        return cases
    }

    /// R-SEND-3 (key → encrypted), R-SEND-4 (no key, policy off → plaintext), R-SEND-5 (no key,
    /// policy on → ENCRYPTION_KEY_MISSING, never charged), R-SEND-11 (web always encrypted):
    /// status, error code, encrypted flag, payload shape (`hk` iff encrypted) and ledger.
    func testPolicyMatrixKeyTimesRequireEncryptionTimesPlatform() throws {
        for requireEncryption in [false, true] {
            let app = try createApp(requireEncryption: requireEncryption)
            let cases = try matrixDevices(app, user: "u1")
            let n = try enqueue(app, users: ["u1"], title: "Secret title", body: "Secret body") {
                $0.data = #"{"order":"A-17"}"#
            }
            try drain(try makeWorker())

            let rows = try deliveries(n)
            let state = try notification(n)
            XCTAssertEqual(state.status, "sent")
            XCTAssertEqual(state.encrypted, requireEncryption, "R-SEND-2: encrypted = require_encryption at send time")
            for c in cases {
                let label = "\(c.name), require_encryption \(requireEncryption)"
                guard let row = rows[c.device] else { XCTFail("no delivery for \(label)"); continue }
                let refused = requireEncryption && !c.keyed && c.platform != "web"
                if refused {
                    XCTAssertEqual(row.status, "failed", label)
                    XCTAssertEqual(row.errorCode, "ENCRYPTION_KEY_MISSING", label)
                    XCTAssertFalse(row.encrypted, label)
                    XCTAssertNil(row.payload, "R-SEND-5: never sent in plaintext (\(label))")
                    XCTAssertEqual(try net(n, c.device), 0, label)
                    XCTAssertNil(try ledger(n)[c.device], "R-SEND-9: not charged at acceptance (\(label))")
                    continue
                }
                let encrypted = c.keyed || c.platform == "web"
                XCTAssertEqual(row.status, "sent", label)
                XCTAssertNil(row.errorCode, label)
                XCTAssertEqual(row.encrypted, encrypted, label)
                XCTAssertEqual(try net(n, c.device), 1, label)
                guard let payload = row.payload else { XCTFail("no stored test payload for \(label)"); continue }
                let text = String(decoding: payload, as: UTF8.self)
                if encrypted {
                    XCTAssertFalse(text.contains("Secret"), "R-ENC-7: content readable in \(label)")
                    XCTAssertFalse(text.contains("A-17"), "R-ENC-7: data readable in \(label)")
                }
                switch c.platform {
                case "web":
                    let plain = SealedPlaintext.bytes(for: NotificationContent(
                        title: "Secret title", body: "Secret body", data: try JSONParser.parseDataObject(#"{"order":"A-17"}"#)))
                    XCTAssertEqual(payload.count, plain.count + 103, "R-SEND-7: web body = plaintext + 103")
                case "ios":
                    let o = json(payload)
                    XCTAssertEqual(o["hk"] != nil, encrypted, "hk iff encrypted (\(label))")
                    XCTAssertEqual(o["data"] != nil, !encrypted, "R-PLAIN-1 data only in plaintext (\(label))")
                    let alert = (o["aps"] as? [String: Any])?["alert"] as? [String: Any]
                    XCTAssertEqual(alert?["title"] as? String, encrypted ? "New notification" : "Secret title", label)
                default:
                    let message = json(payload)["message"] as? [String: Any] ?? [:]
                    let data = message["data"] as? [String: Any] ?? [:]
                    XCTAssertEqual(data["hk"] != nil, encrypted, "hk iff encrypted (\(label))")
                    XCTAssertEqual(message["notification"] != nil, !encrypted, "R-ENC-5 data-only when encrypted (\(label))")
                }
            }
            let sentCount = cases.filter { !(requireEncryption && !$0.keyed && $0.platform != "web") }.count
            XCTAssertEqual(state.deviceCount, sentCount)
            try assertLedgerInvariants(n)
        }
    }

    /// R-SEND-6: every device refused for a missing key, no SMS fallback → failed ENCRYPTION_KEY_MISSING.
    func testEveryDeviceMissingKeyFailsEncryptionKeyMissing() throws {
        let app = try createApp(requireEncryption: true)
        let a = try register(app, user: "u1", platform: "ios")
        let b = try register(app, user: "u1", platform: "android")
        let n = try enqueue(app, users: ["u1"])
        try drain(try makeWorker())
        let state = try notification(n)
        XCTAssertEqual(state.status, "failed")
        XCTAssertEqual(state.errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertEqual(state.deviceCount, 0)
        let rows = try deliveries(n)
        XCTAssertEqual(rows[a]?.errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertEqual(rows[b]?.errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertTrue(try world.smsOutbox().isEmpty)
        try assertLedgerInvariants(n)
    }

    /// R-SEND-6: refusals of mixed kinds (a missing key and a payload too large) → ALL_DEVICES_REFUSED.
    func testMixedRefusalsFailAllDevicesRefused() throws {
        let app = try createApp(requireEncryption: true)
        let keyless = try register(app, user: "u1", platform: "ios")
        let keyed = try register(app, user: "u1", platform: "android", key: try P256PrivateKey.generate())
        let n = try enqueue(app, users: ["u1"], title: String(repeating: "x", count: 3900), body: nil)
        try drain(try makeWorker())
        let state = try notification(n)
        XCTAssertEqual(state.status, "failed")
        XCTAssertEqual(state.errorCode, "ALL_DEVICES_REFUSED")
        let rows = try deliveries(n)
        XCTAssertEqual(rows[keyless]?.errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertEqual(rows[keyed]?.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertEqual(try net(n, keyed), 0, "R-SEND-9: PUSH_PAYLOAD_TOO_LARGE is refunded")
        try assertLedgerInvariants(n)
    }

    /// R-SEND-6: an empty audience → failed NO_DEVICES, no delivery rows.
    func testEmptyAudienceFailsNoDevices() throws {
        let app = try createApp()
        try register(app, user: "someone-else")
        let n = try enqueue(app, users: ["nobody"])
        try drain(try makeWorker())
        let state = try notification(n)
        XCTAssertEqual(state.status, "failed")
        XCTAssertEqual(state.errorCode, "NO_DEVICES")
        XCTAssertTrue(try deliveries(n).isEmpty)
        XCTAssertTrue(try world.jobs().allSatisfy { $0.state == .completed })
    }

    /// R-SEND-6: with an SMS fallback, a notification no device could get ends sms_fallback with
    /// exactly one outbox row (for each of the three refusal kinds).
    func testNothingSentWithFallbackQueuesExactlyOneSMS() throws {
        let app = try createApp(requireEncryption: true)
        try register(app, user: "keyless", platform: "ios")
        try register(app, user: "mixed", platform: "ios")
        try register(app, user: "mixed", platform: "android", token: "test_invalid_token",
                     key: try P256PrivateKey.generate())
        var ids: [UUID] = []
        for (i, user) in ["keyless", "mixed", "nobody"].enumerated() {
            ids.append(try enqueue(app, users: [user]) {
                $0.smsPhone = "+3581234567\(i)"
                $0.smsText = "You have a message \(i)"
            })
        }
        try drain(try makeWorker())
        for (i, n) in ids.enumerated() {
            XCTAssertEqual(try notification(n).status, "sms_fallback", "notification \(i)")
            let sms = try XCTUnwrap(try world.smsOutbox()[n], "exactly one SMS for notification \(i)")
            XCTAssertEqual(sms.phone, "+3581234567\(i)")
            XCTAssertEqual(sms.text, "You have a message \(i)")
        }
        XCTAssertEqual(try notification(ids[0]).errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertEqual(try notification(ids[1]).errorCode, "ALL_DEVICES_REFUSED")
        XCTAssertEqual(try notification(ids[2]).errorCode, "NO_DEVICES")
        XCTAssertEqual(try world.smsOutbox().count, 3)
    }
}
