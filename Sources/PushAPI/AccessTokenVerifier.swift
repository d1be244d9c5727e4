import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore
import PushWorker

/// OAuth access tokens for the API (issue 15 part 1, R-API-2): what `pushfleet api` is told by
/// `PUSHFLEET_OAUTH_*` (docs/api.md, "OAuth access tokens").
public struct OAuthSettings: Sendable {
    /// Issuer, audience and clock skew.
    public var tokens: AccessTokenSettings
    /// Where the JWKS is read.
    public var jwks: JWKSSource
    /// Seconds between scheduled refreshes of the JWKS (default 3600).
    public var refreshSeconds: Double = 3_600
    /// At most one fetch per this many seconds, whatever kids tokens name (default 60).
    public var minRefreshSeconds: Double = 60
    /// Requests per second per token subject, across every replica (default 100).
    public var rateLimitPerSecond = 100
    /// The clock tokens are judged by (tests move it).
    public var now: @Sendable () -> Date = { Date() }

    /// Settings with the defaults.
    public init(tokens: AccessTokenSettings, jwks: JWKSSource) {
        self.tokens = tokens
        self.jwks = jwks
    }
}

/// Verifies a bearer access token (RFC 9068) and makes the request's principal: compact JWS form,
/// header (`AccessTokenRules.header`: RS256 or ES256 only, `typ` at+jwt), the signature with the
/// JWKS key its `kid` names (`JWKSCache`, `JWKPublicKey`), then the claims
/// (`AccessTokenRules.claims`). No database trip: the token carries the account, mode, scope and
/// apps (the handler then checks once per process that the account exists, `knownAccounts`).
/// Tokens are short-lived and there is no revocation list: a token is good until its `exp`.
final class AccessTokenVerifier: @unchecked Sendable {
    let settings: OAuthSettings
    let keys: JWKSCache
    /// Accounts already found to exist (accounts are never deleted, so a positive answer holds).
    let knownAccounts = KnownAccounts()

    /// The longest token read (bytes): far above any real access token.
    static let maxTokenBytes = 8_192

    init(settings: OAuthSettings, log: Log) {
        self.settings = settings
        let fetcher = JWKSFetcher(source: settings.jwks)
        keys = JWKSCache(fetch: { try fetcher.fetch() }, refreshSeconds: settings.refreshSeconds,
                         minRefreshSeconds: settings.minRefreshSeconds, now: settings.now, log: log)
    }

    /// True when `credential` has the shape of a JWS (three parts): an access token, not an API
    /// key, whatever its length (one over `maxTokenBytes` is refused as a token, saying so).
    static func looksLikeToken(_ credential: String) -> Bool {
        credential.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The principal of a valid token.
    /// - Throws: `AccessTokenRefusal` (every one a 401 for the caller).
    func principal(_ token: String) throws -> APIPrincipal {
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw AccessTokenRefusal("malformed", "the access token is over \(Self.maxTokenBytes) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])),
              let claimBytes = Base64URL.decode(String(parts[1])), let signature = Base64URL.decode(String(parts[2])),
              let header = try? JSONParser.parse(utf8: headerBytes), let claimsValue = try? JSONParser.parse(utf8: claimBytes) else {
            throw AccessTokenRefusal("malformed", "the access token is not a compact JWS of JSON header and claims")
        }
        let (algName, kid) = try AccessTokenRules.header(header)
        guard let algorithm = JWTSigner.Algorithm(rawValue: algName) else {
            throw AccessTokenRefusal("algorithm", "the token's alg must be RS256 or ES256")
        }
        let message = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let candidates = try keys.keys(kid: kid, algorithm: algorithm)
        guard candidates.contains(where: { $0.verify(algorithm: algorithm, signature: signature, message: message) }) else {
            throw AccessTokenRefusal("signature", "the token's signature does not verify with the authorization server's key")
        }
        let claims = try AccessTokenRules.claims(claimsValue, settings: settings.tokens, now: settings.now())
        return APIPrincipal(keyID: Self.bucketID(claims), accountID: claims.accountID, mode: claims.mode,
                            permissions: claims.permissions, rateLimitPerSecond: settings.rateLimitPerSecond,
                            revoked: false, appOwned: nil, appIDs: claims.appIDs, actor: "oauth:" + claims.subject)
    }

    /// The rate-limit bucket of a token's subject (shared by every replica, like a key's): a UUID
    /// from SHA-256 of the issuer, subject, account and mode, so that every token of one subject
    /// shares one bucket.
    static func bucketID(_ c: AccessTokenClaims) -> UUID {
        let text = "oauth\u{0}\(c.subject)\u{0}\(PrefixedID.format(.account, c.accountID))\u{0}\(c.mode.rawValue)"
        let h = (try? SHA256.hash(Array(text.utf8))) ?? [UInt8](repeating: 0, count: 32)
        return UUID(uuid: (h[0], h[1], h[2], h[3], h[4], h[5], h[6] & 0x0f | 0x80, h[7], h[8] & 0x3f | 0x80, h[9], h[10],
                           h[11], h[12], h[13], h[14], h[15]))
    }
}

/// The account ids a process has seen exist, so that a token's account costs one lookup per
/// process, not one per request. Only positive answers are kept (an account may be created later);
/// bounded: cleared past 10,000 ids.
final class KnownAccounts: @unchecked Sendable {
    private let lock = NSLock()
    private var ids = Set<UUID>()

    /// True when `id` exists: from the set, else by `lookup` (remembered when true).
    func exists(_ id: UUID, lookup: (UUID) throws -> Bool) rethrows -> Bool {
        if lock.withLock({ ids.contains(id) }) { return true }
        guard try lookup(id) else { return false }
        lock.withLock {
            if ids.count >= 10_000 { ids.removeAll() }
            ids.insert(id)
        }
        return true
    }
}
