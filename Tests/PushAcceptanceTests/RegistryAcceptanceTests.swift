import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import PushStore
import PushTestSupport
import XCTest

/// `AcceptanceService` for devices and apps: the device as stored in the answer, the key's three
/// actions (R-DEV-4), the limits (R-DEV-6), deletion (R-DEV-7), app changes and their event.
final class RegistryAcceptanceTests: AcceptanceTestCase {
    func testRegistrationAnswersTheDeviceAsStoredAndKeepsSetsAndRemovesTheKey() throws {
        let app = try makeApp()
        let key = try P256PrivateKey.generate()
        let first = try service.registerDevice(DeviceRegistrationRequest(
            appID: app, mode: .test, platform: "ios", token: "tok1", userID: "alice", apnsEnvironment: "production",
            encryptionKey: .set(key.publicKey.base64URL)))
        XCTAssertTrue(first.created)
        XCTAssertEqual(first.device.appID, app)
        XCTAssertEqual(first.device.platform, "ios")
        XCTAssertEqual(first.device.userID, "alice")
        XCTAssertEqual(first.device.apnsEnvironment, "production")
        XCTAssertTrue(first.device.active)
        XCTAssertEqual(first.device.encryptionKeyID, key.publicKey.kid)
        let kept = try service.registerDevice(DeviceRegistrationRequest(
            appID: app, mode: .test, platform: "ios", token: "tok1", userID: "bob", apnsEnvironment: "production"))
        XCTAssertFalse(kept.created)
        XCTAssertEqual(kept.device.id, first.device.id)
        XCTAssertEqual(kept.device.userID, "bob", "moved to the new user (R-DEV-2)")
        XCTAssertEqual(kept.device.encryptionKeyID, key.publicKey.kid, "absent field keeps the key (R-DEV-4)")
        XCTAssertEqual(kept.device.createdAt, first.device.createdAt)
        XCTAssertGreaterThanOrEqual(kept.device.lastRegisteredAt, first.device.lastRegisteredAt)
        let removed = try service.registerDevice(DeviceRegistrationRequest(
            appID: app, mode: .test, platform: "ios", token: "tok1", userID: "bob", apnsEnvironment: "production",
            encryptionKey: .remove))
        XCTAssertNil(removed.device.encryptionKeyID)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_devices WHERE public_key IS NOT NULL"), 0)
    }

    func testRefusalsNameTheFieldAndNeverQuoteTheKeyOrToken() throws {
        let app = try makeApp()
        let key = try P256PrivateKey.generate().publicKey.base64URL
        assertRefused(.validationError, field: "encryption_public_key", quoting: key) {
            _ = try service.registerDevice(DeviceRegistrationRequest(appID: app, mode: .test, platform: "ios", token: "t",
                                                                     userID: "u", apnsEnvironment: "sandbox",
                                                                     encryptionKey: .set(key + "=")))
        }
        assertRefused(.validationError, field: "token", quoting: "SECRETTOKEN") {
            _ = try service.registerDevice(DeviceRegistrationRequest(appID: app, mode: .test, platform: "android",
                                                                     token: "SECRETTOKEN with space", userID: "u"))
        }
        assertRefused(.validationError, field: "subscription.keys.auth") {
            _ = try service.registerDevice(DeviceRegistrationRequest(
                appID: app, mode: .test, platform: "web",
                subscription: .init(endpoint: "https://push.example.com/x", p256dh: try P256PrivateKey.generate().publicKey.base64URL,
                                    auth: nil), userID: "u"))
        }
        assertRefused(.notFound, field: "app_id") {
            _ = try service.registerDevice(DeviceRegistrationRequest(appID: UUID(), mode: .test, platform: "android",
                                                                     token: "t", userID: "u"))
        }
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_devices"), 0)
    }

    func testTheAppLimitIsPushDeviceLimitAndDeletionIsScoped() throws {
        let app = try makeApp()
        let limited = AcceptanceService(connection: conn, appDeviceLimit: 1)
        let d = try limited.registerDevice(DeviceRegistrationRequest(appID: app, mode: .test, platform: "android",
                                                                     token: "a", userID: "u")).device.id
        do {
            _ = try limited.registerDevice(DeviceRegistrationRequest(appID: app, mode: .test, platform: "android", token: "b", userID: "v"))
            XCTFail("over the app's limit")
        } catch let e as AcceptanceError {
            XCTAssertEqual(e.code, .pushDeviceLimit)
        }
        assertRefused(.notFound) { try service.deleteDevice(appID: app, mode: .live, deviceID: d) }
        try service.deleteDevice(appID: app, mode: .test, deviceID: d)
        assertRefused(.notFound) { try service.deleteDevice(appID: app, mode: .test, deviceID: d) }
    }

    func testAppChangesAndTurningEncryptionOffRecordsAnEvent() throws {
        let created = try service.createApp(AppCreateRequest(name: "acme", requireEncryption: true))
        try WebhookFixture.subscribeToEverything(conn, appID: created.id)   // an event nobody wants is not kept
        XCTAssertEqual(created.placeholderTitle, "New notification")
        XCTAssertEqual(created.placeholderBody, "")
        let renamed = try service.updateApp(id: created.id, AppUpdateRequest(name: "acme 2", placeholderTitle: "New message"))
        XCTAssertEqual(renamed.name, "acme 2")
        XCTAssertTrue(renamed.requireEncryption, "unchanged")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 0)
        let off = try service.updateApp(id: created.id, AppUpdateRequest(requireEncryption: false))
        XCTAssertFalse(off.requireEncryption)
        let event = try conn.exec("SELECT type, payload ->> 'mode' AS mode FROM push_events")
        XCTAssertEqual(event.rowCount, 1)
        XCTAssertEqual(try event.string(0, "type"), "push_app.encryption_disabled")
        XCTAssertEqual(try event.string(0, "mode"), "live")
        _ = try service.updateApp(id: created.id, AppUpdateRequest(requireEncryption: false))
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 1, "only a change records it")
    }
}
