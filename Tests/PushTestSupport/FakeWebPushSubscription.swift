import Foundation
import PushCrypto

/// One browser subscription known to the fake Web Push service: its path on the fake and the user
/// agent's keys (the private key lets the fake decrypt what we send, RFC 8291).
public struct FakeWebPushSubscription {
    /// Path on the fake, e.g. `/push/ok-1`; the segment before the last `-` picks the fake's answer.
    public let path: String
    /// The user agent's P-256 private key (32 bytes).
    public let privateKey: [UInt8]
    /// The user agent's public key, uncompressed point (65 bytes).
    public let p256dh: [UInt8]
    /// The 16-byte authentication secret.
    public let auth: [UInt8]
    /// The only VAPID public key (base64url) the fake accepts for this subscription; nil = any.
    public let vapidPublicKey: String?

    /// A fresh subscription for `path`.
    /// - Throws: `CryptoError` from key generation.
    public static func make(_ path: String, vapidPublicKey: String? = nil) throws -> FakeWebPushSubscription {
        let privateKey = try WebPushDecryption.generatePrivateKey()
        return FakeWebPushSubscription(path: path, privateKey: privateKey,
                                       p256dh: try WebPushDecryption.publicKey(privateKey: privateKey),
                                       auth: (0..<16).map { _ in UInt8.random(in: 0...255) },
                                       vapidPublicKey: vapidPublicKey)
    }

    /// A fresh subscription at `/push/<scenario>-<random hex>`; the scenario picks the fake's answer.
    /// - Throws: `CryptoError` from key generation.
    public static func make(scenario: String, vapidPublicKey: String? = nil) throws -> FakeWebPushSubscription {
        let suffix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        return try make("/push/\(scenario)-\(suffix)", vapidPublicKey: vapidPublicKey)
    }

    /// The entry of the fake's subscriptions file (`path`, `p256dh`, `auth`, `private_key`, base64url,
    /// and `vapid_public_key` when pinned).
    public var json: [String: String] {
        var entry = ["path": path, "p256dh": Base64URL.encode(p256dh), "auth": Base64URL.encode(auth),
                     "private_key": Base64URL.encode(privateKey)]
        if let vapidPublicKey { entry["vapid_public_key"] = vapidPublicKey }
        return entry
    }
}
