import Foundation
import PushCore
import PushCrypto

/// App credential sets over `push_credentials` and, for the SMS provider, `push_sms_credentials`
/// (R-APP-3, R-APP-4, R-SMS-1): stored validated, the secret
/// sealed with `SecretBox` (AES-256-GCM, aad = `<app id>/<kind>`) under `PUSHFLEET_CREDENTIALS_KEY`.
/// One store per connection (not thread-safe). Secrets never appear in errors or descriptions.
public final class CredentialStore {
    public let connection: PGConnection
    /// Nil for a store that only reads states (`states(appID:)` needs no key).
    public let keys: CredentialKeys?

    public init(connection: PGConnection, keys: CredentialKeys?) {
        self.connection = connection
        self.keys = keys
    }

    // MARK: - Writing

    /// Stores (or replaces) a set of `rules.kind` after checking it with `rules` (its provider's
    /// `CredentialRules`, which the caller holding the provider table picks). A replacement resets
    /// the state to `unverified`; the first acceptance time is kept for good (R-APP-3).
    /// - Parameters:
    ///   - config: the identifiers and overrides the rules take (apns: `team_id`, `key_id`,
    ///     `topic` plus overrides; fcm: overrides only, the identifiers are read from the service
    ///     account; webpush `subject`; twilio `account_sid`, `api_key_sid` and `from` or
    ///     `messaging_service_sid`, an app having one SMS provider set, which this replaces).
    ///   - secret: the `.p8` PEM text (apns), the service-account JSON (fcm), the VAPID private key
    ///     PEM (webpush), or the auth token or API key secret (twilio).
    /// - Throws: `VALIDATION_ERROR` (bad set, or no key configured),
    ///   `NOT_FOUND` (no such live app), `PGError`.
    ///   `actor` is recorded in the audit log (`credentials.set`, the kind only) in the transaction.
    @discardableResult
    public func set(appID: UUID, rules: any CredentialRules, config: [String: String], secret: [UInt8],
                    actor: String = AuditStore.unnamedActor) throws -> CredentialSummary {
        let kind = rules.kind
        let stored = try rules.validate(config: config, secret: secret)
        let sealed = try SecretBox.seal(plaintext: secret, key: try requireKeys().current, aad: Self.aad(appID, kind))
        return try connection.transaction { conn in
            let r = try conn.exec(kind.isSMS ? CredentialQueries.smsUpsert : CredentialQueries.upsert, [
                .uuid(appID), .text(kind.rawValue), .text(try Self.json(stored)), .bytea(sealed),
            ])
            guard r.rowCount == 1 else { throw PushError(.notFound, "no push app \(appID.uuidString.lowercased())") }
            try AuditStore(connection: conn).record(accountID: nil, appID: appID, actor: actor, action: .credentialsSet,
                                                    target: PrefixedID.format(.app, appID),
                                                    details: JSONObject([.init("kind", .string(kind.rawValue))]))
            return try Self.summary(r, 0)
        }
    }

    /// Removes a set; returns false when there was none. A removal is recorded in the audit log
    /// with `actor`, in its transaction.
    @discardableResult
    public func remove(appID: UUID, kind: CredentialKind, actor: String = AuditStore.unnamedActor) throws -> Bool {
        try connection.transaction { conn in
            let delete = kind.isSMS ? CredentialQueries.smsDelete : CredentialQueries.delete
            guard try conn.exec(delete, [.uuid(appID), .text(kind.rawValue)]).affectedRowCount == 1 else {
                return false
            }
            try AuditStore(connection: conn).record(accountID: nil, appID: appID, actor: actor, action: .credentialsRemoved,
                                                    target: PrefixedID.format(.app, appID),
                                                    details: JSONObject([.init("kind", .string(kind.rawValue))]))
            return true
        }
    }

    /// Re-seals every set under the current key (opening each with the current or previous key):
    /// the rotation step after `PUSHFLEET_CREDENTIALS_KEY_PREVIOUS` was set to the old key. The
    /// fleet's sealed provider tokens (`push_provider_tokens`) are re-sealed in the same transaction;
    /// one that opens with neither key is deleted (the next worker mints a new one). One transaction.
    /// - Returns: the number of sets re-sealed.
    /// - Throws: `CREDENTIALS_INVALID` when a set opens with neither key (nothing is changed), `PGError`.
    public func rotateKey() throws -> Int {
        let keys = try requireKeys()
        return try connection.transaction { conn in
            var n = 0
            for (all, reseal) in [(CredentialQueries.all, CredentialQueries.reseal),
                                  (CredentialQueries.smsAll, CredentialQueries.smsReseal)] {
                let r = try conn.exec(all)
                for i in r.rows {
                    let s = try Self.summary(r, i)
                    let secret = try open(try r.bytes(i, "sealed_secret"), summary: s)
                    let sealed = try SecretBox.seal(plaintext: secret, key: keys.current, aad: Self.aad(s.appID, s.kind))
                    _ = try conn.exec(reseal, [.uuid(s.appID), .text(s.kind.rawValue), .bytea(sealed)])
                }
                n += r.rowCount
            }
            _ = try ProviderTokenStore.resealAll(conn, keys: keys)
            return n
        }
    }

