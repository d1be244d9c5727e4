import PushCrypto

/// A device registration as the API receives it, validated field by field (R-DEV-1, R-DEV-3,
/// R-DEV-4). Pure apart from the P-256 point check, which PushCrypto does without I/O.
public struct DeviceRegistration: Sendable {
    /// What to do with the stored encryption key (R-DEV-4).
    public enum KeyChange: Sendable, Equatable {
        /// The field was absent: keep the stored key (a new device has none).
        case keep
        /// A new key: the validated 65-byte point and its kid (R-DEV-3).
        case set(raw: [UInt8], kid: String)
        /// Explicit null: remove the key (fires no webhook).
        case remove

        /// The SQL function's action word: `keep`, `set` or `remove`.
        public var action: String {
            switch self {
            case .keep: return "keep"
            case .set: return "set"
            case .remove: return "remove"
            }
        }
    }

    /// A validated Web Push subscription (RFC 8030 endpoint, RFC 8291 keys).
    public struct Subscription: Sendable, Equatable {
        /// The push resource URL (https, public host), as given.
        public var endpoint: String
        /// The browser's 65-byte uncompressed P-256 key, checked on the curve.
        public var p256dh: [UInt8]
        /// The 16-byte authentication secret.
        public var auth: [UInt8]
    }

    /// Test or live, from the API key used (R-MODE-1).
    public var mode: Mode
    /// `ios`, `android` or `web` (R-DEV-1).
    public var platform: Platform
    /// Provider token (iOS, Android); nil for web.
    public var token: String?
    /// Web only.
    public var subscription: Subscription?
    /// The owning user, 1 to 255 characters (R-DEV-1, R-DEV-2).
    public var userID: String
    /// iOS only, required there.
    public var apnsEnvironment: APNsEnvironment?
    /// What to do with the stored encryption key (R-DEV-4).
    public var key: KeyChange

    /// Longest token (R-DEV-1), in characters.
    public static let maxTokenLength = 512
    /// Longest user id (R-DEV-1), in characters.
    public static let maxUserIDLength = 255

    /// Validates raw API fields. `encryptionPublicKey`: `.none` = field absent, `.some(nil)` =
    /// explicit null, `.some(text)` = base64url of the 65-byte point. `platforms`: how each platform
    /// the provider table serves is addressed (`ProviderTable.addressing`). `allowLoopbackEndpoints`
    /// is for tests only. Throws `PushError` with code `VALIDATION_ERROR` naming the field.
    public static func validate(mode: String, platform: String, token: String?, userID: String,
                                apnsEnvironment: String?, encryptionPublicKey: String??,
                                subscriptionEndpoint: String? = nil, subscriptionP256dh: String? = nil,
                                subscriptionAuth: String? = nil, platforms: [Platform: DeviceAddressing],
                                allowLoopbackEndpoints: Bool = false) throws -> DeviceRegistration {
        func invalid(_ field: String, _ why: String) -> PushError {
            PushError(.validationError, "\(field): \(why)", field: field)
        }
        guard let mode = Mode(rawValue: mode) else { throw invalid("mode", "must be test or live") }
        let platform = Platform(rawValue: platform)
        guard let addressing = platforms[platform] else {
            throw invalid("platform", "must be \(platforms.keys.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        // Characters are counted as the database counts them (Unicode scalars, `char_length`), so
        // a name of combining sequences cannot pass here and fail the table's CHECK; NUL cannot be
        // stored in PostgreSQL text at all.
        guard !userID.isEmpty, userID.unicodeScalars.count <= maxUserIDLength,
              !userID.unicodeScalars.contains("\u{0}") else {
            throw invalid("user_id", "must be 1 to \(maxUserIDLength) characters, without NUL")
        }
        var environment: APNsEnvironment? = nil
        if addressing == .token(apnsEnvironment: true) {
            guard let text = apnsEnvironment, let env = APNsEnvironment(rawValue: text) else {
                throw invalid("apns_environment", "must be sandbox or production for an iOS device")
            }
            environment = env
        } else if apnsEnvironment != nil {
            throw invalid("apns_environment", "applies to iOS devices only")
        }

        var subscription: Subscription? = nil
        if addressing == .subscription {
            if token != nil { throw invalid("token", "web devices register a subscription, not a token") }
            if case .some(.some) = encryptionPublicKey {
                throw invalid("encryption_public_key", "web devices take no encryption key (RFC 8291 protects them)")
            }
            guard let endpoint = subscriptionEndpoint else { throw invalid("subscription.endpoint", "is required for a web device") }
            guard let p256dh = subscriptionP256dh else { throw invalid("subscription.keys.p256dh", "is required for a web device") }
            guard let auth = subscriptionAuth else { throw invalid("subscription.keys.auth", "is required for a web device") }
            do {
                let s = try WebPushSubscription(endpoint: endpoint, p256dhBase64URL: p256dh, authBase64URL: auth,
                                                allowLoopback: allowLoopbackEndpoints)
                subscription = Subscription(endpoint: s.endpoint, p256dh: s.p256dh, auth: s.auth)
            } catch let e as WebPushError {
                // The API body's names (R-DEV-1): `subscription.endpoint`, `subscription.keys.p256dh|auth`.
                let name = e.field ?? "endpoint"
                throw invalid(name == "endpoint" ? "subscription.endpoint" : "subscription.keys.\(name)", e.message)
            }
        } else {
            guard let token, isValidToken(token) else {
                throw invalid("token", "must be 1 to \(maxTokenLength) characters of A-Z a-z 0-9 _ : . -")
            }
            if subscriptionEndpoint != nil || subscriptionP256dh != nil || subscriptionAuth != nil {
                throw invalid("subscription", "applies to web devices only")
            }
        }

        var key = KeyChange.keep
        switch encryptionPublicKey {
        case .none: key = .keep
        case .some(.none): key = .remove
        case .some(.some(let text)):
            // R-DEV-3: base64url without padding (the decoder itself tolerates `=`).
            if text.contains("=") {
                throw invalid("encryption_public_key", "must be base64url without padding (no '=')")
            }
            do {
                let k = try P256PublicKey(base64URL: text)
                key = .set(raw: k.raw, kid: k.kid)
            } catch let e as CryptoError {
                throw invalid("encryption_public_key", "\(e.message) (a 65-byte uncompressed P-256 point, base64url)")
            }
        }
        return DeviceRegistration(mode: mode, platform: platform, token: addressing == .subscription ? nil : token,
                                  subscription: subscription, userID: userID, apnsEnvironment: environment, key: key)
    }

    /// R-DEV-1: 1 to 512 characters of `A-Z a-z 0-9 _ : . -`.
    public static func isValidToken(_ token: String) -> Bool {
        let bytes = token.utf8
        guard !bytes.isEmpty, bytes.count <= maxTokenLength else { return false }
        // The contiguous bytes when the string has them (every native string): the planner checks
        // each stored token again at send time, and walking `String.UTF8View` index by index cost
        // more than the rest of a plaintext plan (docs/bench.md, issue 16's boundary).
        return bytes.withContiguousStorageIfAvailable { $0.allSatisfy(isTokenByte) } ?? bytes.allSatisfy(isTokenByte)
    }

    /// One byte of R-DEV-1's token alphabet, `A-Z a-z 0-9 _ : . -`.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
            || b == UInt8(ascii: "_") || b == UInt8(ascii: ":") || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")
    }
}
