import PushCore

extension ProviderDescriptor {
    /// Apple Push Notification service: iOS devices, token auth (`.p8` key), HTTP/2.
    public static let apns = ProviderDescriptor(
        platform: .ios, addressing: .token(apnsEnvironment: true), credentials: APNsCredentialRules(), label: .apns,
        payload: APNsPayloadWriter(), answers: APNsAnswerRules()
    ) { set, settings in
        let ids = set.identifiers
        var c = APNsClient.Configuration(teamId: ids["team_id"] ?? "", keyId: ids["key_id"] ?? "", topic: ids["topic"] ?? "")
        if let url = ids["apns_base_url_production"] { c.productionBaseURL = url }
        if let url = ids["apns_base_url_sandbox"] { c.sandboxBaseURL = url }
        c.requestTimeoutMillis = settings.requestTimeoutMillis
        c.http = settings.http
        return try APNsClient.make(configuration: c, privateKeyPEM: String(decoding: set.secret, as: UTF8.self),
                                   tokenCache: settings.tokenCache)
    }
}

/// An APNs set: `team_id`, `key_id`, `topic` and endpoint overrides in `config`, the `.p8` PEM as
/// the secret (`CredentialValidation.apns`).
public struct APNsCredentialRules: CredentialRules {
    /// Makes the rules.
    public init() {}

    public var kind: CredentialKind { .apns }
    public var identifierKeys: [String] { ["team_id", "key_id", "topic"] }
    public var overrideKeys: Set<String> { ["apns_base_url_production", "apns_base_url_sandbox"] }
    public func validate(config: [String: String], secret: [UInt8]) throws -> [String: String] {
        var rest = config
        let team = rest.removeValue(forKey: "team_id") ?? "", key = rest.removeValue(forKey: "key_id") ?? ""
        let topic = rest.removeValue(forKey: "topic") ?? ""
        return try CredentialValidation.apns(teamID: team, keyID: key, topic: topic, p8PEM: secret, overrides: rest,
                                             allowedOverrides: overrideKeys)
    }
}
