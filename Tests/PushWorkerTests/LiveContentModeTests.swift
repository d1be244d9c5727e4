import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore
@testable import PushWorker

/// R-IDS-1 end to end on both stores (on PostgreSQL: push_enqueue, push_start_notifications, the
/// claim of split batches, push_record; `LiveContentModeTests`, in PGQueueConformanceTests.swift
/// with the other PostgreSQL runs of shared scenarios) with the worker's `LiveRouter` against the
/// fake APNs and FCM: what the providers receive from an `ids_only` app, the acceptance charges of keyless devices, and the
/// app made `sealed` again before the send time.
class ContentModeScenarios: LiveTestCase {

    private let secrets = ["TITLE-S3CRET", "BODY-S3CRET", "DATAKEY-S3CRET", "DATAVALUE-S3CRET", "THREAD-S3CRET", "CATEGORY-S3CRET"]

    private func keyedDevice(_ platform: Platform, n: Int) throws -> UUID {
        let key = try P256PrivateKey.generate()
        let reg = try DeviceRegistration.validate(mode: "live", platform: platform.rawValue, token: "ok-\(tag)-k\(n)", userID: "u1",
                                                  apnsEnvironment: platform == .ios ? "production" : nil,
                                                  encryptionPublicKey: .some(key.publicKey.base64URL),
                                                  platforms: ProviderTable.standard.addressing)
        return try world.register(appID, reg, appLimit: nil)
    }

