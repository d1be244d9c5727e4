import Foundation
import PushCore

/// An account (R-API-1): it owns apps and API keys.
public struct Account: Sendable, Codable, Equatable {
    /// The account id (`pacc_` + hex in the API and the CLI's output).
    public var id: UUID
    /// A name for people.
    public var name: String
    /// The account of apps made before accounts existed (sql/0008).
    public var isDefault: Bool
    /// When it was created.
    public var createdAt: Date
}

/// An API key as stored: never the key itself, only its display prefix (R-API-3).
public struct APIKeyRecord: Sendable, Codable, Equatable {
    /// The key's id (`pkey_` + hex), used to revoke it.
    public var id: UUID
    /// The owning account.
    public var accountID: UUID
    /// `test` or `live`: the mode of every request made with it (R-MODE-1).
    public var mode: String
    /// An optional name for people.
    public var name: String?
    /// The first characters of the key (`APIKeyFormat.displayPrefix`).
    public var prefix: String
    /// Canonical permissions text (R-API-2).
    public var permissions: String
    /// Requests per second across every replica.
    public var rateLimitPerSecond: Int
    /// When it was created.
    public var createdAt: Date
    /// When it was revoked, nil while it works.
    public var revokedAt: Date?
    /// The apps it is limited to (issue 15 part 3); nil: every app of its account.
    public var appIDs: [UUID]?
}

/// Who a request's key says it is: one row read per request, so a revocation is seen by every
/// replica on its next request (R-API-3).
public struct APIPrincipal: Sendable, Equatable {
    /// The key's id.
    public var keyID: UUID
    /// The key's account.
    public var accountID: UUID
    /// The request's mode (R-MODE-1).
    public var mode: Mode
    /// Granted permissions (R-API-2).
    public var permissions: APIPermissions
    /// Requests per second across every replica.
    public var rateLimitPerSecond: Int
    /// True once revoked (the request is refused).
    public var revoked: Bool
    /// When the request named an app: whether it is the key's account's (and not deleted), and
    /// one of `appIDs` when the key is scoped; nil when no app was named.
    public var appOwned: Bool?
    /// The apps the credential is limited to (issue 15 part 3); nil: every app of the account.
    /// Every read is scoped to them in SQL, and any other app answers 404 like a missing one.
    public var appIDs: [UUID]? = nil
    /// Who made the request, for the audit log: the key's display prefix, or `oauth:` and the
    /// access token's subject (issue 15 parts 1 and 5).
    public var actor: String = ""

    /// Makes a principal.
    public init(keyID: UUID, accountID: UUID, mode: Mode, permissions: APIPermissions, rateLimitPerSecond: Int,
                revoked: Bool, appOwned: Bool?, appIDs: [UUID]? = nil, actor: String = "") {
        self.keyID = keyID
        self.accountID = accountID
        self.mode = mode
        self.permissions = permissions
        self.rateLimitPerSecond = rateLimitPerSecond
        self.revoked = revoked
        self.appOwned = appOwned
        self.appIDs = appIDs
        self.actor = actor
    }

    /// True when the credential may see `app` (its account's ownership is checked in SQL).
    public func mayUse(app: UUID) -> Bool { appIDs.map { $0.contains(app) } ?? true }
}

/// Accounts and API keys (sql/0008, SQL in `AccountQueries`). Keys are generated here, shown
/// once, and stored as their SHA-256 with a display prefix.
public final class AccountStore {
    /// The session every call runs on.
    public let connection: PGConnection

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// Creates an account. - Throws: `PushError` `VALIDATION_ERROR` for a name that is not 1 to 200
    /// characters; `PGError` otherwise.
    public func createAccount(name: String) throws -> Account {
        try Self.checkName(name)
        return try Self.account(connection.exec(AccountQueries.accountCreate, [.text(name)]), 0)
    }

    /// An account's or a key's name: 1 to 200 characters, without NUL (else `VALIDATION_ERROR`).
    private static func checkName(_ name: String) throws {
        guard !name.isEmpty, name.unicodeScalars.count <= 200, !name.unicodeScalars.contains("\u{0}") else {
            throw PushError(.validationError, "name: must be 1 to 200 characters, without NUL")
        }
    }

    /// The account, or nil.
    public func account(id: UUID) throws -> Account? {
        let r = try connection.exec(AccountQueries.accountGet, [.uuid(id)])
        return r.rowCount == 0 ? nil : try Self.account(r, 0)
    }

