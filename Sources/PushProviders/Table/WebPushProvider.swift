import PushCore
import PushCrypto

extension ProviderDescriptor {
    /// Web Push (RFC 8030, 8291, 8292): browser subscriptions, a VAPID key pair; the endpoint's
    /// address is checked at send time.
    public static let webPush = ProviderDescriptor(
        platform: .web, addressing: .subscription, credentialKind: .webpush, label: .webpush,
        payload: WebPushPayloadWriter(), answers: WebPushAnswerRules()
    ) { set, settings in
        var c = WebPushClient.Configuration(subject: set.identifiers["subject"] ?? "")
        c.allowLoopback = settings.allowLoopback
        c.http = settings.http
        return try WebPushClient.make(keys: try VAPIDKeys(privateKeyPEM: String(decoding: set.secret, as: UTF8.self)),
                                      configuration: c, resolver: settings.resolver)
    }
}
