import struct Foundation.Date
import typealias Foundation.TimeInterval

/// What one provider answer says about its host (R-KIND-4), apart from what it means for the
/// delivery (`ProviderAnswerTable`).
public enum HostSignal: Sendable, Hashable {
    /// The host answered (a 2xx, a token's 4xx, a 429 that is not a project's quota).
    case answered
    /// No connection or no answer: refused, reset, TLS failure, GOAWAY, timeout.
    case connectionFailure
    /// A 5xx response.
    case serverError
    /// FCM's 429 `QUOTA_EXCEEDED` for one device, with `Retry-After` seconds when given.
    case quotaExceeded(device: String, retryAfter: TimeInterval?)
    /// Says nothing about the host (the request was refused before it left: a forbidden Web Push
    /// endpoint, an OAuth refusal of the credentials, no client).
    case neutral

    /// FCM's `details[].errorCode` of a project's quota (Firebase's "ErrorCode": `QUOTA_EXCEEDED`,
    /// "Sending limit exceeded for the message target").
    public static let fcmQuotaReason = "QUOTA_EXCEEDED"

    /// The signal of `answer` for the delivery to `device`. A `.notSent` answer with a reason
    /// (`ENDPOINT_FORBIDDEN`, `oauth:...`) is neutral: nothing reached the host.
    public static func of(_ answer: ProviderAnswer, device: String) -> HostSignal {
        switch answer.transport {
        case .timeout, .connectionError:
            return .connectionFailure
        case .notSent:
            return answer.reason == nil ? .connectionFailure : .neutral
        case .response:
            guard let status = answer.httpStatus else { return .neutral }
            if (500...599).contains(status) { return .serverError }
            if status == 429 && answer.reason == fcmQuotaReason {
                return .quotaExceeded(device: device, retryAfter: answer.retryAfterSeconds)
            }
            return .answered
        }
    }

    /// True for the signals that count against a host (connection failures, timeouts, 5xx).
    public var isHostFailure: Bool {
        switch self {
        case .connectionFailure, .serverError: return true
        default: return false
        }
    }
}

/// One scope's recent answers as one worker saw them, and the pure detection of an outage or a
/// project-wide quota (R-KIND-4, thresholds in `OutageThresholds`). The window is ten buckets of a
/// tenth of `windowSeconds` each, so memory stays bounded whatever the request rate.
public struct HostHealth: Sendable, Hashable {
    /// What an observation decided.
    public enum Verdict: Sendable, Hashable {
        /// Nothing to do.
        case healthy
        /// Pause the scope for this cause; `retryAfter` for a quota pause.
        case pause(PauseCause, retryAfter: TimeInterval?)
    }

    private struct Bucket: Sendable, Hashable {
        var index: Int64
        var total = 0
        var failed = 0
    }

    private static let buckets = 10
    private var ring: [Bucket] = []
    private(set) public var consecutiveFailures = 0
    /// Devices answered `QUOTA_EXCEEDED` recently, with when (pruned to the window).
    private var quota: [String: Date] = [:]
    private var lastRetryAfter: TimeInterval?

    public init() {}

    /// Requests and failed requests within the window ending at `now`.
    public func window(now: Date, thresholds: OutageThresholds) -> (total: Int, failed: Int) {
        let current = Self.bucketIndex(now, thresholds)
        var total = 0, failed = 0
        for b in ring where b.index > current - Int64(Self.buckets) && b.index <= current {
            total += b.total
            failed += b.failed
        }
        return (total, failed)
    }

    /// Records one answer's signal at `now` and says whether the scope must be paused. An outage
    /// is `consecutiveFailures` connection failures in a row (a 5xx, an answer in between resets
    /// the run) or `windowFailureRatio` of at least `windowMinimumRequests` requests within the
    /// window; a quota is `quotaDistinctDevices` distinct devices answered `QUOTA_EXCEEDED` within
    /// the window. A neutral signal changes nothing.
    public mutating func observe(_ signal: HostSignal, now: Date, thresholds: OutageThresholds) -> Verdict {
        switch signal {
        case .neutral:
            return .healthy
        case .quotaExceeded(let device, let retryAfter):
            quota = quota.filter { now.timeIntervalSince($0.value) < thresholds.windowSeconds }
            quota[device] = now
            lastRetryAfter = retryAfter ?? lastRetryAfter
            count(failed: false, now: now, thresholds: thresholds)
            consecutiveFailures = 0
            if quota.count >= thresholds.quotaDistinctDevices {
                let after = lastRetryAfter
                quota = [:]
                lastRetryAfter = nil
                return .pause(.quotaExceeded, retryAfter: after)
            }
            return .healthy
        case .answered:
            consecutiveFailures = 0
            count(failed: false, now: now, thresholds: thresholds)
            return .healthy
        case .serverError, .connectionFailure:
            consecutiveFailures = signal == .connectionFailure ? consecutiveFailures + 1 : 0
            count(failed: true, now: now, thresholds: thresholds)
            if consecutiveFailures >= thresholds.consecutiveFailures {
                return .pause(.connectionFailures, retryAfter: nil)
            }
            let w = window(now: now, thresholds: thresholds)
            if w.total >= thresholds.windowMinimumRequests
                && Double(w.failed) >= thresholds.windowFailureRatio * Double(w.total) {
                return .pause(.failureRatio, retryAfter: nil)
            }
            return .healthy
        }
    }

    /// Forgets the run and the window (after a pause starts or ends: the next verdict needs new answers).
    public mutating func reset() {
        ring = []
        consecutiveFailures = 0
        quota = [:]
        lastRetryAfter = nil
    }

    private mutating func count(failed: Bool, now: Date, thresholds: OutageThresholds) {
        let index = Self.bucketIndex(now, thresholds)
        ring.removeAll { $0.index <= index - Int64(Self.buckets) }
        if let i = ring.firstIndex(where: { $0.index == index }) {
            ring[i].total += 1
            if failed { ring[i].failed += 1 }
        } else {
            ring.append(Bucket(index: index, total: 1, failed: failed ? 1 : 0))
        }
    }

    private static func bucketIndex(_ now: Date, _ t: OutageThresholds) -> Int64 {
        let width = t.windowSeconds / Double(buckets)
        let raw = (now.timeIntervalSince1970 / width).rounded(.down)
        return raw.isFinite ? Int64(max(min(raw, 9e17), -9e17)) : 0
    }
}
