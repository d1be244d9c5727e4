import Foundation
import XCTest
import PushTestSupport
import PushCore
import PushCrypto
@testable import PushStore
@testable import PushWorker

/// Live Web Push around the answers: VAPID refusals (R-APP-3, R-APP-4), the send-time endpoint guard
/// (R-DEV-1, issue 7), test mode through the simulator (R-MODE-2), VAPID set validation. The
/// scenarios run on both stores: `LiveWebPushGuardTests` on the in-memory store,
/// `PGLiveWebPushGuardTests` (PGQueueConformanceTests.swift) on PostgreSQL (sets sealed in
/// `push_credentials`, their state written by push_record), with `pushfleet apps vapid create`.
class LiveWebPushGuardScenarios: LiveWebPushTestCase {
    func vapidKeyRefused403InvalidatesCredentialsOnceKeepsDevicesThenFailsWithoutRequestUntilReplacedR_APP_4() throws {
        try setVAPID()
        // A verified set first: a later VAPID refusal still blames the key, never the browsers.
        let okSub = try fake.take("ok")
        let okDevice = try webDevice(okSub, user: "u1")
        let n0 = try send(users: ["u1"])
        try drain()
        XCTAssertEqual(try delivery(n0, okDevice).status, "sent")
        XCTAssertEqual(try credential(.webpush)?.state, .verified)

        let pinnedSub = try fake.take("pinned")  // the fake accepts only `fake.pinnedVAPID` for it
        let pinned = try webDevice(pinnedSub, user: "u2")
        let n1 = try send(users: ["u2"])
        try drain()
        let refused = try delivery(n1, pinned)
        XCTAssertEqual(refused.status, "failed")
        XCTAssertEqual(refused.errorCode, "CREDENTIALS_INVALID")
        XCTAssertEqual(fake.log(path: pinnedSub.path).map { $0["status"] as? Int }, [403])
        XCTAssertTrue(try deviceState(pinned).active, "a VAPID refusal never deactivates the browser")
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
        let cred = try XCTUnwrap(try credential(.webpush))
        XCTAssertEqual(cred.state, .invalid)
        XCTAssertEqual(cred.invalidReason, "VapidKeyMismatch")
        XCTAssertNotNil(cred.firstAcceptedAt, "R-APP-3: the first acceptance time is kept for good")
        let ev = try events("push_app.credentials_invalid")
        XCTAssertEqual(ev.count, 1)
        XCTAssertEqual(ev.first?["kind"] as? String, "webpush")
        XCTAssertEqual(try ledger(n1, pinned), ["charge", "refund"])  // R-SEND-9: CREDENTIALS_INVALID nets zero

        // R-APP-4: while invalid, every live web delivery of the app fails at once, no request made.
        let n2 = try send(users: ["u1", "u2"])
        try drain()
        for (device, sub) in [(okDevice, okSub), (pinned, pinnedSub)] {
            let del = try delivery(n2, device)
            XCTAssertEqual(del.errorCode, "CREDENTIALS_INVALID")
            XCTAssertNil(del.provider)
            XCTAssertEqual(del.attempts, 0)
            XCTAssertEqual(try ledger(n2, device), ["charge", "refund"])
            XCTAssertEqual(fake.log(path: sub.path).count, 1, "no request while the set is invalid")
        }
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 1)
        XCTAssertEqual(try report(n2).status, "failed")

