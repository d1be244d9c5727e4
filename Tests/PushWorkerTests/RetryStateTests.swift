import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// What a retry reads again and what it must not: the notification's `encrypted` flag stays as
/// written at send time (R-SEND-2) and the device key is re-read (R-ENC-8). A provider verdict older
/// than a re-registration (R-DEV-8) is in the conformance suite.
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
            do { try self.world.updateApp(app, requireEncryption: true) } catch { XCTFail("\(error)") }
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
            let removal = Result { try self.removeKey(app, user: "u1", platform: "ios", token: "test_unavailable") }
            XCTAssertEqual(try? removal.get(), device, "key removal: \(removal)")
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
}
