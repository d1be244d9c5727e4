import PushCore

extension ProviderDescriptor {
    /// Firebase Cloud Messaging HTTP v1: Android devices, a Google service account (OAuth2).
    public static let fcm = ProviderDescriptor(
        platform: .android, addressing: .token(apnsEnvironment: false), credentials: FCMCredentialRules(), label: .fcm,
        payload: FCMPayloadWriter(), answers: FCMAnswerRules()
    ) { set, settings in
        let account = try FCMServiceAccount.parse(json: set.secret)
        var c = FCMClient.Configuration()
        if let url = set.identifiers["fcm_base_url"] { c.baseURL = url }
        c.tokenURLOverride = set.identifiers["fcm_token_uri"]
        c.requestTimeoutMillis = settings.requestTimeoutMillis
        c.http = settings.http
        return try FCMClient.make(account: account, configuration: c, tokenCache: settings.tokenCache)
    }
}

/// An FCM set: the service-account JSON as the secret (its identifiers are read from it; any
/// given in `config` are dropped) and endpoint overrides in `config` (`CredentialValidation.fcm`).
public struct FCMCredentialRules: CredentialRules {
    /// Makes the rules.
    public init() {}

    public var kind: CredentialKind { .fcm }
    public var overrideKeys: Set<String> { ["fcm_base_url", "fcm_token_uri"] }
    public func validate(config: [String: String], secret: [UInt8]) throws -> [String: String] {
        var rest = config
        for k in ["project_id", "client_email", "private_key_id"] { rest.removeValue(forKey: k) }
        return try CredentialValidation.fcm(serviceAccountJSON: secret, overrides: rest, allowedOverrides: overrideKeys)
    }
}
