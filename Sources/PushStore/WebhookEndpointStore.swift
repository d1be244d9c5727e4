import Foundation
import PushCore
import PushCrypto

/// Webhook endpoint management (issue 19), the one library behind every door: the CLI
/// (`pushfleet webhooks ...`) and the HTTP API (`/v1/push/webhook_endpoints`) only parse input
/// and print what these calls return. Validation is `WebhookEndpointRules` (PushCore); secrets are
/// made here (`WebhookSecret.generate`), returned once, and stored sealed with `SecretBox`
/// (AES-256-GCM, aad `<endpoint id>/webhook`) under `PUSHFLEET_CREDENTIALS_KEY`, like credential
/// sets. Calls that take `mode` treat an endpoint of the other mode as absent (R-MODE-1: a test
/// key sees only test endpoints). One store per connection (not thread-safe).
///
/// Errors: `PushError` `VALIDATION_ERROR` (bad URL or type, limit reached, no operator key),
/// `NOT_FOUND` (no such app or event), and `PGError` for database failures.
public final class WebhookEndpointStore {
    /// Environment variable: `1` admits loopback endpoint URLs (and `http://` to them in test
    /// mode), for local testing only; read by the CLI and the worker alike.
    public static let allowLoopbackVariable = "PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK"
    /// How long the previous secret keeps signing after a rotation (24 h).
    public static let rotationOverlap: TimeInterval = 86_400

    /// The session every call runs on.
    public let connection: PGConnection
    /// The operator key; nil for a store that only reads (creation and rotation need it).
    public let keys: CredentialKeys?
    /// Admit loopback URLs (`allowLoopbackVariable`).
    public let allowLoopback: Bool

    /// - Parameters:
    ///   - keys: `CredentialKeys.fromEnvironment()`; nil when only reading.
    ///   - allowLoopback: default: `allowLoopbackVariable` is `1` in the environment.
    public init(connection: PGConnection, keys: CredentialKeys?,
                allowLoopback: Bool = WebhookEndpointStore.allowLoopback(ProcessInfo.processInfo.environment)) {
        self.connection = connection
        self.keys = keys
        self.allowLoopback = allowLoopback
    }

    /// True when `env` sets `allowLoopbackVariable` to `1`.
    public static func allowLoopback(_ env: [String: String]) -> Bool { env[allowLoopbackVariable] == "1" }

    // MARK: - Writing

    /// Creates an endpoint of `appID` and `mode` for `url`, receiving `eventTypes` (nil or empty:
    /// every type but the opt-in ones). Returns it with its secret, shown this once.
    public func create(appID: UUID, mode: Mode, url: String, eventTypes: [String]?) throws -> WebhookEndpointWithSecret {
        try WebhookEndpointRules.validateURL(url, mode: mode, allowLoopback: allowLoopback)
        let types = try WebhookEndpointRules.eventTypes(eventTypes).map(\.rawValue)
        let id = UUID()
        let secret = try WebhookSecret.generate()
        let r = try domain {
            try connection.exec(WebhookQueries.endpointCreate, [
                .uuid(id), .uuid(appID), .text(mode.rawValue), .text(url), .textArray(types),
                .bytea(try seal(secret, endpointID: id)), .int(WebhookEndpointRules.maximumEndpointsPerAppAndMode),
            ])
        }
        return WebhookEndpointWithSecret(endpoint: try WebhookEndpoint.decode(r, 0), secret: secret)
    }

