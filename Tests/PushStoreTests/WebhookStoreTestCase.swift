import Foundation
import XCTest
import PushCore
import PushCrypto
import PushTestSupport
@testable import PushStore

/// Base for the webhook store tests: a fresh migrated database, one app, an operator key, and
/// helpers that write events the way the SQL functions do (`INSERT INTO push_events`).
class WebhookStoreTestCase: PGTestCase {
    var appID: UUID!
    var keys: CredentialKeys!
    var endpoints: WebhookEndpointStore!

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, directory: RepoPaths.sqlDirectory).migrate()
        appID = try AppStore(connection: conn).appCreate(name: "hooks").id
        keys = try CredentialKeys(current: try SecretBox.generateKey())
        endpoints = WebhookEndpointStore(connection: conn, keys: keys, allowLoopback: false)
    }

    override func tearDownWithError() throws {
        endpoints = nil
        try super.tearDownWithError()
    }

    /// A test-mode endpoint (https, public name) receiving `types` (default set when nil).
    @discardableResult
    func endpoint(_ mode: Mode = .test, types: [String]? = nil, app: UUID? = nil,
                  path: String = UUID().uuidString) throws -> WebhookEndpointWithSecret {
        try endpoints.create(appID: app ?? appID, mode: mode, url: "https://hooks.example.com/\(path)", eventTypes: types)
    }

    /// Inserts `count` `push_device.deactivated` events of `mode` for the app, as sql/0002 does.
    func insertEvents(_ count: Int, mode: Mode = .test, type: String = "push_device.deactivated", app: UUID? = nil) throws {
        try conn.exec("""
            INSERT INTO push_events (app_id, type, payload)
            SELECT $1::uuid, $2::text, jsonb_build_object('device_id', gen_random_uuid(), 'user_id', 'u' || g,
                                                          'mode', $3::text, 'reason', 'UNREGISTERED')
              FROM generate_series(1, $4::int) g
            """, [.uuid(app ?? appID), .text(type), .text(mode.rawValue), .int(count)])
    }

    func count(_ sql: String, _ params: [PGValue?] = []) throws -> Int {
        try conn.exec(sql, params).int(0, 0)
    }

    /// Outbox rows of `endpoint` in `state`.
    func rows(_ endpoint: UUID, _ state: String) throws -> Int {
        try count("SELECT count(*)::int FROM push_outbox WHERE fair_key = $1 AND state = $2", [.uuid(endpoint), .text(state)])
    }

    /// A record of `d` ending in `state`.
    func record(_ d: WebhookDelivery, _ state: WebhookAttemptRecord.State, error: String? = nil, status: Int? = 200,
                at: Date = Date(), counts: Bool = true) -> WebhookAttemptRecord {
        WebhookAttemptRecord(outboxID: d.outboxID, leaseToken: d.leaseToken, state: state, error: error, statusCode: status,
                             attemptedAt: at, durationMillis: 3, response: "ok", countsAsEndpointFailure: counts)
    }

    func dispatch(_ c: PGConnection? = nil) -> WebhookDispatchStore { WebhookDispatchStore(connection: c ?? conn, keys: keys) }
}
