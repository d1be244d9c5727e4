import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// What is read at send time, not at acceptance: the app's policy (R-APP-2, R-SEND-2), the
/// audience (R-SEND-1/2) and each device's key on every attempt (R-ENC-8). A device moved away before
/// the send time is in the conformance suite (`conformTokenMovedBeforeSendTimeIsDeviceGoneAndRefunded`).
final class SendTimeTests: WorkerTestCase {
    /// R-APP-2 / R-SEND-2: a scheduled notification whose app turned require_encryption on before
    /// send_at refuses the keyless device (ENCRYPTION_KEY_MISSING) and refunds its acceptance
    /// charge; the notification records `encrypted` = true; the keyed device is sent encrypted.
    func testRequireEncryptionTurnedOnBeforeSendAtRefusesAndRefundsKeylessDevice() throws {
        let app = try createApp(requireEncryption: false)
        let keyless = try register(app, user: "u1", platform: "ios")
        let keyed = try register(app, user: "u1", platform: "android", key: try P256PrivateKey.generate())
        let n = try enqueue(app, users: ["u1"]) { $0.sendAt = Date().addingTimeInterval(0.6) }
        XCTAssertEqual(try ledger(n)[keyless]?.charges, 1, "charged at acceptance: policy was off then")

        try world.updateApp(app, requireEncryption: true)
        let worker = try makeWorker()
        XCTAssertEqual(try runOnce(worker), 0, "not due before send_at")
        try drain(worker)

        let state = try notification(n)
        XCTAssertEqual(state.encrypted, true, "R-SEND-2: the policy read at send time is written on the notification")
        XCTAssertEqual(state.status, "sent")
        XCTAssertEqual(state.deviceCount, 1)
        let rows = try deliveries(n)
        XCTAssertEqual(rows[keyless]?.errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertNil(rows[keyless]?.payload, "never sent in plaintext")
        XCTAssertEqual(try ledger(n)[keyless]?.refunds, 1)
        XCTAssertEqual(try net(n, keyless), 0)
        XCTAssertEqual(rows[keyed]?.status, "sent")
        XCTAssertEqual(rows[keyed]?.encrypted, true)
        try assertLedgerInvariants(n)
    }

    /// R-ENC-8: a device whose key is replaced between two retries is sealed to the new key on the
    /// retry (envelope kid = the new kid); the stored test payload opens with the new private key to
    /// exactly the R-ENC-3 plaintext, and no longer with the old one.
    func testRetryAfterKeyReplacementSealsToTheNewKey() throws {
        for platform in ["ios", "android"] {
            let app = try createApp(name: platform)
            let oldKey = try P256PrivateKey.generate(), newKey = try P256PrivateKey.generate()
            let device = try register(app, user: "u1", platform: platform, token: "test_unavailable", key: oldKey)
            let n = try enqueue(app, users: ["u1"], title: "Hi", body: "There") {
                $0.data = #"{"b":1,"a":"x/y"}"#
                $0.badge = 3
                $0.sound = "ping"
                $0.threadID = "t1"
            }
            let router = RecordingRouter()
            var replaced = false
            router.onSend = { [unowned self] _ in
                if !replaced {
                    replaced = true
                    do {
                        _ = try self.register(app, user: "u1", platform: platform, token: "test_unavailable", key: newKey)
                    } catch {
                        XCTFail("re-registration failed: \(error)")
                    }
                }
            }
            try drain(try makeWorker(router))

            let pushes = router.pushes.filter { $0.deviceID == device }
            XCTAssertEqual(pushes.count, 3, "test_unavailable: two transient failures, then accepted")
            let kids = pushes.map { envelope($0.body, platform: platform)?["kid"] as? String }
            XCTAssertEqual(kids, [oldKey.publicKey.kid, newKey.publicKey.kid, newKey.publicKey.kid], platform)

            let row = try XCTUnwrap(try deliveries(n)[device])
            XCTAssertEqual(row.status, "sent")
            XCTAssertEqual(row.attempts, 3)
            let env = try XCTUnwrap(envelope(row.payload, platform: platform), platform)
            XCTAssertEqual(env["kid"] as? String, newKey.publicKey.kid)
            let plaintext = try open(env, with: newKey)
            let expected = #"{"title":"Hi","body":"There","data":{"b":1,"a":"x/y"},"badge":3,"sound":"ping","thread_id":"t1"}"#
            XCTAssertEqual(plaintext, Array(expected.utf8), "R-ENC-3 plaintext, byte for byte (\(platform))")
            XCTAssertThrowsError(try open(env, with: oldKey), "ciphertext for the replaced key is never sent")
        }
    }
}
