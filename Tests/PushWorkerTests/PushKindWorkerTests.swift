import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// R-KIND-1..3 through the whole worker in test mode: the kind fields the API side stored
/// (push_enqueue's columns of sql/0011, or the in-memory store's copy of them) are read back by the
/// claim, planned, sealed and handed to the provider with their push type; the stored test payloads
/// (R-MODE-2) are checked byte for byte or opened with the device's key. The scenarios are shared
/// by both stores: `PushKindWorkerTests` runs them on the in-memory store, `PGQueueConformanceTests`
/// on PostgreSQL. A kind row written past push_enqueue is `BadRowTests`' (PostgreSQL only).
extension WorkerTestCase {
    /// One user's devices on every platform: keyed and plain iOS and Android, and a web device.
    struct KindDevices {
        var iosKey: UUID, iosPlain: UUID, androidKey: UUID, androidPlain: UUID, web: UUID
        var iosPrivate: P256PrivateKey, androidPrivate: P256PrivateKey
        var all: [UUID] { [iosKey, iosPlain, androidKey, androidPlain, web] }
    }

    /// Registers `user`'s five devices (`KindDevices`) in `app`.
    func kindDevices(_ app: UUID, user: String) throws -> KindDevices {
        let ik = try P256PrivateKey.generate(), ak = try P256PrivateKey.generate()
        return KindDevices(iosKey: try register(app, user: user, platform: "ios", key: ik),
                           iosPlain: try register(app, user: user, platform: "ios"),
                           androidKey: try register(app, user: user, platform: "android", key: ak),
                           androidPlain: try register(app, user: user, platform: "android"),
                           web: try registerWeb(app, user: user), iosPrivate: ik, androidPrivate: ak)
    }