    /// Generates a key of `mode` for `accountID` and stores its hash (R-API-3). With `appIDs` the
    /// key is limited to those apps of the account (issue 15 part 3; duplicates are dropped).
    /// - Returns: the key text (shown once, never stored) and its record.
    /// - Throws: `PushError` `NOT_FOUND` for an unknown account or an app that is not the
    ///   account's, `VALIDATION_ERROR` for a rate outside 1...1,000,000, a bad name, or an app list
    ///   empty or over 100; `PGError` otherwise.
    ///   `actor` is recorded in the audit log with the key's creation, in its transaction.
    public func issueKey(accountID: UUID, mode: Mode, permissions: APIPermissions, name: String? = nil,
                         rateLimitPerSecond: Int? = nil, appIDs: [UUID]? = nil,
                         actor: String = AuditStore.unnamedActor) throws -> (key: String, record: APIKeyRecord) {
        var apps: [UUID]?
        if let appIDs {
            var seen = Set<UUID>()
            let unique = appIDs.filter { seen.insert($0).inserted }
            guard (1...Self.maxScopedApps).contains(unique.count) else {
                throw PushError(.validationError, "apps: give 1 to \(Self.maxScopedApps) app ids", field: "apps")
            }
            let r = try connection.exec(AccountQueries.ownedApps, [.uuidArray(unique), .uuid(accountID)])
            let owned = Set(try r.rows.map { try r.uuid($0, "id") })
            if let missing = unique.first(where: { !owned.contains($0) }) {
                throw PushError(.notFound, "apps: no push app \(PrefixedID.format(.app, missing)) in account \(PrefixedID.format(.account, accountID))",
                                field: "apps")
            }
            apps = unique
        }
        if let rate = rateLimitPerSecond, !(1...1_000_000).contains(rate) {
            throw PushError(.validationError, "rate_limit: must be 1 to 1000000 requests per second")
        }
        if let name { try Self.checkName(name) }
        guard !permissions.grants.isEmpty else { throw PushError(.validationError, "permissions: grant at least one") }
        var generator = SystemRandomNumberGenerator()
        let key = APIKeyFormat.generate(mode: mode, using: &generator)
        let hash = try APIKeyFormat.hash(key)
        let record = try connection.transaction { conn -> APIKeyRecord in
            let r = try conn.exec(AccountQueries.keyCreate, [
                .uuid(accountID), .text(mode.rawValue), name.map(PGValue.text), .bytea(hash),
                .text(APIKeyFormat.displayPrefix(key)), .text(permissions.text), rateLimitPerSecond.map(PGValue.int),
                apps.map { .uuidArray($0) },
            ])
            guard r.rowCount == 1 else { throw PushError(.notFound, "no account \(PrefixedID.format(.account, accountID))") }
            let record = try Self.key(r, 0)
            var details: [JSONObject.Member] = [
                .init("mode", .string(mode.rawValue)), .init("permissions", .string(record.permissions)),
                .init("prefix", .string(record.prefix)),
            ]
            if let apps { details.append(.init("app_ids", .array(apps.map { .string(PrefixedID.format(.app, $0)) }))) }
            try AuditStore(connection: conn).record(accountID: accountID, appID: nil, actor: actor, action: .keyCreated,
                                                    target: PrefixedID.format(.apiKey, record.id), details: JSONObject(details))
            return record
        }
        return (key, record)
    }

    /// The most apps one key may be limited to (the column's CHECK, sql/0015).
    public static let maxScopedApps = 100

    /// The account's keys, oldest first (never the key text).
    public func listKeys(accountID: UUID) throws -> [APIKeyRecord] {
        let r = try connection.exec(AccountQueries.keyList, [.uuid(accountID)])
        return try r.rows.map { try Self.key(r, $0) }
    }

    /// Revokes a key (idempotent: the first revocation time is kept); nil for an unknown key. The
    /// first revocation is recorded in the audit log with `actor`, in its transaction.
    public func revokeKey(id: UUID, actor: String = AuditStore.unnamedActor) throws -> APIKeyRecord? {
        try connection.transaction { conn -> APIKeyRecord? in
            let before = try conn.exec(AccountQueries.keyLockForRevoke, [.uuid(id)])
            guard before.rowCount == 1 else { return nil }
            let wasLive = try before.isNull(0, "revoked_at")
            let r = try conn.exec(AccountQueries.keyRevoke, [.uuid(id)])
            guard r.rowCount == 1 else { return nil }
            let record = try Self.key(r, 0)
            if wasLive {
                try AuditStore(connection: conn).record(
                    accountID: record.accountID, appID: nil, actor: actor, action: .keyRevoked,
                    target: PrefixedID.format(.apiKey, record.id),
                    details: JSONObject([.init("mode", .string(record.mode)), .init("prefix", .string(record.prefix))]))
            }
            return record
        }
    }

    /// The principal of the key whose SHA-256 is `keyHash`, or nil for an unknown key; with
    /// `appID`, whether that app is the key's account's. One prepared statement, one round trip.
    /// - Throws: `PGError` on database failure (a stored permission text this build cannot read
    ///   is `DB_DECODE`).
    public func authenticate(keyHash: [UInt8], appID: UUID?) throws -> APIPrincipal? {
        let r = try connection.execPrepared(name: "pushfleet_api_authenticate", sql: AccountQueries.authenticate,
                                            params: [.bytea(keyHash), appID.map(PGValue.uuid)])
        var p = try Self.principal(r)
        if p != nil { p?.appOwned = try r.decode(0, "app_owned") }
        return p
    }

