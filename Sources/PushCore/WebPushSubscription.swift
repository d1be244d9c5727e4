import struct Foundation.URLComponents
import PushCrypto

/// A validated Web Push subscription (R-DEV-1; the browser's `PushSubscription` JSON:
/// `endpoint`, `keys.p256dh`, `keys.auth`). Construction validates every field and each refusal
/// is `VALIDATION_ERROR` naming its field, so the API can answer HTTP 422 with it.
public struct WebPushSubscription: Equatable, Sendable {
    /// Longest endpoint accepted, in UTF-8 bytes (product decision; real services use ~250).
    public static let maximumEndpointLength = OutboundURL.maximumLength

    /// The push resource URL, exactly as given.
    public let endpoint: String
    /// The user agent's 65-byte uncompressed P-256 public key, checked to be on the curve.
    public let p256dh: [UInt8]
    /// The 16-byte authentication secret.
    public let auth: [UInt8]
    /// The endpoint's origin, `https://host[:port]` (port omitted when 443): the VAPID `aud`
    /// claim (RFC 8292 §2).
    public let origin: String

    /// Validates raw key bytes. Throws `VALIDATION_ERROR` with field `endpoint` (see
    /// `validateEndpoint`), `p256dh` (not 65 bytes, not 0x04-prefixed, or not on P-256) or
    /// `auth` (not exactly 16 bytes). `allowLoopback` admits 127/8, ::1 and `localhost`, for
    /// tests against local fakes only.
    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8], allowLoopback: Bool = false) throws {
        let origin = try Self.validateEndpoint(endpoint, allowLoopback: allowLoopback)
        guard (try? P256PublicKey(raw: p256dh)) != nil else {
            throw WebPushError.validation("p256dh", "must be a 65-byte uncompressed P-256 point on the curve")
        }
        guard auth.count == WebPushEncryption.authSecretLength else {
            throw WebPushError.validation("auth", "must be exactly 16 bytes, got \(auth.count)")
        }
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.origin = origin
    }

    /// Validates the browser's form: keys as base64url text (padding tolerated). Throws
    /// `VALIDATION_ERROR` naming `p256dh` or `auth` when they do not decode, and as
    /// `init(endpoint:p256dh:auth:allowLoopback:)` otherwise.
    public init(endpoint: String, p256dhBase64URL: String, authBase64URL: String, allowLoopback: Bool = false) throws {
        guard let key = Base64URL.decode(p256dhBase64URL) else {
            throw WebPushError.validation("p256dh", "is not base64url")
        }
        guard let secret = Base64URL.decode(authBase64URL) else {
            throw WebPushError.validation("auth", "is not base64url")
        }
        try self.init(endpoint: endpoint, p256dh: key, auth: secret, allowLoopback: allowLoopback)
    }

    /// Validates an endpoint URL and returns its origin (`https://host[:port]`, the port shown
    /// only when it is not 443): `OutboundURL`'s rules with `https` only. Throws
    /// `VALIDATION_ERROR(endpoint)`.
    public static func validateEndpoint(_ endpoint: String, allowLoopback: Bool = false) throws -> String {
        try OutboundURL(endpoint, field: "endpoint", allowLoopback: allowLoopback).origin
    }
}
