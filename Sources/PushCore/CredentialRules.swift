import Foundation

/// How one kind of credential set is checked before it is stored (R-APP-3): a push provider's
/// descriptor carries its own (`ProviderDescriptor.credentials`), the SMS provider's is
/// `TwilioCredentialRules`; `CredentialStore.set` applies the rules its caller picked.
public protocol CredentialRules: Sendable {
    /// The kind of set these rules check (`push_credentials.kind`).
    var kind: CredentialKind { get }
    /// The plain identifiers a request names in `config` (the API's body members, in order).
    var identifierKeys: [String] { get }
    /// The optional endpoint overrides a set's config may carry (tests and demos point them at fakes).
    var overrideKeys: Set<String> { get }
    /// Checks a set: its identifiers and overrides in `config`, its secret.
    /// - Returns: the config to store. - Throws: `VALIDATION_ERROR`, never quoting the secret.
    func validate(config: [String: String], secret: [UInt8]) throws -> [String: String]
}

extension CredentialRules {
    /// No identifiers in `config` (the set's are read from its secret, or it has none).
    public var identifierKeys: [String] { [] }
    /// No endpoint overrides.
    public var overrideKeys: Set<String> { [] }
}

/// Twilio's set (the SMS provider, R-SMS-1): `account_sid`, `api_key_sid`, `from` or
/// `messaging_service_sid` in `config`, the auth token or API key secret (`CredentialValidation.twilio`).
public struct TwilioCredentialRules: CredentialRules {
    /// Twilio's endpoint override.
    public static let overrideKeys: Set<String> = ["twilio_base_url"]

    /// Makes the rules.
    public init() {}

    public var kind: CredentialKind { .twilio }
    public var identifierKeys: [String] { ["account_sid", "api_key_sid", "from", "messaging_service_sid"] }
    public var overrideKeys: Set<String> { Self.overrideKeys }
    public func validate(config: [String: String], secret: [UInt8]) throws -> [String: String] {
        try CredentialValidation.twilio(config: config, secret: secret)
    }
}

extension CredentialKind {
    /// The rules of the SMS providers' sets, one per kind of `CredentialKind.sms`.
    public static let smsRules: [any CredentialRules] = [TwilioCredentialRules()]
}