    /// The principal in row 0 of `r` (columns `key_id`, `key_account_id`, `key_mode`,
    /// `key_permissions`, `key_rate_limit`, `key_revoked`, `key_app_ids`); nil when `r` has no row.
    static func principal(_ r: PGResult) throws -> APIPrincipal? {
        guard r.rowCount > 0 else { return nil }
        guard let mode = Mode(rawValue: try r.string(0, "key_mode")),
              let permissions = Self.permissions(try r.string(0, "key_permissions")) else {
            throw PGError(code: .decode, message: "push_api_keys row has a mode or permissions this build cannot read")
        }
        let apps: String? = try r.decode(0, "key_app_ids")
        return APIPrincipal(keyID: try r.uuid(0, "key_id"), accountID: try r.uuid(0, "key_account_id"), mode: mode,
                            permissions: permissions, rateLimitPerSecond: try r.int(0, "key_rate_limit"),
                            revoked: try r.bool(0, "key_revoked"), appOwned: nil,
                            appIDs: try apps.map(PGArrayText.uuids))
    }

    /// Whether `appID` is the account's (and one of `appIDs` when given) and not deleted: the app
    /// check of a request whose credential is not a stored key (an OAuth access token).
    public func appOwned(appID: UUID, accountID: UUID, appIDs: [UUID]?) throws -> Bool {
        let r = try connection.execPrepared(name: "pushfleet_api_app_owned", sql: AccountQueries.appOwned,
                                            params: [.uuid(appID), .uuid(accountID), appIDs.map { .uuidArray($0) }])
        return try r.bool(0, "app_owned")
    }

    /// Refuses an app that is not a live app of the account within `appIDs` (when given): the one
    /// check the stores answering an app filter make, for the CLI and the API alike (R-API-1: another
    /// account's app is answered as a missing one).
    /// - Throws: `PushError` `NOT_FOUND` (field `app_id`); `PGError`.
    public func requireOwnedApp(_ appID: UUID, accountID: UUID, appIDs: [UUID]?) throws {
        guard try appOwned(appID: appID, accountID: accountID, appIDs: appIDs) else {
            throw PushError(.notFound, "no such push app", field: "app_id")
        }
    }

    /// Takes up to `want` tokens from the key's shared bucket (`push_api_take_tokens`, sql/0008).
    /// - Returns: the tokens granted and, when none, the seconds until the next one.
    public func takeTokens(keyID: UUID, want: Int, ratePerSecond: Double, burst: Double) throws
        -> (granted: Int, retryAfterSeconds: Double) {
        let r = try connection.execPrepared(name: "pushfleet_api_take_tokens", sql: AccountQueries.takeTokens,
                                            params: [.uuid(keyID), .int(want), .double(ratePerSecond), .double(burst)])
        return (try r.int(0, "granted"), try r.double(0, "retry_after_seconds"))
    }

    /// Parsed permission texts: a handful of distinct ones, read on every request.
    private static let permissionCache = PermissionCache()

    private static func permissions(_ text: String) -> APIPermissions? { permissionCache.get(text) }

    private static func account(_ r: PGResult, _ i: Int) throws -> Account {
        Account(id: try r.uuid(i, "id"), name: try r.string(i, "name"), isDefault: try r.bool(i, "is_default"),
                createdAt: try r.date(i, "created_at"))
    }

    private static func key(_ r: PGResult, _ i: Int) throws -> APIKeyRecord {
        APIKeyRecord(id: try r.uuid(i, "id"), accountID: try r.uuid(i, "account_id"), mode: try r.string(i, "mode"),
                     name: try r.decode(i, "name"), prefix: try r.string(i, "key_prefix"),
                     permissions: try r.string(i, "permissions"),
                     rateLimitPerSecond: try r.int(i, "rate_limit_per_second"),
                     createdAt: try r.date(i, "created_at"), revokedAt: try r.decode(i, "revoked_at"),
                     appIDs: try (r.decode(i, "app_ids") as String?).map(PGArrayText.uuids))
    }
}

/// Permission texts parsed once (bounded: cleared past 1,024 distinct texts).
final class PermissionCache: @unchecked Sendable {
    private let lock = NSLock()
    private var parsed: [String: APIPermissions] = [:]

    func get(_ text: String) -> APIPermissions? {
        if let p = lock.withLock({ parsed[text] }) { return p }
        guard let p = try? APIPermissions(parsing: text) else { return nil }
        lock.withLock {
            if parsed.count >= 1_024 { parsed.removeAll() }
            parsed[text] = p
        }
        return p
    }
}
