import Foundation
import PushProviders
import PushStore

/// A `ProviderTokenCache` shared by every worker process through `push_provider_tokens`
/// (one APNs JWT per signing key for the whole fleet: Apple's "Establishing a token-based connection to APNs"). Each call is one transaction
/// holding `pg_advisory_xact_lock(hashtext(key))`: the first caller of a stale key mints while the
/// others wait, then read what it stored. A token the provider rejected (`replaceToken`, after
/// `ExpiredProviderToken`) is replaced at once by the first caller that still finds it stored; the
/// others get that replacement, so the fleet mints exactly one. Tokens are stored sealed under the
/// credentials key (`ProviderTokenStore`, sql/0007), never in clear.
///
/// The cache has its own connection (opened lazily, reopened after a failure). When the database
/// cannot be reached the cache falls back to a process-local one, so sending goes on with a token
/// of this process (a warning is logged; no token text ever is).
public final class PGProviderTokenCache: ProviderTokenCache, @unchecked Sendable {
    private let openConnection: () throws -> PGConnection
    private let keys: CredentialKeys
    private let lock = NSLock()
    private var store: ProviderTokenStore?
    private let fallback = InMemoryProviderTokenCache()
    private let log: Log

    /// - Parameters:
    ///   - keys: seal stored tokens with `current`, open them with `current` or `previous`.
    ///   - openConnection: opens a dedicated connection (called again after a failure).
    public init(keys: CredentialKeys, log: Log = .shared, openConnection: @escaping () throws -> PGConnection) {
        self.keys = keys
        self.openConnection = openConnection
        self.log = log
    }

    /// Returns the stored token unless stale (`now >= refreshAt`, or issued more than 60 s in the
    /// future); otherwise mints once under the key's lock and stores it.
    /// - Throws: whatever `mint` throws.
    public func currentToken(for key: String, now: Int64, mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        try locked(key: key, fallback: { try fallback.currentToken(for: key, now: now, mint: mint) }) { stored in
            if let s = stored, now < s.expiresAt, now >= s.issuedAt - 60 { return s }
            return Self.row(try mint(now))
        }
    }

    /// Replaces `rejected` at once if it is still the stored token (whatever its age); otherwise
    /// returns what is stored. Logs `provider_token.replaced` with `minted` (true for the one caller
    /// of the fleet that made the replacement).
    /// - Throws: whatever `mint` throws.
    public func replaceToken(for key: String, rejected: String, now: Int64,
                             mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        var minted = false
        let token = try locked(key: key, fallback: {
            try fallback.replaceToken(for: key, rejected: rejected, now: now) { now in
                minted = true
                return try mint(now)
            }
        }) { stored in
            if let s = stored, s.token != rejected { return s }
            minted = true
            return Self.row(try mint(now))
        }
        log.info("provider_token.replaced", ["cache_key": key, "minted": minted, "issued_at": token.issuedAt])
        return token
    }

    private func locked(key: String, fallback: () throws -> ProviderToken,
                        _ decide: (StoredProviderToken?) throws -> StoredProviderToken) throws -> ProviderToken {
        lock.lock()
        defer { lock.unlock() }
        do {
            let current: ProviderTokenStore
            if let s = store, s.connection.isHealthy {
                current = s
            } else {
                current = ProviderTokenStore(connection: try openConnection(), keys: keys)
                store = current
            }
            let chosen = try current.withLockedToken(key: key, decide)
            return ProviderToken(value: chosen.token, issuedAt: chosen.issuedAt, refreshAt: chosen.expiresAt)
        } catch let e as PGError {
            store = nil
            log.warn("provider_token.db_unavailable", ["cache_key": key, "error": String(describing: e.code)])
            return try fallback()
        }
    }

    private static func row(_ t: ProviderToken) -> StoredProviderToken {
        StoredProviderToken(token: t.value, issuedAt: t.issuedAt, expiresAt: t.refreshAt)
    }
}
