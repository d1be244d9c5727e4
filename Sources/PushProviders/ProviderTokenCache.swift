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

/// Where provider tokens are kept, keyed by credential (e.g. `apns:<team>:<key>`). One token per key is
/// shared by all connections (Apple's "Establishing a token-based connection to APNs"). Implementations
/// must make each call atomic per key, so that concurrent callers mint at most one token; a
/// PostgreSQL-backed implementation can share tokens across worker processes (row per key, `SELECT ...
/// FOR UPDATE`).
public protocol ProviderTokenCache: AnyObject, Sendable {
    /// Returns the stored token for `key` if `now < refreshAt`; otherwise calls `mint(now)` once, stores
    /// and returns its result.
    /// - Throws: whatever `mint` throws (nothing is stored then).
    func currentToken(for key: String, now: Int64, mint: (Int64) throws -> ProviderToken) throws -> ProviderToken

    /// Replaces `rejected` after the provider refused it (APNs `ExpiredProviderToken`, FCM 401), but only
    /// if it is still the stored token and at least `minimumAgeSeconds` old; otherwise returns what is
    /// stored (maybe a newer token another caller made).
    /// - Throws: whatever `mint` throws.
    func replaceToken(for key: String, rejected: String, now: Int64, minimumAgeSeconds: Int64,
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

    public func replaceToken(for key: String, rejected: String, now: Int64, minimumAgeSeconds: Int64,
                             mint: (Int64) throws -> ProviderToken) throws -> ProviderToken {
        lock.lock()
        defer { lock.unlock() }
        if let stored = tokens[key], stored.value != rejected || now - stored.issuedAt < minimumAgeSeconds {
            return stored
        }
        let fresh = try mint(now)
        tokens[key] = fresh
        return fresh
    }
}
