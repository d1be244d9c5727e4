import PushCore
import PushCrypto

extension ProviderDescriptor {
    /// Web Push (RFC 8030, 8291, 8292): browser subscriptions, a VAPID key pair; the endpoint's
    /// address is checked at send time.
    public static let webPush = ProviderDescriptor(
        platform: .web, addressing: .subscription, credentials: WebPushCredentialRules(), label: .webpush,
        payload: WebPushPayloadWriter(), answers: WebPushAnswerRules()
    ) { set, settings in
        var c = WebPushClient.Configuration(subject: set.identifiers["subject"] ?? "")
        c.allowLoopback = settings.allowLoopback
        c.http = settings.http
        return try WebPushClient.make(keys: try VAPIDKeys(privateKeyPEM: String(decoding: set.secret, as: UTF8.self)),
                                      configuration: c, resolver: settings.resolver)
    }
}

/// A Web Push set: `subject` in `config`, the VAPID private key PEM as the secret
/// (`CredentialValidation.webpush`).
public struct WebPushCredentialRules: CredentialRules {
    /// Makes the rules.
    public init() {}

    public var kind: CredentialKind { .webpush }
    public var identifierKeys: [String] { ["subject"] }
    public func validate(config: [String: String], secret: [UInt8]) throws -> [String: String] {
        try CredentialValidation.webpush(subject: config["subject"] ?? "", privateKeyPEM: secret)
    }
}
