import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// What a retry reads again and what it must not: the notification's `encrypted` flag stays as
/// written at send time (R-SEND-2), the device key is re-read (R-ENC-8), and a provider verdict
/// older than a re-registration does not deactivate (R-DEV-8).
final class RetryStateTests: WorkerTestCase {
    /// R-SEND-2: the app turning require_encryption on after the send time does not change the
    /// retries of that notification: they read `encrypted` (false) from the notification, so a
    /// keyless device keeps being sent in plaintext and ends sent.
    func testRetriesReadEncryptedFromTheNotificationNotTheApp() throws {
        let app = try createApp(requireEncryption: false)
        let device = try register(app, user: "u1", platform: "android", token: "test_unavailable")
        let n = try enqueue(app, users: ["u1"], title: "Plain")
        let router = RecordingRouter()
        var changed = false
        router.onSend = { [unowned self] _ in
            guard !changed else { return }
            changed = true
            XCTAssertEqual(try? AppStore(connection: self.conn).appUpdate(id: app, requireEncryption: true)?.requireEncryption,
                           true)
        }
        try drain(try makeWorker(router))

        let row = try XCTUnwrap(try deliveries(n)[device])
        XCTAssertEqual(row.status, "sent")
        XCTAssertEqual(row.attempts, 3)
        XCTAssertFalse(row.encrypted)
        XCTAssertEqual(try notification(n).encrypted, false)
        XCTAssertEqual(router.pushes.count, 3)
        XCTAssertTrue(router.pushes.allSatisfy { envelope($0.body, platform: "android") == nil })
        XCTAssertEqual(try net(n, device), 1)
        try assertLedgerInvariants(n)
    }

    /// R-ENC-8 + R-SEND-5: a key removed (explicit null, R-DEV-4) between two retries of an
    /// encrypted notification is re-read: the retry is refused ENCRYPTION_KEY_MISSING, never sent
    /// in plaintext, and the acceptance charge is refunded.
    func testKeyRemovedBetweenRetriesIsRefusedNotSentInPlaintext() throws {
        let app = try createApp(requireEncryption: true)
        let device = try register(app, user: "u1", platform: "ios", token: "test_unavailable",
                                  key: try P256PrivateKey.generate())
        let n = try enqueue(app, users: ["u1"], title: "Secret")
        let router = RecordingRouter()
        var removed = false
        router.onSend = { [unowned self] _ in
            guard !removed else { return }
            removed = true
            do {
                let r = try DeviceRegistration.validate(mode: "test", platform: "ios", token: "test_unavailable",
                                                        userID: "u1", apnsEnvironment: "sandbox",
                                                        encryptionPublicKey: .some(nil))
                XCTAssertEqual(try DeviceRegistry(connection: self.conn).register(appID: app, r).deviceID, device)
            } catch {
                XCTFail("key removal failed: \(error)")
            }
        }
        try drain(try makeWorker(router))

        XCTAssertEqual(router.pushes.count, 1, "only the first, encrypted attempt reached the provider")
        XCTAssertNotNil(envelope(router.pushes.first?.body, platform: "ios"))
        let row = try XCTUnwrap(try deliveries(n)[device])
        XCTAssertEqual(row.status, "failed")
        XCTAssertEqual(row.errorCode, "ENCRYPTION_KEY_MISSING")
        XCTAssertEqual(try ledger(n)[device]?.charges, 1)
        XCTAssertEqual(try ledger(n)[device]?.refunds, 1)
        XCTAssertEqual(try notification(n).errorCode, "ENCRYPTION_KEY_MISSING")
        try assertLedgerInvariants(n)
    }

    /// R-DEV-8: a "token no longer valid" verdict older than the device's latest registration
    /// (the token registered again while the request was in flight) does not deactivate it and
    /// emits no event; the delivery itself still ends UNREGISTERED.
    func testVerdictOlderThanReRegistrationDoesNotDeactivate() throws {
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
        let r = try conn.exec("SELECT active FROM push_devices WHERE id = $1", [.uuid(device)])
        XCTAssertTrue(try r.bool(0, "active"), "a verdict older than the registration must not deactivate")
        XCTAssertEqual(try events(type: "push_device.deactivated", device: device), [])

        // Control: without a re-registration the same verdict deactivates.
        let other = try register(app, user: "u2", platform: "ios", token: "test_invalid_token")
        let n2 = try enqueue(app, users: ["u2"])
        router.onSend = nil
        try drain(try makeWorker(router))
        XCTAssertEqual(try deliveries(n2)[other]?.errorCode, "INVALID_TOKEN")
        XCTAssertEqual(try events(type: "push_device.deactivated", device: other), ["INVALID_TOKEN"])
    }
}