        // Replacing the set (with the key the subscription was made with) lifts the refusal.
        XCTAssertEqual(try setVAPID(fake.pinnedVAPID).state, .unverified)
        let n3 = try send(users: ["u1", "u2"])
        try drain()
        XCTAssertEqual(try delivery(n3, pinned).status, "sent")
        XCTAssertEqual(try delivery(n3, okDevice).status, "sent")
        let accepted = try XCTUnwrap(fake.log(path: pinnedSub.path).last)
        XCTAssertEqual(accepted["status"] as? Int, 201)
        XCTAssertEqual((accepted["vapid"] as? [String: Any])?["k"] as? String, fake.pinnedVAPID.publicKeyBase64URL)
        XCTAssertEqual(accepted["plaintext"] as? String, Self.plaintext)
        XCTAssertEqual(try credential(.webpush)?.state, .verified)
    }

    func noVAPIDSetFailsLiveWebDeliveryCredentialsInvalidWithoutRequestR_APP_4() throws {
        let s = try fake.take("ok")
        let d = try webDevice(s)
        let n = try send()
        try drain()
        let del = try delivery(n, d)
        XCTAssertEqual(del.errorCode, "CREDENTIALS_INVALID")
        XCTAssertEqual(del.attempts, 0)
        XCTAssertEqual(fake.log(path: s.path).count, 0)
        XCTAssertEqual(try ledger(n, d), ["charge", "refund"])
        XCTAssertTrue(try deviceState(d).active)
    }

    func endpointResolvingToLoopbackWithoutAllowLoopbackFailsInvalidSubscriptionWithoutRequestR_DEV_1() throws {
        // A public-looking name that resolves to 127.0.0.1 (DNS rebinding), and a loopback IP literal.
        let resolver = StubWebPushResolver(["push.example.test": ["127.0.0.1"]])
        try makeWorker(allowLoopback: false, resolver: resolver)
        try setVAPID()
        let named = try fake.take("ok"), literal = try fake.take("ok")
        let byName = try webDevice(named, host: "push.example.test")
        let byIP = try webDevice(literal, host: "127.0.0.1")  // registration admitted it (tests only)
        let n = try send()
        try drain()
        for (device, sub) in [(byName, named), (byIP, literal)] {
            let del = try delivery(n, device)
            XCTAssertEqual(del.status, "failed", "final, never retried")
            XCTAssertEqual(del.errorCode, "INVALID_SUBSCRIPTION")
            XCTAssertEqual(fake.log(path: sub.path).count, 0, "no request reached the service")
            XCTAssertEqual(try ledger(n, device), ["charge", "refund"])  // R-SEND-9: nets zero
            XCTAssertTrue(try deviceState(device).active)
        }
        let detail = try delivery(n, byName).errorDetail ?? ""
        XCTAssertTrue(detail.contains("127.0.0.1"), detail)
        XCTAssertEqual(resolver.lookups, ["push.example.test"])
        XCTAssertEqual(try credential(.webpush)?.state, .unverified, "the guard's refusal is not the key's fault")
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 0)
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
    }

    func inTestModeWebDevicesGoToTheSimulatorEncryptedWithoutCredentialsR_MODE_2_R_SEND_11() throws {
        // No VAPID set: test mode never needs or touches credentials (R-APP-3).
        func subscriber(_ answer: String) throws -> (id: UUID, key: [UInt8], auth: [UInt8]) {
            let key = try WebPushDecryption.generatePrivateKey()
            let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let id = try webDevice(endpoint: "https://push.example.com/send/\(UUID().uuidString.lowercased())/\(answer)",
                                   p256dh: try WebPushDecryption.publicKey(privateKey: key), auth: auth, mode: "test")
            return (id, key, auth)
        }
        let accept = try subscriber("test_accept"), gone = try subscriber("test_unregistered")
        let n = try send(mode: "test")
        try drain()

        let sent = try delivery(n, accept.id)
        XCTAssertEqual(sent.status, "sent")
        XCTAssertEqual(sent.provider, "simulator")
        XCTAssertTrue(sent.encrypted, "R-SEND-11")
        XCTAssertTrue(sent.providerMessageID?.hasPrefix("sim-") ?? false)
        // The stored test payload is the aes128gcm body; the subscriber decrypts the R-ENC-3 plaintext.
        let stored = try XCTUnwrap(sent.payload)
        XCTAssertTrue(stored.hasPrefix("base64url:"), stored)
        let body = try XCTUnwrap(Base64URL.decode(String(stored.dropFirst("base64url:".count))))
        XCTAssertEqual(body.count, Self.plaintext.utf8.count + 103)
        let plain = try WebPushDecryption.decrypt(body: body, userAgentPrivateKey: accept.key, auth: accept.auth)
        XCTAssertEqual(String(decoding: plain, as: UTF8.self), Self.plaintext)

        let refused = try delivery(n, gone.id)
        XCTAssertEqual(refused.errorCode, "UNREGISTERED")
        XCTAssertFalse(try deviceState(gone.id).active)
        XCTAssertEqual(try events("push_device.deactivated").count, 1)
        XCTAssertEqual(try ledger(n, accept.id), ["charge"])
        XCTAssertEqual(try ledger(n, gone.id), ["charge"])
        XCTAssertNil(try credential(.webpush))
        XCTAssertEqual(router.clientsBuilt, 0, "no provider client was built for test mode")
    }

    // MARK: - Validation and CLI

    func webpushCredentialValidationRefusesBadSubjectAndBadKeyR_APP_3() throws {
        let pem = Array(try vapid.privateKeyPEM().utf8)
        let config = try CredentialValidation.webpush(subject: "https://example.com/contact", privateKeyPEM: pem)
        XCTAssertEqual(config, ["subject": "https://example.com/contact", "public_key": vapid.publicKeyBase64URL])
        for subject in ["", "ops@example.com", "http://example.com", "mailto:ops @example.com",
                        "mailto:" + String(repeating: "a", count: 250)] {
            XCTAssertThrowsError(try CredentialValidation.webpush(subject: subject, privateKeyPEM: pem), subject) {
                XCTAssertEqual(($0 as? PushError)?.code, .validationError, subject)
                XCTAssertTrue(($0 as? PushError)?.message.hasPrefix("subject:") ?? false)
            }
        }
        let rsa = try FakeMaterial.bytes("sa_key.pem")  // a PEM private key, but RSA
        for (name, bad) in [("garbage", Array("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8)),
                            ("not utf-8", [0xff, 0xfe, 0x00]), ("rsa", rsa), ("empty", [])] {
            XCTAssertThrowsError(try CredentialValidation.webpush(subject: Self.subject, privateKeyPEM: bad), name) {
                let e = $0 as? PushError
                XCTAssertEqual(e?.code, .validationError, name)
                XCTAssertTrue(e?.message.hasPrefix("vapid key:") ?? false, name)
                XCTAssertFalse(e?.message.contains("PRIVATE") ?? true, "never quotes the secret")
            }
        }
        // The store refuses the same sets before storing (sealing) anything.
        XCTAssertThrowsError(try world.setCredentials(app: appID, kind: .webpush, config: [:], secret: pem, keys: keys))
        XCTAssertThrowsError(try world.setCredentials(app: appID, kind: .webpush, config: ["subject": Self.subject],
                                                      secret: rsa, keys: keys))
        XCTAssertNil(try credential(.webpush))
        XCTAssertEqual(try setVAPID().identifiers["public_key"], vapid.publicKeyBase64URL)
    }
}

/// The guard's scenarios on the in-memory store (their PostgreSQL run: `PGLiveWebPushGuardTests`).
final class LiveWebPushGuardTests: LiveWebPushGuardScenarios {
    func testVAPIDKeyRefused403InvalidatesCredentialsOnceKeepsDevicesThenFailsWithoutRequestUntilReplacedR_APP_4() throws {
        try vapidKeyRefused403InvalidatesCredentialsOnceKeepsDevicesThenFailsWithoutRequestUntilReplacedR_APP_4()
    }
    func testNoVAPIDSetFailsLiveWebDeliveryCredentialsInvalidWithoutRequestR_APP_4() throws {
        try noVAPIDSetFailsLiveWebDeliveryCredentialsInvalidWithoutRequestR_APP_4()
    }
    func testEndpointResolvingToLoopbackWithoutAllowLoopbackFailsInvalidSubscriptionWithoutRequestR_DEV_1() throws {
        try endpointResolvingToLoopbackWithoutAllowLoopbackFailsInvalidSubscriptionWithoutRequestR_DEV_1()
    }
    func testTestModeWebDevicesGoToTheSimulatorEncryptedWithoutCredentialsR_MODE_2_R_SEND_11() throws {
        try inTestModeWebDevicesGoToTheSimulatorEncryptedWithoutCredentialsR_MODE_2_R_SEND_11()
    }
    func testWebpushCredentialValidationRefusesBadSubjectAndBadKeyR_APP_3() throws {
        try webpushCredentialValidationRefusesBadSubjectAndBadKeyR_APP_3()
    }
}