    private func secretNotification(body: String? = nil) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: "live", userIDs: ["u1"])
        q.title = secrets[0]
        q.body = body ?? secrets[1]
        q.data = "{\"\(secrets[2])\":\"\(secrets[3])\"}"
        q.threadID = secrets[4]
        q.category = secrets[5]
        q.badge = 7
        q.sound = "default"
        q.collapseKey = "chat-9"
        return try world.enqueue(q).id
    }

    /// Keyed and keyless iOS and Android devices of an app requiring encryption, in `ids_only`:
    /// every device is charged at acceptance (keyless ones too), sent, netting one charge; APNs gets
    /// exactly the marker body (the collapse key as `apns-collapse-id`), FCM a data-only message
    /// with `data.pf`; not one secret reaches either; the notification records `ids_only`. Batches
    /// of 2 so the send-time start splits the audience and batch jobs read the mode back from the
    /// notification row.
    func idsOnlyAppSendsOnlyTheMarkerToAPNsAndFCMForKeyedAndKeylessDevices() throws {
        try setAPNs()
        try setFCM()
        try makeWorker(apnsTimeoutMillis: 10_000, batchSize: 2)
        try world.updateApp(appID, requireEncryption: true)
        try world.updateApp(appID, contentMode: .idsOnly)
        let devices = [try device("ok", n: 1).id, try keyedDevice(.ios, n: 2),
                       try device("ok", platform: .android, n: 3).id, try keyedDevice(.android, n: 4)]
        let n = try secretNotification()
        XCTAssertNil(try world.contentMode(notification: n), "written at the send time, not before")
        for d in devices {
            XCTAssertEqual(try ledger(n, d), ["charge"], "R-IDS-1: charged at acceptance, keyless or not")
        }
        try drain()
        XCTAssertEqual(try world.contentMode(notification: n), .idsOnly)
        for d in devices {
            let delivery = try delivery(n, d)
            XCTAssertEqual(delivery.status, "sent", "\(delivery.errorCode ?? "")")
            XCTAssertFalse(delivery.encrypted, "nothing was sealed")
            XCTAssertEqual(try ledger(n, d), ["charge"])
        }
        XCTAssertEqual(try report(n).status, "sent")
        let marker = #"{"v":1,"id":"\#(PrefixedID.format(.notification, n))"}"#
        let apns = pushes(fakes.apns)
        XCTAssertEqual(apns.count, 2)
        for line in apns {
            XCTAssertEqual(line["payload"] as? String,
                           #"{"aps":{"alert":{"title":"New notification","body":""},"mutable-content":1,"badge":7,"sound":"default"},"pf":"# + marker + "}")
            XCTAssertEqual(line["collapse_id"] as? String, "chat-9", "the collapse key stays outside, visible")
            XCTAssertEqual(line["push_type"] as? String, "alert")
        }
        let fcm = pushes(fakes.fcm)
        XCTAssertEqual(fcm.count, 2)
        for line in fcm {
            let body = try XCTUnwrap(line["body"] as? String)
            let message = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["message"] as? [String: Any])
            XCTAssertEqual(message["data"] as? [String: String], ["pf": marker])
            XCTAssertNil(message["notification"], "data only")
            XCTAssertEqual((message["android"] as? [String: Any])?["collapse_key"] as? String, "chat-9")
        }
        for line in apns + fcm {
            let text = String(describing: line)
            for s in secrets { XCTAssertFalse(text.contains(s), "\(s) reached a provider") }
        }
    }

    /// R-IDS-1 with R-SEND-7 and R-SEND-5: content too large for any sealed payload is accepted
    /// while the app is `ids_only` (push_enqueue's floor is a sealed app's), keyless devices are
    /// charged; the app made `sealed` again before the send time, the keyed device's payload no
    /// longer fits (`PUSH_PAYLOAD_TOO_LARGE`) and the keyless one is refused `ENCRYPTION_KEY_MISSING`,
    /// both refunded, nothing sent; the notification records `sealed`. The same content is refused
    /// at acceptance by a sealed app.
    func sealedAgainAtSendTimeRefusesWhatNoLongerFitsAndRefunds() throws {
        try setAPNs()
        try world.updateApp(appID, requireEncryption: true)
        try world.updateApp(appID, contentMode: .idsOnly)
        let keyless = try device("ok", n: 1).id
        let keyed = try keyedDevice(.ios, n: 2)
        let big = String(repeating: "x", count: 5000)
        let n = try secretNotification(body: big)
        XCTAssertEqual(try ledger(n, keyless), ["charge"])
        XCTAssertEqual(try ledger(n, keyed), ["charge"])
        try world.updateApp(appID, contentMode: .sealed)
        XCTAssertThrowsError(try secretNotification(body: big), "a sealed app refuses content that can never fit") { error in
            // push_enqueue's refusal (PostgreSQL), or the in-memory store's PushError.
            XCTAssertTrue((error as? PushError)?.code == .pushPayloadTooLarge || "\(error)".contains("PUSH_PAYLOAD_TOO_LARGE:"), "\(error)")
        }
        try drain()
        XCTAssertEqual(try world.contentMode(notification: n), .sealed)
        XCTAssertEqual(try delivery(n, keyed).errorCode, ErrorCode.pushPayloadTooLarge.rawValue)
        XCTAssertEqual(try delivery(n, keyless).errorCode, ErrorCode.encryptionKeyMissing.rawValue)
        XCTAssertEqual(try ledger(n, keyed), ["charge", "refund"])
        XCTAssertEqual(try ledger(n, keyless), ["charge", "refund"])
        XCTAssertEqual(try world.notification(n).deviceCount, 0)
        XCTAssertEqual(pushes(fakes.apns).count, 0)
    }

    /// The reverse: accepted while `sealed` (the keyless device of an app requiring encryption is
    /// not charged), sent while `ids_only`: the mode read at the send time governs, the keyless
    /// device is sent the marker and the worker writes its missing charge (R-SEND-9).
    func idsOnlyAtSendTimeDeliversToAKeylessDeviceChargedThen() throws {
        try setAPNs()
        try world.updateApp(appID, requireEncryption: true)
        let keyless = try device("ok", n: 1).id
        let n = try secretNotification()
        XCTAssertEqual(try ledger(n, keyless), [], "R-SEND-5 at acceptance: a sealed app does not charge it")
        try world.updateApp(appID, contentMode: .idsOnly)
        try drain()
        XCTAssertEqual(try delivery(n, keyless).status, "sent")
        XCTAssertEqual(try ledger(n, keyless), ["charge"])
        XCTAssertEqual(try world.contentMode(notification: n), .idsOnly)
        let payload = try XCTUnwrap(pushes(fakes.apns).first?["payload"] as? String)
        XCTAssertTrue(payload.hasSuffix(#","pf":{"v":1,"id":"\#(PrefixedID.format(.notification, n))"}}"#), payload)
    }
}

/// The same on the in-memory queue (`InMemoryQueue`, the conformance double of the SQL functions).
final class MemoryContentModeTests: ContentModeScenarios {
    func testIDsOnlyAppSendsOnlyTheMarkerToAPNsAndFCMForKeyedAndKeylessDevices() throws {
        try idsOnlyAppSendsOnlyTheMarkerToAPNsAndFCMForKeyedAndKeylessDevices()
    }
    func testSealedAgainAtSendTimeRefusesWhatNoLongerFitsAndRefunds() throws { try sealedAgainAtSendTimeRefusesWhatNoLongerFitsAndRefunds() }
    func testIDsOnlyAtSendTimeDeliversToAKeylessDeviceChargedThen() throws { try idsOnlyAtSendTimeDeliversToAKeylessDeviceChargedThen() }
}
