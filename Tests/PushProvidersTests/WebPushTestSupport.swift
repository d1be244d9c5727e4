import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport

/// Clients and pushes for the Web Push tests.
enum WebPushTestSupport {
    static let subject = "mailto:ops@example.com"

    /// A client trusting the fakes' CA.
    static func client(keys: VAPIDKeys, allowLoopback: Bool = true, clock: ProviderClock = SystemProviderClock(),
                       resolver: WebPushResolver = SystemWebPushResolver(),
                       tokenCache: ProviderTokenCache = InMemoryProviderTokenCache()) throws -> WebPushClient {
        var config = WebPushClient.Configuration(subject: subject)
        config.allowLoopback = allowLoopback
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        return try WebPushClient.make(keys: keys, configuration: config, tokenCache: tokenCache, clock: clock,
                                      resolver: resolver)
    }

    /// A push of `plaintext` to `endpoint`, encrypted for `subscription` (RFC 8291) as the worker does.
    static func push(_ endpoint: String, to subscription: FakeWebPushSubscription, plaintext: String = #"{"title":"hi"}"#,
                     ttl: Int64 = 3600, priority: Priority = .high, collapseKey: String? = nil,
                     id: Int64 = 1) throws -> ProviderRequest {
        let body = try WebPushEncryption.encrypt(plaintext: Array(plaintext.utf8), p256dh: subscription.p256dh,
                                                 auth: subscription.auth)
        return ProviderRequest(deliveryId: id, deviceToken: endpoint, payload: body, priority: priority,
                               collapseId: collapseKey, apnsId: UUID().uuidString.lowercased(), ttlSeconds: ttl)
    }
}
