import PushCore

extension ProviderDescriptor {
    /// Firebase Cloud Messaging HTTP v1: Android devices, a Google service account (OAuth2).
    public static let fcm = ProviderDescriptor(
        platform: .android, addressing: .token(apnsEnvironment: false), credentialKind: .fcm, label: .fcm,
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