    /// Changes the URL and/or the event types (nil keeps each) and/or enables or disables the
    /// endpoint. Disabling fails its pending deliveries (they can be sent again with `resend`);
    /// enabling restarts the 5-day clock. Returns nil for an unknown endpoint (or one of another mode).
    public func update(id: UUID, mode: Mode? = nil, url: String? = nil, eventTypes: [String]? = nil,
                       enabled: Bool? = nil) throws -> WebhookEndpoint? {
        guard var endpoint = try get(id: id, mode: mode) else { return nil }
        if let url { try WebhookEndpointRules.validateURL(url, mode: endpoint.mode, allowLoopback: allowLoopback) }
        let types = try eventTypes.map { try WebhookEndpointRules.eventTypes($0).map(\.rawValue) }
        if url != nil || types != nil {
            let r = try connection.exec(WebhookQueries.endpointUpdate, [.uuid(id), url.map(PGValue.text), types.map(PGValue.textArray)])
            guard r.rowCount == 1 else { return nil }
            endpoint = try WebhookEndpoint.decode(r, 0)
        }
        if let enabled, enabled != endpoint.enabled {
            let r = try connection.exec(WebhookQueries.endpointSetEnabled, [
                .uuid(id), .bool(enabled), .text(WebhookDisableReason.manual.rawValue),
            ])
            guard try r.bool(0, "found") else { return nil }
            return try get(id: id)   // read after the change: its pending count changed with it
        }
        return endpoint
    }

    /// Deletes the endpoint with its pending deliveries and attempt log. False when unknown.
    public func delete(id: UUID, mode: Mode? = nil) throws -> Bool {
        guard try get(id: id, mode: mode) != nil else { return false }
        return try connection.exec(WebhookQueries.endpointDelete, [.uuid(id)]).bool(0, "deleted")
    }

    /// A new secret: it signs from now on, and the previous one keeps signing too for
    /// `rotationOverlap` (24 h), so receivers can switch without losing an event. A rotation
    /// within the overlap replaces the older previous secret. Returns nil for an unknown endpoint.
    public func rotateSecret(id: UUID, mode: Mode? = nil, now: Date = Date()) throws -> WebhookEndpointWithSecret? {
        guard try get(id: id, mode: mode) != nil else { return nil }
        let secret = try WebhookSecret.generate()
        let r = try connection.exec(WebhookQueries.endpointRotate, [
            .uuid(id), .bytea(try seal(secret, endpointID: id)), .date(now.addingTimeInterval(Self.rotationOverlap)),
        ])
        guard r.rowCount == 1 else { return nil }
        return WebhookEndpointWithSecret(endpoint: try WebhookEndpoint.decode(r, 0), secret: secret)
    }

    /// Queues event `eventID` (its public id) again, with the same `webhook-id`: to `endpointID`
    /// (any enabled endpoint of the event's app and mode), or when nil to every enabled endpoint
    /// whose delivery of it is final. Returns the deliveries queued (0: all still pending).
    public func resend(eventID: UUID, endpointID: UUID? = nil) throws -> Int {
        try domain { try connection.exec(WebhookQueries.resend, [.uuid(eventID), endpointID.map(PGValue.uuid)]) }
            .int(0, "queued")
    }

    /// Re-seals every endpoint's secrets under the current operator key, opening each with the
    /// current or previous one: the webhook half of `pushfleet apps credentials rotate-key`.
    /// One transaction. - Returns: the endpoints re-sealed.
    /// - Throws: `CREDENTIALS_INVALID` when a secret opens with neither key (nothing changes).
    public func rotateKey() throws -> Int {
        let keys = try requireKeys()
        return try connection.transaction { conn in
            let r = try conn.exec(WebhookQueries.endpointSecretsForUpdate)
            for i in r.rows {
                let id = try r.uuid(i, "id")
                let current = try Self.open(try r.bytes(i, "secret_sealed"), endpointID: id, keys: keys)
                let previous = try (try r.decode(i, "previous_secret_sealed") as [UInt8]?).map {
                    try Self.open($0, endpointID: id, keys: keys)
                }
                _ = try conn.exec(WebhookQueries.endpointReseal, [
                    .uuid(id), .bytea(try Self.seal(current, endpointID: id, key: keys.current)),
                    try previous.map { .bytea(try Self.seal($0, endpointID: id, key: keys.current)) },
                ])
            }
            return r.rowCount
        }
    }

    // MARK: - Reading

