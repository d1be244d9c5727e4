import Foundation
import PushProviders
import PushStore

/// A `ProviderTokenCache` shared by every worker process through `push_provider_tokens`
/// (one APNs JWT per key for the whole fleet, refreshed at most every 20 minutes: Apple's
/// "Establishing a token-based connection to APNs").
/// Each call is one transaction holding `pg_advisory_xact_lock(hashtext(key))`: the first caller of
/// a stale key mints while the others wait, then read what it stored.
///
/// The cache has its own connection (opened lazily, reopened after a failure). When the database
/// cannot be reached the cache falls back to a process-local one, so sending goes on with a token
/// of this process (a warning is logged; no token text ever is).
public final class PGProviderTokenCache: ProviderTokenCache, @unchecked Sendable {
    private let openConnection: () throws -> PGConnection
    private let lock = NSLock()
    private var store: ProviderTokenStore?
    private let fallback = InMemoryProviderTokenCache()
    private let log: Log

    /// - Parameter openConnection: opens a dedicated connection (called again after a failure).
    public init(log: Log = .shared, openConnection: @escaping () throws -> PGConnection) {
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

    /// Replaces `rejected` only if it is still the stored token and at least `minimumAgeSeconds` old
    /// (the 20-minute floor for APNs); otherwise returns what is stored.
    /// - Throws: whatever `mint` throws.
    public func replaceToken(for key: String, rejected: String, now: Int64, minimumAgeSeconds: Int64,
                             mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        try locked(key: key, fallback: {
            try fallback.replaceToken(for: key, rejected: rejected, now: now, minimumAgeSeconds: minimumAgeSeconds, mint: mint)
        }) { stored in
            if let s = stored, s.token != rejected || now - s.issuedAt < minimumAgeSeconds { return s }
            return Self.row(try mint(now))
        }
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
                current = ProviderTokenStore(connection: try openConnection())
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
