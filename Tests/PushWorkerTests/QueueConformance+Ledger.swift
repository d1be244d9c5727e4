import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore
@testable import PushWorker
import XCTest

/// The queue store's contract, part 1: what a recorded batch writes (ledger, DEVICE_GONE,
/// R-DEV-8). Each scenario runs the real worker through `world`, and runs against both stores
/// (`MemoryQueueConformanceTests`, `PGQueueConformanceTests`): the in-memory store is held to what
/// PostgreSQL does.
extension WorkerTestCase {
    /// R-SEND-9: sent, UNREGISTERED, INVALID_TOKEN and APP_MISMATCH (the simulator blames the
    /// device) net one charge, the last three deactivating the device with a push_device.deactivated
    /// event (R-PRV-1/2, R-PRV-4); ENCRYPTION_KEY_MISSING, PUSH_PAYLOAD_TOO_LARGE, DEVICE_GONE,
    /// EXPIRED and RETRIES_EXHAUSTED net zero; a device not charged at acceptance that is sent gets
    /// its missing charge; never more than one charge and one refund; device_count = devices netting one.
    func conformLedgerNetsForEveryEnding() throws {
        let app = try createApp(requireEncryption: false)
        func keyed(_ user: String, _ token: String, platform: String = "ios") throws -> UUID {
            try register(app, user: user, platform: platform, token: token, key: try P256PrivateKey.generate())
        }
        var expected: [UUID: (ending: String, net: Int)] = [:]
        let sent = try keyed("u1", "accept-1")
        let unregistered = try keyed("u1", "test_unregistered")
        let invalidToken = try keyed("u1", "test_invalid_token", platform: "android")
        let appMismatch = try keyed("u1", "test_app_mismatch")
        let keyless = try register(app, user: "u1", platform: "android")
        let exhausted = try keyed("u1", "test_timeout")
        let gone = try keyed("u1", "moving-phone")
        let n1 = try enqueue(app, users: ["u1"])
        let late = try keyed("u1", "registered-after-acceptance")
        _ = try register(app, user: "u2", platform: "ios", token: "moving-phone")
        try world.updateApp(app, requireEncryption: true)
        expected[sent] = ("sent", 1)
        expected[unregistered] = ("UNREGISTERED", 1)
        expected[invalidToken] = ("INVALID_TOKEN", 1)
        expected[appMismatch] = ("APP_MISMATCH", 1)
        expected[keyless] = ("ENCRYPTION_KEY_MISSING", 0)
        expected[exhausted] = ("RETRIES_EXHAUSTED", 0)
        expected[gone] = ("DEVICE_GONE", 0)
        expected[late] = ("sent", 1)

        let big = try keyed("big", "big-phone")
        let n2 = try enqueue(app, users: ["big"], title: String(repeating: "z", count: 3900), body: nil)
        let expiring = try keyed("exp", "test_unavailable")
        let n3 = try enqueue(app, users: ["exp"]) { $0.ttlSeconds = 0 }
        try drain(try makeWorker())

        let rows1 = try deliveries(n1)
        XCTAssertEqual(rows1.count, expected.count)
        for (device, e) in expected {
            let row = rows1[device]
            XCTAssertEqual(row.map { $0.status == "sent" ? "sent" : ($0.errorCode ?? "") }, e.ending)
            XCTAssertEqual(try net(n1, device), e.net, "R-SEND-9 net for \(e.ending)")
        }
        XCTAssertEqual(try ledger(n1)[keyless]?.charges, 1, "charged at acceptance, when the policy was off")
        XCTAssertEqual(try ledger(n1)[keyless]?.refunds, 1, "refunded: ENCRYPTION_KEY_MISSING nets zero")
        XCTAssertEqual(try ledger(n1)[late]?.charges, 1, "the missing charge is written for a device sent to")
        XCTAssertEqual(try notification(n1).deviceCount, 5)
        XCTAssertEqual(try notification(n1).encrypted, true)
        for (device, reason) in [(unregistered, "UNREGISTERED"), (invalidToken, "INVALID_TOKEN"), (appMismatch, "APP_MISMATCH")] {
            let state = try world.device(device)
            XCTAssertFalse(state.active, reason)
            XCTAssertEqual(state.reason, reason)
            XCTAssertEqual(try events(type: "push_device.deactivated", device: device), [reason], "R-PRV-4 event")
        }
        XCTAssertEqual(try events(type: "push_device.deactivated", device: sent), [])

        XCTAssertEqual(try deliveries(n2)[big]?.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertEqual(try net(n2, big), 0)
        XCTAssertEqual(try deliveries(n3)[expiring]?.errorCode, "EXPIRED")
        XCTAssertEqual(try net(n3, expiring), 0)
        for n in [n1, n2, n3] { try assertLedgerInvariants(n) }
    }

    /// R-SEND-9 at acceptance: the store charges exactly the devices PushCore's policy delivers to
    /// (`DeliveryPlanner.policyDelivers`, with each platform's writer saying whether it encrypts by
    /// itself), for ios/android x key/no key and web, under require_encryption off and on, in each
    /// content mode (R-IDS-1: an ids_only app's keyless devices are charged). The one
    /// rule SQL keeps (push_enqueue charges in the transaction that stores the notification, README
    /// "The boundary between the worker and the store") is held here to the core's copy: a change
    /// to either one alone fails this scenario on PostgreSQL.
    func conformAcceptanceChargesAreTheDevicesTheCorePolicyDeliversTo() throws {
        for (requireEncryption, contentMode) in [(false, ContentMode.sealed), (true, .sealed), (false, .idsOnly), (true, .idsOnly)] {
            let app = try createApp(requireEncryption: requireEncryption)
            try world.updateApp(app, contentMode: contentMode)
            var devices: [(label: String, id: UUID, platform: String, keyed: Bool)] = []
            for platform in ["ios", "android"] {
                for keyed in [true, false] {
                    let id = try register(app, user: "u1", platform: platform, key: keyed ? try P256PrivateKey.generate() : nil)
                    devices.append(("\(platform)/\(keyed ? "key" : "no key")", id, platform, keyed))
                }
            }
            devices.append(("web", try registerWeb(app, user: "u1"), "web", false))
            let n = try enqueue(app, users: ["u1"])
            let ledger = try ledger(n)
            var charged = 0
            for d in devices {
                let writer = try XCTUnwrap(ProviderTable.standard.provider(for: Platform(rawValue: d.platform))?.payload)
                let delivers = DeliveryPlanner.policyDelivers(hasKey: d.keyed, encryptsItself: writer.encryptsItself,
                                                              requireEncryption: requireEncryption, contentMode: contentMode)
                let label = "\(d.label), require_encryption \(requireEncryption), \(contentMode)"
                XCTAssertEqual(ledger[d.id]?.charges ?? 0, delivers ? 1 : 0, "acceptance charge for \(label)")
                XCTAssertEqual(ledger[d.id]?.refunds ?? 0, 0, label)
                if delivers { charged += 1 }
            }
            XCTAssertEqual(charged, requireEncryption && contentMode == .sealed ? 3 : 5, "the matrix covers both answers of the policy")
        }
    }

    /// R-DEV-2 / R-SEND-2: a token moved to another user before send time is not sent to; its
    /// delivery is DEVICE_GONE and its acceptance charge refunded.
    func conformTokenMovedBeforeSendTimeIsDeviceGoneAndRefunded() throws {
        let app = try createApp()
        let moved = try register(app, user: "alice", platform: "ios", token: "shared-phone")
        let stays = try register(app, user: "alice", platform: "android")
        let n = try enqueue(app, users: ["alice"])
        XCTAssertEqual(try register(app, user: "bob", platform: "ios", token: "shared-phone"), moved)
        let router = RecordingRouter()
        try drain(try makeWorker(router))

        XCTAssertFalse(router.pushes.contains { $0.deviceID == moved }, "never handed to a provider")
        let rows = try deliveries(n)
        XCTAssertEqual(rows[moved]?.status, "failed")
        XCTAssertEqual(rows[moved]?.errorCode, "DEVICE_GONE")
        XCTAssertEqual(try ledger(n)[moved]?.refunds, 1)
        XCTAssertEqual(try net(n, moved), 0)
        XCTAssertEqual(rows[stays]?.status, "sent")
        XCTAssertEqual(try notification(n).deviceCount, 1)
        try assertLedgerInvariants(n)
    }

    /// A notification whose app was deleted before its send time ends NO_DEVICES, every
    /// acceptance charge refunded with a DEVICE_GONE delivery; nothing reaches a provider.
    func conformAppDeletedBeforeSendTimeEndsNoDevicesWithDeviceGoneRefunds() throws {
        let app = try createApp()
        let devices = try (0..<4).map { i in try register(app, user: "u1", platform: i % 2 == 0 ? "ios" : "android") }
        let n = try enqueue(app, users: ["u1"]) { $0.sendAt = Date().addingTimeInterval(0.3) }
        try world.deleteApp(app)
        let router = RecordingRouter()
        try drain(try makeWorker(router))

        XCTAssertTrue(router.pushes.isEmpty, "nothing handed to a provider")
        let state = try notification(n)
        XCTAssertEqual(state.status, "failed")
        XCTAssertEqual(state.errorCode, "NO_DEVICES")
        let rows = try deliveries(n)
        XCTAssertEqual(rows.count, devices.count)
        for d in devices {
            XCTAssertEqual(rows[d]?.errorCode, "DEVICE_GONE")
            XCTAssertEqual(try ledger(n)[d]?.charges, 1)
            XCTAssertEqual(try ledger(n)[d]?.refunds, 1)
        }
        try assertLedgerInvariants(n)
    }

    /// R-DEV-8: a "token no longer valid" verdict older than the device's latest registration
    /// (the token registered again while the request was in flight) does not deactivate it and
    /// emits no event; the delivery itself still ends UNREGISTERED. Without a re-registration the
    /// same kind of verdict deactivates.
    func conformVerdictOlderThanReRegistrationDoesNotDeactivate() throws {
        let app = try createApp()
        let device = try register(app, user: "u1", platform: "ios", token: "test_unregistered")
        let n = try enqueue(app, users: ["u1"])
        let router = RecordingRouter()
        router.onSend = { [unowned self] _ in
            Thread.sleep(forTimeInterval: 0.01)
            XCTAssertEqual(try? self.register(app, user: "u1", platform: "ios", token: "test_unregistered"), device)
        }
        try drain(try makeWorker(router))

        XCTAssertEqual(try deliveries(n)[device]?.errorCode, "UNREGISTERED")
        XCTAssertTrue(try world.device(device).active, "a verdict older than the registration must not deactivate")
        XCTAssertEqual(try events(type: "push_device.deactivated", device: device), [])

        let other = try register(app, user: "u2", platform: "ios", token: "test_invalid_token")
        let n2 = try enqueue(app, users: ["u2"])
        router.onSend = nil
        try drain(try makeWorker(router))
        XCTAssertEqual(try deliveries(n2)[other]?.errorCode, "INVALID_TOKEN")
        XCTAssertEqual(try events(type: "push_device.deactivated", device: other), ["INVALID_TOKEN"])
        XCTAssertFalse(try world.device(other).active)
    }

    /// R-SEND-6: with an SMS fallback, a notification no device could get ends sms_fallback with
    /// exactly one outbox row; an empty audience without one ends NO_DEVICES with no delivery row.
    func conformFinalStatesAndTheSMSOutbox() throws {
        let app = try createApp(requireEncryption: true)
        try register(app, user: "keyless", platform: "ios")
        let fallback = try enqueue(app, users: ["keyless"]) {
            $0.smsPhone = "+35812345670"
            $0.smsText = "You have a message"
        }
        let nobody = try enqueue(app, users: ["nobody"])
        try drain(try makeWorker())
        XCTAssertEqual(try notification(fallback).status, "sms_fallback")
        XCTAssertEqual(try notification(fallback).errorCode, "ENCRYPTION_KEY_MISSING")
        let outbox = try world.smsOutbox()
        XCTAssertEqual(outbox.count, 1)
        XCTAssertEqual(outbox[fallback]?.phone, "+35812345670")
        XCTAssertEqual(outbox[fallback]?.text, "You have a message")
        XCTAssertEqual(try notification(nobody).status, "failed")
        XCTAssertEqual(try notification(nobody).errorCode, "NO_DEVICES")
        XCTAssertTrue(try deliveries(nobody).isEmpty)
        XCTAssertEqual(try openJobs(), 0)
    }
}