    /// The app's endpoints, of `mode` or both, oldest first.
    public func list(appID: UUID, mode: Mode? = nil) throws -> [WebhookEndpoint] {
        let r = try connection.exec(WebhookQueries.endpointList, [.uuid(appID), mode.map { .text($0.rawValue) }])
        return try r.rows.map { try WebhookEndpoint.decode(r, $0) }
    }

    /// One endpoint, or nil (also when `mode` is given and it is the other mode's).
    public func get(id: UUID, mode: Mode? = nil) throws -> WebhookEndpoint? {
        let r = try connection.exec(WebhookQueries.endpointGet, [.uuid(id)])
        guard r.rowCount == 1 else { return nil }
        let endpoint = try WebhookEndpoint.decode(r, 0)
        if let mode, endpoint.mode != mode { return nil }
        return endpoint
    }

    /// The last `limit` (1...1000) recorded attempts of one endpoint, one event (public id), or
    /// one app's endpoints, newest first. - Throws: `VALIDATION_ERROR` without any of the three.
    public func attempts(endpointID: UUID? = nil, eventID: UUID? = nil, appID: UUID? = nil,
                         limit: Int = 50) throws -> [WebhookAttemptInfo] {
        guard endpointID != nil || eventID != nil || appID != nil else {
            throw PushError(.validationError, "attempts: name an endpoint, an event or an app")
        }
        let r = try connection.exec(WebhookQueries.attempts, [
            endpointID.map(PGValue.uuid), eventID.map(PGValue.uuid), appID.map(PGValue.uuid),
            .int(min(max(limit, 1), 1000)),
        ])
        return try r.rows.map { i in
            let endpoint = try r.uuid(i, "endpoint_id"), event = try r.uuid(i, "public_id")
            return WebhookAttemptInfo(
                attemptedAt: try r.date(i, "attempted_at"), attempt: try r.int(i, "attempt"), endpointID: endpoint,
                eventID: event, eventType: try r.string(i, "type"), result: try r.string(i, "result"),
                statusCode: try r.decode(i, "status_code"), error: try r.decode(i, "error"),
                durationMillis: try r.decode(i, "duration_ms"), response: try r.decode(i, "response"),
                webhookID: try WebhookSignature.messageID(eventID: event, endpointID: endpoint))
        }
    }

    // MARK: - Secrets

    private func requireKeys() throws -> CredentialKeys {
        guard let keys else {
            throw PushError(.validationError, "\(CredentialKeys.currentVariable) is not set: webhook secrets are sealed with it")
        }
        return keys
    }

    private func seal(_ secret: WebhookSecret, endpointID: UUID) throws -> [UInt8] {
        try Self.seal(secret.key, endpointID: endpointID, key: try requireKeys().current)
    }

    static func seal(_ plain: [UInt8], endpointID: UUID, key: [UInt8]) throws -> [UInt8] {
        try SecretBox.seal(plaintext: plain, key: key, aad: aad(endpointID))
    }

    /// Opens a sealed secret with the current or the previous operator key.
    /// - Throws: `CREDENTIALS_INVALID` when neither opens it.
    static func open(_ box: [UInt8], endpointID: UUID, keys: CredentialKeys) throws -> [UInt8] {
        if let plain = keys.open(box, aad: aad(endpointID)) { return plain }
        throw PushError(.credentialsInvalid, "the secret of webhook endpoint \(endpointID.uuidString.lowercased()) opens with neither \(CredentialKeys.currentVariable) nor \(CredentialKeys.previousVariable)")
    }

    /// `<endpoint id lower-case>/webhook`: binds a box to its row.
    static func aad(_ endpointID: UUID) -> [UInt8] { Array("\(endpointID.uuidString.lowercased())/webhook".utf8) }

    /// Runs `body`, turning the SQL functions' coded errors (`NOT_FOUND: ...`) into `PushError`.
    private func domain<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as PGError {
            if let d = DeviceRegistry.domainError(e) { throw d }
            throw e
        }
    }
}
