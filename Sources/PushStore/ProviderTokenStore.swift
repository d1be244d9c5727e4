import Foundation
import PushCrypto

/// One row of `push_provider_tokens`: a provider bearer token shared by the fleet (Apple's "Establishing a token-based connection to APNs"),
/// in clear in memory only.
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
///
/// Tokens are bearer credentials: each is stored sealed (`SecretBox`, AES-256-GCM under
/// `PUSHFLEET_CREDENTIALS_KEY`, aad `push_provider_tokens/<cache key>`, sql/0007), never in clear. A
/// row that opens with neither credentials key (sealed before a rotation finished) reads as absent, so
/// the caller mints a new token over it.
public final class ProviderTokenStore {
    public let connection: PGConnection
    /// Seal with `current`; open with `current` or `previous`.
    public let keys: CredentialKeys

    public init(connection: PGConnection, keys: CredentialKeys) {
        self.connection = connection
        self.keys = keys
    }

    /// Runs `decide` with the stored token for `key` (nil if none) while holding the key's lock; when it
    /// returns a token different from the stored one, that token is sealed and stored before the lock is released.
    /// - Returns: what `decide` returned.
    /// - Throws: whatever `decide` throws (nothing is stored then), `PGError`, `CryptoError` if sealing fails.
    public func withLockedToken(key: String, _ decide: (StoredProviderToken?) throws -> StoredProviderToken) throws -> StoredProviderToken {
        try connection.transaction { conn in
            _ = try conn.exec(CredentialQueries.tokenLock, [.text(key)])
            let r = try conn.exec(CredentialQueries.tokenGet, [.text(key)])
            var stored: StoredProviderToken?
            if r.rowCount == 1, let token = open(try r.bytes(0, "sealed_token"), key: key) {
                stored = StoredProviderToken(token: token, issuedAt: try r.int64(0, "issued_at"),
                                             expiresAt: try r.int64(0, "expires_at"))
            }
            let chosen = try decide(stored)
            if chosen != stored {
                let sealed = try SecretBox.seal(plaintext: Array(chosen.token.utf8), key: keys.current, aad: Self.aad(key))
                _ = try conn.exec(CredentialQueries.tokenPut, [
                    .text(key), .bytea(sealed), .int64(chosen.issuedAt), .int64(chosen.expiresAt),
                ])
            }
            return chosen
        }
    }

    /// Re-seals every stored token under the current key (the rotation step of
    /// `CredentialStore.rotateKey`, in the caller's transaction); a token that opens with neither key
    /// is deleted (the next caller mints a new one).
    /// - Returns: tokens re-sealed and tokens deleted.
    /// - Throws: `PGError`, `CryptoError`.
    static func resealAll(_ conn: PGConnection, keys: CredentialKeys) throws -> (resealed: Int, deleted: Int) {
        let r = try conn.exec(CredentialQueries.tokenAllSealed)
        let store = ProviderTokenStore(connection: conn, keys: keys)
        var counts = (resealed: 0, deleted: 0)
        for i in r.rows {
            let key = try r.string(i, "cache_key")
            if let token = store.open(try r.bytes(i, "sealed_token"), key: key) {
                let sealed = try SecretBox.seal(plaintext: Array(token.utf8), key: keys.current, aad: aad(key))
                _ = try conn.exec(CredentialQueries.tokenReseal, [.text(key), .bytea(sealed)])
                counts.resealed += 1
            } else {
                _ = try conn.exec(CredentialQueries.tokenDelete, [.text(key)])
                counts.deleted += 1
            }
        }
        return counts
    }

    /// The token in a box, nil when it opens with neither key (or is not UTF-8).
    private func open(_ box: [UInt8], key: String) -> String? {
        keys.open(box, aad: Self.aad(key)).flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// Associated data binding a box to its row: `push_provider_tokens/<cache key>`.
    static func aad(_ key: String) -> [UInt8] {
        Array("push_provider_tokens/\(key)".utf8)
    }
}
