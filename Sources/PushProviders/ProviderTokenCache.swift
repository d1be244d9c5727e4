import Foundation

/// Wall-clock time for token lifetimes, injected so tests can move it (STYLE "time is a parameter").
public protocol ProviderClock: Sendable {
    /// Current time in UNIX seconds.
    func nowUnixSeconds() -> Int64
}

/// The real clock (`Date()`).
public struct SystemProviderClock: ProviderClock {
    public init() {}
    public func nowUnixSeconds() -> Int64 { Int64(Date().timeIntervalSince1970) }
}

/// A provider bearer token with its lifetime: an APNs provider JWT or an FCM OAuth2 access token.
public struct ProviderToken: Sendable, Equatable {
    /// The token text sent after `bearer `.
    public var value: String
    /// When it was made (UNIX seconds): the JWT `iat`, or the time the OAuth answer arrived.
    public var issuedAt: Int64
    /// From this instant (UNIX seconds) callers must mint a new one.
    public var refreshAt: Int64

    /// Memberwise initializer.
    public init(value: String, issuedAt: Int64, refreshAt: Int64) {
        self.value = value
        self.issuedAt = issuedAt
        self.refreshAt = refreshAt
    }
}

/// Where provider tokens are kept, keyed by credential. A key names the signing key itself, not only
/// its public identifiers (issue 11): `apns:<team>:<key id>:<key fingerprint>`,
/// `fcm:<client email>:<key fingerprint>:<token endpoint> <scope>`, `vapid:<public key>:<origin>:<subject>`
/// (the fingerprint is `JWTSigner.publicKeyFingerprint`), so two credential sets share a token only
/// when they hold the same private key. One token per key is shared by all connections (Apple's
/// "Establishing a token-based connection to APNs"). Implementations must make each call atomic per key, so that concurrent callers mint at most
/// one token; a PostgreSQL-backed implementation can share tokens across worker processes.
public protocol ProviderTokenCache: AnyObject, Sendable {
    /// Returns the stored token for `key` if `now < refreshAt`; otherwise calls `mint(now)` once, stores
    /// and returns its result.
    /// - Throws: whatever `mint` throws (nothing is stored then).
    func currentToken(for key: String, now: Int64, mint: (Int64) throws -> ProviderToken) throws -> ProviderToken

    /// Replaces `rejected` at once after the provider refused it as expired or unknown (APNs
    /// `ExpiredProviderToken`, an FCM 401), whatever its age, if it is still the stored token;
    /// otherwise returns what is stored (the newer token another caller already made), so that the
    /// callers holding one rejected token mint exactly one replacement between them.
    /// - Throws: whatever `mint` throws (nothing is stored then).
    func replaceToken(for key: String, rejected: String, now: Int64,
                      mint: (Int64) throws -> ProviderToken) throws -> ProviderToken
}

/// Process-local `ProviderTokenCache` (a dictionary behind a lock).
public final class InMemoryProviderTokenCache: ProviderTokenCache, @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [String: ProviderToken] = [:]

    public init() {}

    public func currentToken(for key: String, now: Int64, mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        lock.lock()
        defer { lock.unlock() }
        if let stored = tokens[key], now < stored.refreshAt, now >= stored.issuedAt - 60 { return stored }
        let fresh = try mint(now)
        tokens[key] = fresh
        return fresh
    }

    public func replaceToken(for key: String, rejected: String, now: Int64,
                             mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        lock.lock()
        defer { lock.unlock() }
        if let stored = tokens[key], stored.value != rejected { return stored }
        let fresh = try mint(now)
        tokens[key] = fresh
        return fresh
    }
}
