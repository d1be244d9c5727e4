import struct Foundation.Date
import typealias Foundation.TimeInterval

/// When a failed webhook attempt is tried again (R-HOOK-2): exponential backoff with jitter over
/// a window of about three days, then the delivery fails for good. A pure function: time and
/// jitter are parameters. Built on `RetryPolicy` (same doubling, cap and jitter rule), with the
/// window's end as the expiry.
///
/// After failed attempt n (1-based) the next attempt waits `min(12 h, 60 s · 2^(n-1))`, scaled
/// by `0.5 + 0.5 · jitter` (between half and all of it); an attempt that would start after the
/// window (72 h from the first attempt) is not made: the delivery ends `RETRIES_EXHAUSTED`.
///
/// | after failed attempt | nominal wait | attempt starts (nominal, from the first) |
/// |---|---|---|
/// | 1 | 1 min | 1 min |
/// | 2 | 2 min | 3 min |
/// | 3 | 4 min | 7 min |
/// | 4 | 8 min | 15 min |
/// | 5 | 16 min | 31 min |
/// | 6 | 32 min | 63 min |
/// | 7 | 64 min | 2 h 7 min |
/// | 8 | 2 h 8 min | 4 h 15 min |
/// | 9 | 4 h 16 min | 8 h 31 min |
/// | 10 | 8 h 32 min | 17 h 3 min |
/// | 11 and later | 12 h | 29 h 3 min, 41 h 3 min, 53 h 3 min, 65 h 3 min |
///
/// Nominally 15 attempts over 65 h; the jitter shortens waits, so a delivery to an endpoint that
/// never answers makes about 15 to 20 attempts before the 72 h window closes.
public struct WebhookRetryPolicy: Sendable, Hashable {
    /// The doubling rule (base, cap, jitter).
    public var backoff: RetryPolicy
    /// How long after the first attempt (or a resend) attempts may start, seconds.
    public var window: TimeInterval

    /// The product schedule: 60 s base, 12 h cap, 72 h window.
    public static let `default` = WebhookRetryPolicy(baseDelay: 60, maxDelay: 12 * 3600, window: 72 * 3600)

    /// A schedule (tests compress it: e.g. base 0.2 s).
    public init(baseDelay: TimeInterval, maxDelay: TimeInterval, window: TimeInterval) {
        backoff = RetryPolicy(baseDelay: baseDelay, maxDelay: maxDelay, maxFailedAttempts: Int(Int32.max),
                              minimumRetryAfter: 0)
        self.window = max(0, window)
    }

    /// The next attempt after `failedAttempts` failures (this one included), or nil when it would
    /// start after the window that opened at `windowStartedAt` (the delivery then fails for good).
    public func nextAttempt(failedAttempts: Int, windowStartedAt: Date, now: Date, jitter: Double) -> Date? {
        switch backoff.next(after: .transient, failedAttempts: max(1, failedAttempts), now: now,
                            expiresAt: windowStartedAt.addingTimeInterval(window), jitter: jitter) {
        case .retry(let at): return at
        case .exhausted, .expired: return nil
        }
    }
}