    // MARK: - Reading

    /// The app's sets without secrets (its SMS provider's too), ordered by kind (the planner's input
    /// and `credentials show`).
    public func states(appID: UUID) throws -> [CredentialSummary] {
        let r = try connection.exec(CredentialQueries.byApp, [.uuid(appID)])
        return try r.rows.map { try Self.summary(r, $0) }
    }

    /// The app's sets with their secrets opened, for the worker's provider clients.
    /// - Throws: `CREDENTIALS_INVALID` naming the set when it opens with neither key; `VALIDATION_ERROR`
    ///   without a key; `PGError`.
    public func load(appID: UUID) throws -> [CredentialSet] {
        let r = try connection.exec(CredentialQueries.byApp, [.uuid(appID)])
        return try r.rows.map { i in
            let s = try Self.summary(r, i)
            return CredentialSet(summary: s, secret: try open(try r.bytes(i, "sealed_secret"), summary: s))
        }
    }

    // MARK: - Helpers

    private func requireKeys() throws -> CredentialKeys {
        guard let keys else { throw PushError(.validationError, "\(CredentialKeys.currentVariable) is not set") }
        return keys
    }

    private func open(_ box: [UInt8], summary s: CredentialSummary) throws -> [UInt8] {
        let keys = try requireKeys()
        if let plain = keys.open(box, aad: Self.aad(s.appID, s.kind)) { return plain }
        throw PushError(.credentialsInvalid, "the \(s.kind.rawValue) set of app \(s.appID.uuidString.lowercased()) opens with neither \(CredentialKeys.currentVariable) nor \(CredentialKeys.previousVariable)")
    }

    /// Associated data binding a box to its row: `<app id lower-case>/<kind>`.
    static func aad(_ appID: UUID, _ kind: CredentialKind) -> [UInt8] {
        Array("\(appID.uuidString.lowercased())/\(kind.rawValue)".utf8)
    }

    static func json(_ config: [String: String]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    static func summary(_ r: PGResult, _ i: Int) throws -> CredentialSummary {
        let configText = try r.string(i, "config")
        let object = (try? JSONSerialization.jsonObject(with: Data(configText.utf8))) as? [String: Any] ?? [:]
        var identifiers: [String: String] = [:]
        for (k, v) in object { if let s = v as? String { identifiers[k] = s } }
        let kind = CredentialKind(rawValue: try r.string(i, "kind"))
        guard let state = CredentialState(rawValue: try r.string(i, "state")) else {
            throw PGError(code: .decode, message: "unknown credential state")
        }
        return CredentialSummary(appID: try r.uuid(i, "app_id"), kind: kind, state: state,
                                 firstAcceptedAt: try r.decode(i, "first_accepted_at"),
                                 invalidReason: try r.decode(i, "invalid_reason"), updatedAt: try r.date(i, "updated_at"),
                                 identifiers: identifiers, version: try r.string(i, "version"),
                                 keyVersion: try r.int(i, "key_version"))
    }
}

/// Credential sets on PostgreSQL for the live router: its own connection (opened again after a
/// failure: a failed read is retried once on a fresh connection), secrets opened with `keys`.
public final class PGCredentialSource: CredentialSource, @unchecked Sendable {
    private let keys: CredentialKeys?
    private let openConnection: () throws -> PGConnection
    private let lock = NSLock()
    private var connection: PGConnection?

    /// - Parameters:
    ///   - keys: sealing keys; nil = no secret opens.
    ///   - openConnection: opens the source's own connection.
    public init(keys: CredentialKeys?, openConnection: @escaping () throws -> PGConnection) {
        self.keys = keys
        self.openConnection = openConnection
    }

    public var canOpenSecrets: Bool { keys != nil }

    public func states(appID: UUID) throws -> [CredentialSummary] { try read { try $0.states(appID: appID) } }

    public func load(appID: UUID) throws -> [CredentialSet] { try read { try $0.load(appID: appID) } }

    private func read<T>(_ body: (CredentialStore) throws -> T) throws -> T {
        try lock.withLock {
            do {
                return try body(CredentialStore(connection: try ensureConnection(), keys: keys))
            } catch is PGError {
                connection = nil
                return try body(CredentialStore(connection: try ensureConnection(), keys: keys))
            }
        }
    }

    private func ensureConnection() throws -> PGConnection {
        if let c = connection, c.isHealthy { return c }
        let c = try openConnection()
        connection = c
        return c
    }
}
