import Foundation
import XCTest
import PushCore
import PushCrypto
@testable import PushStore

/// Issue 19 part 1: endpoints per app and mode, validated, secrets sealed at rest and shown once,
/// rotation with a 24 h overlap (R-HOOK-1), R-MODE-1 scoping.
final class WebhookEndpointStoreTests: WebhookStoreTestCase {
    func testCreateSealsTheSecretAtRestAndReturnsItOnce() throws {
        let made = try endpoint(types: nil)
        XCTAssertTrue(made.secret.text.hasPrefix("whsec_"))
        XCTAssertEqual(made.endpoint.eventTypes, WebhookEventType.defaultSubscription.map(\.rawValue))
        XCTAssertTrue(made.endpoint.enabled)
        let sealed = try conn.exec("SELECT secret_sealed FROM push_webhook_endpoints WHERE id = $1",
                                   [.uuid(made.endpoint.id)]).bytes(0, 0)
        XCTAssertEqual(sealed.count, made.secret.key.count + SecretBox.overhead)
        XCTAssertNil(Data(sealed).range(of: Data(made.secret.key)), "the key bytes are not stored in clear")
        XCTAssertEqual(try WebhookEndpointStore.open(sealed, endpointID: made.endpoint.id, keys: keys), made.secret.key)
        XCTAssertThrowsError(try WebhookEndpointStore.open(sealed, endpointID: UUID(), keys: keys), "bound to its row")
        let text = String(decoding: try JSONEncoder().encode(try XCTUnwrap(try endpoints.get(id: made.endpoint.id))), as: UTF8.self)
        XCTAssertFalse(text.contains("whsec_"), "reads never carry a secret")
        XCTAssertThrowsError(try WebhookEndpointStore(connection: conn, keys: nil, allowLoopback: false)
            .create(appID: appID, mode: .test, url: "https://hooks.example.com/x", eventTypes: nil)) {
            XCTAssertEqual(($0 as? PushError)?.code, .validationError, "no operator key, no endpoint")
        }
    }

    func testInputIsValidatedAndEndpointsAreBoundedPerAppAndMode() throws {
        XCTAssertThrowsError(try endpoints.create(appID: appID, mode: .live, url: "http://hooks.example.com/", eventTypes: nil))
        XCTAssertThrowsError(try endpoints.create(appID: appID, mode: .live, url: "https://10.0.0.8/", eventTypes: nil))
        XCTAssertThrowsError(try endpoint(types: ["push_device.created"]))
        XCTAssertThrowsError(try endpoints.create(appID: UUID(), mode: .test, url: "https://hooks.example.com/", eventTypes: nil)) {
            XCTAssertEqual(($0 as? PushError)?.code, .notFound)
        }
        for _ in 0..<WebhookEndpointRules.maximumEndpointsPerAppAndMode { try endpoint() }
        XCTAssertThrowsError(try endpoint()) { XCTAssertEqual(($0 as? PushError)?.code, .validationError) }
        XCTAssertNoThrow(try endpoint(.live), "the limit is per mode")
        XCTAssertEqual(try endpoints.list(appID: appID, mode: .test).count, 20)
        XCTAssertEqual(try endpoints.list(appID: appID).count, 21)
        let loopback = WebhookEndpointStore(connection: conn, keys: keys, allowLoopback: true)
        let other = try AppStore(connection: conn).appCreate(name: "other").id
        XCTAssertNoThrow(try loopback.create(appID: other, mode: .test, url: "http://127.0.0.1:9/h", eventTypes: nil))
        XCTAssertThrowsError(try loopback.create(appID: other, mode: .live, url: "http://127.0.0.1:9/h", eventTypes: nil),
                             "http only in test mode")
    }

    /// R-MODE-1: a caller scoped to one mode never sees or changes the other mode's endpoints.
    func testModeScopedCallsTreatTheOtherModesEndpointsAsAbsent() throws {
        let test = try endpoint(.test).endpoint
        XCTAssertNil(try endpoints.get(id: test.id, mode: .live))
        XCTAssertNil(try endpoints.update(id: test.id, mode: .live, enabled: false))
        XCTAssertNil(try endpoints.rotateSecret(id: test.id, mode: .live))
        XCTAssertFalse(try endpoints.delete(id: test.id, mode: .live))
        XCTAssertEqual(try endpoints.get(id: test.id, mode: .test)?.enabled, true)
        XCTAssertTrue(try endpoints.delete(id: test.id, mode: .test))
        XCTAssertNil(try endpoints.get(id: test.id))
    }

