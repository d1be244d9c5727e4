import PushCrypto

/// Why a Web Push client could not be created.
public struct WebPushClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable code: `webpush.bad_subject`, `webpush.bad_lifetime`.
    public let code: String
    /// Human explanation.
    public let message: String

    /// The VAPID `sub` is not a `mailto:` or `https:` URI of printable ASCII (RFC 8292 §2.1).
    public static func badSubject(_ detail: String) -> WebPushClientError {
        WebPushClientError(code: "webpush.bad_subject", message: detail)
    }

    /// The token lifetime or renewal margin is out of range (RFC 8292 §2: `exp` at most 24 h ahead).
    public static func badLifetime(_ detail: String) -> WebPushClientError {
        WebPushClientError(code: "webpush.bad_lifetime", message: detail)
    }

    public var description: String { "\(code): \(message)" }
}

/// Makes and caches the `Authorization: vapid t=<JWT>, k=<key>` header (RFC 8292 §2-3).
/// The JWT is ES256 (raw r||s) over header `{"typ":"JWT","alg":"ES256"}` and claims
/// `{"aud":<origin>,"exp":<now + lifetime>,"sub":<subject>}`. One token per origin, kept in a
/// `ProviderTokenCache` under `vapid:<public key>:<origin>:<subject>` and reused until `renewalMargin`
/// seconds before its `exp`. The public key is derived from the private scalar (`VAPIDKeys`), so it
/// names the signing key itself: two sets share a token only when they hold the same key and
/// subject (issue 11).
public final class WebPushVAPID: @unchecked Sendable {
    /// Longest `sub` accepted, in characters.
    public static let maximumSubjectLength = 512
    /// Longest token lifetime (RFC 8292 §2: `exp` no more than 24 hours ahead).
    public static let maximumLifetimeSeconds: Int64 = 24 * 3600

    /// The application server key pair (its public half is `k`).
    public let keys: VAPIDKeys
    /// The contact URI (`sub`).
    public let subject: String
    /// Seconds from minting to `exp`.
    public let lifetimeSeconds: Int64
    /// A token is replaced this many seconds before its `exp`.
    public let renewalMarginSeconds: Int64
    private let signer: JWTSigner
    private let tokenCache: ProviderTokenCache

    private init(keys: VAPIDKeys, subject: String, lifetimeSeconds: Int64, renewalMarginSeconds: Int64,
                 signer: JWTSigner, tokenCache: ProviderTokenCache) {
        self.keys = keys
        self.subject = subject
        self.lifetimeSeconds = lifetimeSeconds
        self.renewalMarginSeconds = renewalMarginSeconds
        self.signer = signer
        self.tokenCache = tokenCache
    }

    /// - Parameters:
    ///   - keys: the app's VAPID key pair.
    ///   - subject: `mailto:<address>` or `https:<url>`: printable ASCII without `"` or `\`, at most 512 characters.
    ///   - lifetimeSeconds: `exp - now`, in 1...86 400 (12 h is usual).
    ///   - renewalMarginSeconds: in 0..<lifetimeSeconds.
    ///   - tokenCache: where tokens live (share it between clients of the same key).
    /// - Throws: `WebPushClientError.badSubject` / `.badLifetime`; `JWTError` or `CryptoError` if the key cannot be used.
    public static func make(keys: VAPIDKeys, subject: String, lifetimeSeconds: Int64 = 12 * 3600,
                            renewalMarginSeconds: Int64 = 3600,
                            tokenCache: ProviderTokenCache = InMemoryProviderTokenCache()) throws -> WebPushVAPID {
        try checkSubject(subject)
        guard (1...maximumLifetimeSeconds).contains(lifetimeSeconds), (0..<lifetimeSeconds).contains(renewalMarginSeconds) else {
            throw WebPushClientError.badLifetime("lifetime must be 1...86400 s and the renewal margin below it")
        }
        let signer = try JWTSigner.es256(privateKeyPEM: try keys.privateKeyPEM(), keyId: "")
        return WebPushVAPID(keys: keys, subject: subject, lifetimeSeconds: lifetimeSeconds,
                            renewalMarginSeconds: renewalMarginSeconds, signer: signer, tokenCache: tokenCache)
    }

    /// Cache key of the token for `origin`: `vapid:<public key base64url>:<origin>:<subject>`.
    public func cacheKey(origin: String) -> String { "vapid:\(keys.publicKeyBase64URL):\(origin):\(subject)" }

    /// The token for `origin` at `now` (UNIX seconds): the cached one while `now < exp - margin`,
    /// else a new one. `ProviderToken.refreshAt` = exp − margin.
    /// - Throws: `JWTError.signingFailed` if OpenSSL fails.
    public func token(origin: String, now: Int64) throws -> ProviderToken {
        try tokenCache.currentToken(for: cacheKey(origin: origin), now: now) { now in
            let exp = now + self.lifetimeSeconds
            let claims = #"{"aud":"\#(Self.jsonEscaped(origin))","exp":\#(exp),"sub":"\#(Self.jsonEscaped(self.subject))"}"#
            let jwt = try self.signer.sign(header: #"{"typ":"JWT","alg":"ES256"}"#, claims: claims)
            return ProviderToken(value: jwt, issuedAt: now, refreshAt: exp - self.renewalMarginSeconds)
        }
    }

    /// `vapid t=<JWT>, k=<public key base64url>` for `origin` at `now`.
    /// - Throws: as `token(origin:now:)`.
    public func authorization(origin: String, now: Int64) throws -> String {
        "vapid t=\(try token(origin: origin, now: now).value), k=\(keys.publicKeyBase64URL)"
    }

    /// Checks a `sub` value (see `make`).
    /// - Throws: `WebPushClientError.badSubject`.
    public static func checkSubject(_ subject: String) throws {
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
            throw WebPushClientError.badSubject("subject must start with mailto: or https:")
        }
        guard subject.utf8.count > "mailto:".utf8.count, subject.utf8.count <= maximumSubjectLength,
              subject.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else {
            throw WebPushClientError.badSubject("subject must be 8...\(maximumSubjectLength) printable ASCII characters without quotes or backslashes")
        }
    }

    private static func jsonEscaped(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
