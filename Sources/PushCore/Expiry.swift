import struct Foundation.Date
import typealias Foundation.TimeInterval

/// A notification's expiry (R-SEND-10): it expires at max(accepted, send_at) + ttl, with ttl
/// defaulting to and capped at 2,419,200 s (FCM's maximum, 28 days). A ttl of 0 means "now or
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

    /// Computes the expiry from acceptance, the optional `send_at` and the optional ttl.
    public init(accepted: Date, sendAt: Date?, ttlSeconds: Int?) {
        let ttl = min(max(ttlSeconds ?? Self.maxTTLSeconds, 0), Self.maxTTLSeconds)
        self.ttlSeconds = ttl
        self.expiresAt = Self.expiresAt(accepted: accepted, sendAt: sendAt, ttl: ttl)
    }

    /// max(accepted, sendAt) + ttl (ttl defaulted and clamped as in `init`).
    public static func expiresAt(accepted: Date, sendAt: Date?, ttl: Int?) -> Date {
        let clamped = min(max(ttl ?? maxTTLSeconds, 0), maxTTLSeconds)
        let start = max(accepted, sendAt ?? accepted)
        return start.addingTimeInterval(TimeInterval(clamped))
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