    func testUpdateChangesURLAndTypesAndDisablingFailsPendingDeliveries() throws {
        let e = try endpoint().endpoint
        try insertEvents(3)
        XCTAssertEqual(try endpoints.get(id: e.id)?.pending, 3)
        let changed = try XCTUnwrap(try endpoints.update(id: e.id, url: "https://other.example.com/h",
                                                          eventTypes: ["push_notification.finished"]))
        XCTAssertEqual(changed.url, "https://other.example.com/h")
        XCTAssertEqual(changed.eventTypes, ["push_notification.finished"])
        XCTAssertThrowsError(try endpoints.update(id: e.id, url: "https://192.168.1.1/"))
        let off = try XCTUnwrap(try endpoints.update(id: e.id, enabled: false))
        XCTAssertEqual(off.disabledReason, WebhookDisableReason.manual.rawValue)
        XCTAssertEqual(off.pending, 0)
        XCTAssertEqual(try rows(e.id, "failed"), 3)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events WHERE delivered_at IS NOT NULL"), 3,
                       "their events are finished (retention clock)")
        let on = try XCTUnwrap(try endpoints.update(id: e.id, enabled: true))
        XCTAssertTrue(on.enabled)
        XCTAssertNil(on.disabledReason)
    }

    /// After a rotation both secrets sign for 24 hours, then only the new one.
    func testRotationKeepsThePreviousSecretSigningFor24Hours() throws {
        let made = try endpoint()
        let now = Date()
        let rotated = try XCTUnwrap(try endpoints.rotateSecret(id: made.endpoint.id, now: now))
        XCTAssertNotEqual(rotated.secret, made.secret)
        XCTAssertEqual(try XCTUnwrap(rotated.endpoint.previousSecretExpiresAt).timeIntervalSince(now), 86_400, accuracy: 1)
        try insertEvents(1)
        let claimed = try dispatch().claim(owner: "t", limit: 1, perEndpoint: 1, leaseSeconds: 30, now: now.addingTimeInterval(5))
        XCTAssertEqual(claimed.first?.endpoint?.secrets, [rotated.secret, made.secret], "the current one first")
        try conn.exec("UPDATE push_outbox SET state = 'available', lease_token = NULL, lease_expires_at = NULL")
        let later = try dispatch().claim(owner: "t", limit: 1, perEndpoint: 1, leaseSeconds: 30,
                                         now: now.addingTimeInterval(86_400 + 60))
        XCTAssertEqual(later.first?.endpoint?.secrets, [rotated.secret], "the overlap is over")
    }

    /// `apps credentials rotate-key`: secrets re-sealed under the new operator key.
    func testOperatorKeyRotationResealsSecrets() throws {
        let made = try endpoint()
        let newKey = try SecretBox.generateKey()
        let both = try CredentialKeys(current: newKey, previous: keys.current)
        XCTAssertEqual(try WebhookEndpointStore(connection: conn, keys: both, allowLoopback: false).rotateKey(), 1)
        let sealed = try conn.exec("SELECT secret_sealed FROM push_webhook_endpoints").bytes(0, 0)
        XCTAssertEqual(try WebhookEndpointStore.open(sealed, endpointID: made.endpoint.id,
                                                      keys: try CredentialKeys(current: newKey)), made.secret.key)
        XCTAssertThrowsError(try WebhookEndpointStore.open(sealed, endpointID: made.endpoint.id, keys: keys))
    }

    func testDeleteRemovesItsDeliveriesAndTheEventsNobodyElseWanted() throws {
        let a = try endpoint().endpoint, b = try endpoint().endpoint
        try insertEvents(2)
        try conn.exec("UPDATE push_webhook_endpoints SET event_types = '{push_app.encryption_disabled}' WHERE id = $1", [.uuid(b.id)])
        try insertEvents(1)   // only a wants this one
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_outbox"), 5)
        XCTAssertTrue(try endpoints.delete(id: a.id))
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_outbox"), 2, "b's rows stay")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 2, "the event only a wanted is gone")
        XCTAssertFalse(try endpoints.delete(id: a.id))
    }
}
