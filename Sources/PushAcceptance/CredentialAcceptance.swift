import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore

/// A credential set as a caller gives it (R-APP-3; the SMS provider's of R-SMS-1): the CLI reads
/// the secrets from files, the API from the body. Identifiers and endpoint overrides go in
/// `config` under their snake_case names (`team_id`, `key_id`, `topic`, `account_sid`,
/// `api_key_sid`, `from`, `messaging_service_sid`, `subject`, `apns_base_url_production`, ...);
/// each secret has its own member, so that the service (not each caller) decides which one a set
/// needs. Nothing here is checked: `AcceptanceService.setCredentials` is the one path.
public struct CredentialRequest: Sendable {
    /// `apns`, `fcm`, `webpush`, `twilio`, or another provider's of the service's table.
    public var kind: CredentialKind
    /// Identifiers and overrides (absent members are simply not given).
    public var config: [String: String]
    /// APNs: the `.p8` key's PEM text.
    public var p8: [UInt8]?
    /// FCM: Google's service-account JSON, as bytes.
    public var serviceAccount: [UInt8]?
    /// Twilio: the account's auth token (without `api_key_sid`).
    public var authToken: [UInt8]?
    /// Twilio: the API key's secret (with `api_key_sid`).
    public var apiKeySecret: [UInt8]?
    /// The secret of a set of another provider's kind (one the table adds; its rules read it).
    public var secret: [UInt8]?
    /// Who asks, for the audit log's `credentials.set` (issue 15 part 5): the API key's prefix,
    /// `oauth:` + a token's subject, `cli:` + a login.
    public var actor: String = AuditStore.unnamedActor

    /// A request for a set of `kind`.
    public init(kind: CredentialKind, config: [String: String] = [:], p8: [UInt8]? = nil, serviceAccount: [UInt8]? = nil,
                authToken: [UInt8]? = nil, apiKeySecret: [UInt8]? = nil) {
        self.kind = kind
        self.config = config
        self.p8 = p8
        self.serviceAccount = serviceAccount
        self.authToken = authToken
        self.apiKeySecret = apiKeySecret
    }
}

/// What storing a set answered: the set without its secret; for Web Push, the VAPID public key
/// browsers take as `applicationServerKey` (also the set's `public_key` identifier).
public struct CredentialResult: Sendable {
    /// The stored set (identifiers, `state`, `first_accepted_at`), never the secret.
    public var summary: CredentialSummary
    /// Web Push only: the public key of the key pair made for the set (base64url, 65-byte point).
    public var applicationServerKey: String?
}

extension AcceptanceService {
    /// The kinds of set an app can hold: the push providers' (`providers`) and the SMS provider's.
    public var credentialKinds: [CredentialKind] {
        providers.credentialKinds + CredentialKind.sms.sorted { $0.rawValue < $1.rawValue }
    }

    /// Stores (or replaces) the app's set of `request.kind`, the CLI's `apps credentials set` and
    /// `apps vapid create` and the API's `PUT .../credentials/{kind}` alike: picks the secret the
    /// kind needs (a Web Push set gets a new P-256 VAPID key pair, RFC 8292), then
    /// `CredentialStore.set` with the kind's rules from `providers` (`ProviderTable.credentialRules`,
    /// the one check; another provider's set takes `request.secret`),
    /// seals the secret under `keys` and resets the set's state (R-APP-3).
    /// - Throws: `AcceptanceError` (`VALIDATION_ERROR` naming the field, `NOT_FOUND` for no such
    ///   app), `PGError` on database failure.
    public func setCredentials(appID: UUID, _ request: CredentialRequest, keys: CredentialKeys) throws -> CredentialResult {
        let config = request.config
        let secret: [UInt8]
        var publicKey: String?
        switch request.kind {
        case .apns:
            secret = try Self.required(request.p8, "p8")
        case .fcm:
            secret = try Self.required(request.serviceAccount, "service_account")
        case .webpush:
            let pair = try VAPIDKeys.generate()
            secret = Array(try pair.privateKeyPEM().utf8)
            publicKey = pair.publicKeyBase64URL
        case .twilio:
            if config["api_key_sid"] == nil {
                if request.apiKeySecret != nil {
                    throw AcceptanceError.invalid("api_key_secret", "is given with api_key_sid only")
                }
                secret = try Self.required(request.authToken, "auth_token")
            } else {
                if request.authToken != nil {
                    throw AcceptanceError.invalid("auth_token", "give auth_token or api_key_sid with api_key_secret, not both")
                }
                secret = try Self.required(request.apiKeySecret, "api_key_secret")
            }
        default:
            guard providers.provider(for: request.kind) != nil else {
                throw AcceptanceError.invalid("kind", "must be one of \(credentialKinds.map(\.rawValue).joined(separator: ", "))")
            }
            secret = try Self.required(request.secret, "secret")
        }
        do {
            let rules = try providers.credentialRules(for: request.kind)
            let summary = try CredentialStore(connection: try connection(), keys: keys)
                .set(appID: appID, rules: rules, config: config, secret: secret, actor: request.actor)
            return CredentialResult(summary: summary, applicationServerKey: publicKey.map { summary.identifiers["public_key"] ?? $0 })
        } catch let e as PushError {
            throw AcceptanceError(e)
        }
    }

    /// Removes the app's set of `kind`; false when it had none. The removal is audited with `actor`
    /// (`credentials.removed`, issue 15 part 5).
    /// - Throws: `AcceptanceError` (`VALIDATION_ERROR` for a kind no app holds), `PGError`.
    public func removeCredentials(appID: UUID, kind: CredentialKind, actor: String) throws -> Bool {
        guard credentialKinds.contains(kind) else {
            throw AcceptanceError.invalid("kind", "must be one of \(credentialKinds.map(\.rawValue).joined(separator: ", "))")
        }
        return try CredentialStore(connection: try connection(), keys: nil).remove(appID: appID, kind: kind, actor: actor)
    }

    /// The app's sets without their secrets, ordered by kind.
    public func credentials(appID: UUID) throws -> [CredentialSummary] {
        try CredentialStore(connection: try connection(), keys: nil).states(appID: appID)
    }

    private static func required(_ secret: [UInt8]?, _ field: String) throws -> [UInt8] {
        guard let secret else { throw AcceptanceError.invalid(field, "is required") }
        return secret
    }
}