    /// R-KIND-1: a background push reaches every platform as data only, with its push type on every
    /// outbound push; keyed devices get the data sealed and nothing else.
    func conformBackgroundPushOnEveryPlatform() throws {
        let app = try createApp()
        let d = try kindDevices(app, user: "u1")
        let n = try enqueue(app, users: ["u1"], title: nil, body: nil) {
            $0.pushType = "background"
            $0.data = #"{"sync":"inbox-7"}"#
            $0.collapseKey = "sync"
        }
        let router = RecordingRouter()
        try drain(try makeWorker(router))
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(router.pushes.count, 5)
        XCTAssertTrue(router.pushes.allSatisfy { $0.pushType == .background }, "R-KIND-1: the push type reaches the provider")
        let rows = try deliveries(n)
        XCTAssertEqual(rows[d.iosPlain]?.payload?.text, #"{"aps":{"content-available":1},"data":{"sync":"inbox-7"}}"#)
        // FCM: data only, R-SEND-10's priority (high by default), the collapse key outside.
        let message = try XCTUnwrap(json(rows[d.androidPlain]?.payload)["message"] as? [String: Any])
        XCTAssertEqual(message.keys.sorted(), ["android", "data", "token"])
        XCTAssertEqual(message["data"] as? [String: String], ["sync": "inbox-7"])
        let android = try XCTUnwrap(message["android"] as? [String: Any])
        XCTAssertEqual(android.keys.sorted(), ["collapse_key", "priority", "ttl"])
        XCTAssertEqual(android["priority"] as? String, "HIGH")
        let iosBody = try XCTUnwrap(rows[d.iosKey]?.payload)
        XCTAssertEqual(Array(json(iosBody).keys).sorted(), ["aps", "hk"])
        XCTAssertEqual(json(iosBody)["aps"] as? [String: Int], ["content-available": 1])
        XCTAssertFalse(iosBody.text.contains("inbox-7"))
        XCTAssertEqual(try open(try XCTUnwrap(envelope(iosBody, platform: "ios")), with: d.iosPrivate).text, #"{"data":{"sync":"inbox-7"}}"#)
        let androidBody = try XCTUnwrap(rows[d.androidKey]?.payload)
        XCTAssertFalse(androidBody.text.contains("inbox-7"))
        XCTAssertEqual(try open(try XCTUnwrap(envelope(androidBody, platform: "android")), with: d.androidPrivate).text,
                       #"{"data":{"sync":"inbox-7"}}"#)
        XCTAssertEqual(rows[d.web]?.payload?.count, #"{"data":{"sync":"inbox-7"}}"#.utf8.count + 103)
        try assertLedgerInvariants(n)
    }

    /// R-KIND-2/3: an alert with presentation fields and loc texts, to an app whose placeholder is
    /// localized: the keyed iOS device gets the loc-key placeholder and the presentation fields in
    /// clear and nothing of the content; the sealed plaintext carries the loc texts after R-ENC-3's six.
    func conformLocalizedAlertWithPresentationFields() throws {
        let app = try world.createApp(name: "loc", placeholderTitleLocKey: "PUSH_NEW_TITLE", placeholderBodyLocKey: "PUSH_NEW_BODY")
        let d = try kindDevices(app, user: "u1")
        let n = try enqueue(app, users: ["u1"], title: "Secret title", body: nil) {
            $0.interruptionLevel = "time-sensitive"
            $0.relevanceScore = 0.25
            $0.category = "MESSAGE"
            $0.targetContentID = "room-1"
            $0.titleLocKey = "MSG_FROM"
            $0.titleLocArgs = ["Secret Alice"]
            $0.bodyLocKey = "MSG_BODY"
            $0.bodyLocArgs = ["Secret text"]
            $0.channelID = "messages"
            $0.badge = 2
        }
        try drain(try makeWorker())
        let rows = try deliveries(n)
        let iosBody = try XCTUnwrap(rows[d.iosKey]?.payload).text
        XCTAssertTrue(iosBody.hasPrefix(#"{"aps":{"alert":{"title-loc-key":"PUSH_NEW_TITLE","loc-key":"PUSH_NEW_BODY"},"mutable-content":1,"badge":2,"interruption-level":"time-sensitive","relevance-score":0.25,"category":"MESSAGE","target-content-id":"room-1"},"hk":{"#), iosBody)
        for secret in ["Secret", "MSG_FROM", "MSG_BODY", "messages"] { XCTAssertFalse(iosBody.contains(secret), secret) }
        let sealed = try open(try XCTUnwrap(envelope(Array(iosBody.utf8), platform: "ios")), with: d.iosPrivate).text
        XCTAssertEqual(sealed, #"{"title":"Secret title","badge":2,"title_loc_key":"MSG_FROM","title_loc_args":["Secret Alice"],"body_loc_key":"MSG_BODY","body_loc_args":["Secret text"]}"#)
        XCTAssertEqual(rows[d.iosPlain]?.payload?.text,
                       #"{"aps":{"alert":{"title":"Secret title","title-loc-key":"MSG_FROM","title-loc-args":["Secret Alice"],"loc-key":"MSG_BODY","loc-args":["Secret text"]},"badge":2,"interruption-level":"time-sensitive","relevance-score":0.25,"category":"MESSAGE","target-content-id":"room-1"}}"#)
        let android = try XCTUnwrap(rows[d.androidPlain]?.payload).text
        XCTAssertTrue(android.contains(#""notification":{"notification_count":2,"channel_id":"messages","title_loc_key":"MSG_FROM","title_loc_args":["Secret Alice"],"body_loc_key":"MSG_BODY","body_loc_args":["Secret text"]}"#), android)
        XCTAssertFalse(android.contains("MESSAGE"), "R-KIND-2: iOS presentation fields are not Android's")
        let androidKeyed = try XCTUnwrap(rows[d.androidKey]?.payload).text
        for secret in ["Secret", "MSG_", "messages", "MESSAGE"] { XCTAssertFalse(androidKeyed.contains(secret), secret) }
        try assertLedgerInvariants(n)
    }

    /// R-KIND-1 with R-SEND-5 and R-SEND-9 unchanged: under `require_encryption` a background push
    /// refuses keyless iOS and Android devices (ENCRYPTION_KEY_MISSING, never charged, nothing sent
    /// in plaintext) and seals for the others; without it, a background push whose data fits in clear
    /// but not sealed is sent to the plaintext devices and refused PUSH_PAYLOAD_TOO_LARGE for the keyed
    /// ones, each refused delivery charged once and refunded once.
    func conformBackgroundPushKeepsTheEncryptionPolicyAndTheRefunds() throws {
        let strict = try createApp(requireEncryption: true)
        let s = try kindDevices(strict, user: "u1")
        let n = try enqueue(strict, users: ["u1"], title: nil, body: nil) {
            $0.pushType = "background"
            $0.data = #"{"sync":"inbox-9"}"#
        }
        // Data that fits every plaintext measure (APNs body about 3,060 bytes) but no envelope (4/3 of it).
        let lax = try createApp()
        let o = try kindDevices(lax, user: "u2")
        let big = String(repeating: "v", count: 3_000)
        let m = try enqueue(lax, users: ["u2"], title: nil, body: nil) {
            $0.pushType = "background"
            $0.data = #"{"k":"\#(big)"}"#
        }
        let router = RecordingRouter()
        try drain(try makeWorker(router))

        let rows = try deliveries(n)
        XCTAssertEqual(try notification(n).encrypted, true, "R-SEND-2")
        for refused in [s.iosPlain, s.androidPlain] {
            XCTAssertEqual(rows[refused]?.status, "failed")
            XCTAssertEqual(rows[refused]?.errorCode, "ENCRYPTION_KEY_MISSING")
            XCTAssertNil(rows[refused]?.payload, "R-SEND-5: never sent in plaintext")
            XCTAssertNil(try ledger(n)[refused], "R-SEND-9: not charged at acceptance")
        }
        for sent in [s.iosKey, s.androidKey, s.web] {
            XCTAssertEqual(rows[sent]?.status, "sent")
            XCTAssertEqual(rows[sent]?.encrypted, true)
            XCTAssertFalse(try XCTUnwrap(rows[sent]?.payload).text.contains("inbox-9"))
            XCTAssertEqual(try net(n, sent), 1)
        }
        XCTAssertEqual(json(rows[s.iosKey]?.payload)["aps"] as? [String: Int], ["content-available": 1])
        XCTAssertEqual(try notification(n).deviceCount, 3)
        try assertLedgerInvariants(n)

        let bigRows = try deliveries(m)
        for refused in [o.iosKey, o.androidKey] {
            XCTAssertEqual(bigRows[refused]?.status, "failed")
            XCTAssertEqual(bigRows[refused]?.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
            XCTAssertNil(bigRows[refused]?.payload)
            XCTAssertEqual(try ledger(m)[refused]?.charges, 1)
            XCTAssertEqual(try ledger(m)[refused]?.refunds, 1, "refunded")
        }
        for sent in [o.iosPlain, o.androidPlain, o.web] {
            XCTAssertEqual(bigRows[sent]?.status, "sent")
            XCTAssertLessThanOrEqual(try XCTUnwrap(bigRows[sent]?.payload).count, PayloadSizeRule.limit)
            XCTAssertEqual(try net(m, sent), 1)
        }
        XCTAssertEqual(try XCTUnwrap(bigRows[o.iosPlain]?.payload).text, #"{"aps":{"content-available":1},"data":{"k":"\#(big)"}}"#)
        XCTAssertEqual(try notification(m).deviceCount, 3)
        try assertLedgerInvariants(m)
        XCTAssertEqual(router.pushes.count, 6, "three sent per notification, nothing for the refused ones")
        XCTAssertTrue(router.pushes.allSatisfy { $0.pushType == .background })
    }
}

/// The kind scenarios above on the in-memory store (`MemoryWorld`); on PostgreSQL in `PGQueueConformanceTests`.
final class PushKindWorkerTests: WorkerTestCase {
    func testBackgroundPushOnEveryPlatform() throws { try conformBackgroundPushOnEveryPlatform() }
    func testLocalizedAlertWithPresentationFields() throws { try conformLocalizedAlertWithPresentationFields() }
    func testBackgroundPushKeepsTheEncryptionPolicyAndTheRefunds() throws { try conformBackgroundPushKeepsTheEncryptionPolicyAndTheRefunds() }
}

private extension Array where Element == UInt8 {
    var text: String { String(decoding: self, as: UTF8.self) }
}
