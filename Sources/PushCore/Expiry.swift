import struct Foundation.Date
import typealias Foundation.TimeInterval

/// A notification's expiry (R-SEND-10): it expires at max(accepted, send_at) + ttl, with ttl
/// defaulting to and capped at 2,419,200 s (FCM's maximum, 28 days), as `push_enqueue` computes
/// and stores it (`push_expires_at`); this type reads the stored instant. A ttl of 0 means "now or
/// never": one attempt at send time with `apns-expiration: 0` / FCM `ttl: "0s"` / `TTL: 0`, no retry.
public struct Expiry: Sendable, Hashable {
    /// Default and largest ttl, seconds.
    public static let maxTTLSeconds = 2_419_200

    /// The instant after which nothing is sent.
    public let expiresAt: Date
    /// The effective ttl (defaulted, clamped to 0...maxTTLSeconds).
    public let ttlSeconds: Int

    /// What one request carries (R-SEND-10).
    public struct RequestTTL: Sendable, Hashable {
        /// `apns-expiration`: UNIX seconds of the expiry (rounded down), or 0 for now-or-never.
        public let apnsExpiration: Int64
        /// FCM `ttl` / Web Push `TTL`: whole seconds left (rounded down), 0 for now-or-never.
        public let secondsLeft: Int
    }

    /// The expiry as `push_enqueue` stored it (`push_notifications.expires_at`, computed there from
    /// the database's acceptance instant, the optional `send_at` and the ttl) with the stored ttl
    /// (clamped to 0...maxTTLSeconds). The worker reads the stored expiry rather than computing it
    /// again: one owner of the formula, the SQL function that stores the notification.
    public init(expiresAt: Date, ttlSeconds: Int) {
        self.ttlSeconds = min(max(ttlSeconds, 0), Self.maxTTLSeconds)
        self.expiresAt = expiresAt
    }

    /// True for ttl 0 ("now or never").
    public var isNowOrNever: Bool { ttlSeconds == 0 }

    /// What a request sent at `now` carries, or nil when the delivery must fail `EXPIRED` instead.
    /// `firstAttempt` matters only for now-or-never, whose single attempt is its first.
    public func request(now: Date, firstAttempt: Bool) -> RequestTTL? {
        if isNowOrNever {
            return firstAttempt ? RequestTTL(apnsExpiration: 0, secondsLeft: 0) : nil
        }
        let left = expiresAt.timeIntervalSince(now)
        guard left >= 1 else { return nil }
        return RequestTTL(apnsExpiration: Int64(expiresAt.timeIntervalSince1970.rounded(.down)),
                          secondsLeft: Int(left.rounded(.down)))
    }
}
