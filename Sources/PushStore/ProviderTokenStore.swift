import Foundation

/// One row of `push_provider_tokens`: a provider bearer token shared by the fleet (Apple's
/// "Establishing a token-based connection to APNs": one token per key, renewed after 20 and before 60
/// minutes).
public struct StoredProviderToken: Sendable, Equatable {
    public var token: String
    /// UNIX seconds.
    public var issuedAt: Int64
    /// UNIX seconds from which callers must make a new one.
    public var expiresAt: Int64

    public init(token: String, issuedAt: Int64, expiresAt: Int64) {
        self.token = token
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// The shared provider-token table, with a per-key critical section across processes: each call
/// runs in its own transaction holding `pg_advisory_xact_lock(hashtext(key))`, so concurrent
/// callers of one key take turns and at most one of them mints. One store per connection.
public final class ProviderTokenStore {
    public let connection: PGConnection

    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Runs `decide` with the stored token for `key` (nil if none) while holding the key's lock; when it
    /// returns a token different from the stored one, that token is stored before the lock is released.
    /// - Returns: what `decide` returned.
    /// - Throws: whatever `decide` throws (nothing is stored then), `PGError`.
    public func withLockedToken(key: String, _ decide: (StoredProviderToken?) throws -> StoredProviderToken) throws -> StoredProviderToken {
        try connection.transaction { conn in
            _ = try conn.exec(CredentialQueries.tokenLock, [.text(key)])
            let r = try conn.exec(CredentialQueries.tokenGet, [.text(key)])
            let stored = r.rowCount == 0 ? nil : StoredProviderToken(
                token: try r.string(0, "token"), issuedAt: try r.int64(0, "issued_at"), expiresAt: try r.int64(0, "expires_at"))
            let chosen = try decide(stored)
            if chosen != stored {
                _ = try conn.exec(CredentialQueries.tokenPut, [
                    .text(key), .text(chosen.token), .int64(chosen.issuedAt), .int64(chosen.expiresAt),
                ])
            }
            return chosen
        }
    }
}
