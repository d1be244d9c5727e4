import PushCore

extension ProviderDescriptor {
    /// Apple Push Notification service: iOS devices, token auth (`.p8` key), HTTP/2.
    public static let apns = ProviderDescriptor(
        platform: .ios, addressing: .token(apnsEnvironment: true), credentialKind: .apns, label: .apns,
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
