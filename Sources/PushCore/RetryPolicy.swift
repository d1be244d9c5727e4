import struct Foundation.Date
import typealias Foundation.TimeInterval

/// R-SEND-12 retries, per delivery, as a pure function (time and jitter are parameters).
///
/// A transient failure (5xx, timeout, reset, GOAWAY, the simulator's `test_unavailable` /
/// `test_timeout`) counts as a failed attempt. After failed attempt n (1-based) the next try waits
/// `min(cap, base · 2^(n-1))` scaled by `0.5 + 0.5 · jitter` (so between half and all of it):
///
/// | failed attempts | nominal delay | with jitter |
/// |---|---|---|
/// | 1 | 1 s | 0.5–1 s |
/// | 2 | 2 s | 1–2 s |
/// | 3 | 4 s | 2–4 s |
/// | 4 | 8 s | 4–8 s |
/// | 5 | 16 s | 8–16 s |
/// | 6 | 32 s | 16–32 s |
/// | 7 | 64 s | 32–64 s |
/// | 8 | — | `.exhausted` (`RETRIES_EXHAUSTED`) |
///
/// The cap (300 s) matters only with a larger `maxFailedAttempts`. A deferral ("retry after", e.g.
/// APNs/FCM 429, the simulator's `test_rate_limited`) is not a failed attempt: it waits the time
/// given (at least `minimumRetryAfter`), or, when none is given, the backoff for the number of
/// deferrals so far. Nothing is scheduled at or past the notification's expiry: that is `.expired`.
public struct RetryPolicy: Sendable, Hashable {
    /// What the last attempt's answer asks for.
    public enum Answer: Sendable, Hashable {
        /// A transient failure: counts as a failed attempt.
        case transient
        /// "Retry after" (seconds, when given): does not count as a failed attempt.
        case deferral(retryAfter: TimeInterval?)
    }

    /// What to do next.
    public enum Decision: Sendable, Hashable {
        /// Try again at this instant.
        case retry(at: Date)
        /// Out of attempts: fail with `RETRIES_EXHAUSTED`.
        case exhausted
        /// The next try would be at or past expiry: fail with `EXPIRED`.
        case expired

        /// The final error code for `.exhausted` / `.expired`, nil for `.retry`.
        public var errorCode: ErrorCode? {
            switch self {
            case .retry: return nil
            case .exhausted: return .retriesExhausted
            case .expired: return .expired
            }
        }
    }

    /// First backoff delay, seconds.
    public var baseDelay: TimeInterval
    /// Largest backoff delay, seconds.
    public var maxDelay: TimeInterval
    /// Failed attempts allowed in all; reaching it gives `.exhausted`.
    public var maxFailedAttempts: Int
    /// Smallest wait honoured for a "retry after" (a 0 or negative value is raised to this).
    public var minimumRetryAfter: TimeInterval

    /// The product default: 1 s base, 300 s cap, 8 failed attempts, 1 s minimum retry-after.
    public static let `default` = RetryPolicy(baseDelay: 1, maxDelay: 300, maxFailedAttempts: 8, minimumRetryAfter: 1)

    /// Makes a policy; values are clamped to sane minimums (base ≥ 0.001 s, cap ≥ base, attempts ≥ 1).
    public init(baseDelay: TimeInterval, maxDelay: TimeInterval, maxFailedAttempts: Int, minimumRetryAfter: TimeInterval) {
        self.baseDelay = max(0.001, baseDelay)
        self.maxDelay = max(self.baseDelay, maxDelay)
        self.maxFailedAttempts = max(1, maxFailedAttempts)
        self.minimumRetryAfter = max(0, minimumRetryAfter)
    }

    /// Nominal backoff (before jitter) after `n` failures (n ≥ 1): `min(maxDelay, baseDelay · 2^(n-1))`,
    /// capped before exponentiation overflows.
    public func nominalDelay(afterFailures n: Int) -> TimeInterval {
        let exponent = min(max(0, n - 1), 62)
        let raw = baseDelay * Double(UInt64(1) << UInt64(exponent))
        return min(maxDelay, raw)
    }

    /// Decides the next step.
    /// - Parameters:
    ///   - answer: the last attempt's class.
    ///   - failedAttempts: failed attempts so far, including this one when `answer` is `.transient`.
    ///   - deferrals: deferrals so far, including this one when `answer` is `.deferral`.
    ///   - now: the current instant.
    ///   - expiresAt: the notification's expiry (R-SEND-10).
    ///   - jitter: a random value in [0, 1) (clamped).
    public func next(after answer: Answer, failedAttempts: Int, deferrals: Int = 1, now: Date,
                     expiresAt: Date, jitter: Double) -> Decision {
        let delay: TimeInterval
        switch answer {
        case .transient:
            if failedAttempts >= maxFailedAttempts { return .exhausted }
            delay = jittered(nominalDelay(afterFailures: failedAttempts), jitter)
        case .deferral(let retryAfter):
            if let given = retryAfter, given.isFinite {
                delay = max(minimumRetryAfter, given)
            } else {
                delay = jittered(nominalDelay(afterFailures: max(1, deferrals)), jitter)
            }
        }
        let at = now.addingTimeInterval(delay)
        return at < expiresAt ? .retry(at: at) : .expired
    }

    private func jittered(_ delay: TimeInterval, _ jitter: Double) -> TimeInterval {
        let j = jitter.isFinite ? min(max(jitter, 0), 1) : 0
        return delay * (0.5 + 0.5 * j)
    }
}
