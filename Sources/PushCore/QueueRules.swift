import typealias Foundation.TimeInterval

/// A queue job's kind, the spellings of `push_jobs.kind`.
public enum JobKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// The send-time step of a notification (R-SEND-2): policy, audience, split into batches.
    case notification
    /// A device batch: deliveries and their per-delivery retries.
    case batch
    /// One step after another of a whole-app audience's split into batch jobs (issue 22), made by
    /// the send-time step of a notification to `audience: all` and advanced by
    /// `push_split_audience` until it becomes the notification's last batch.
    case split

    /// Why a job of this kind cannot run for a notification in `state`, or nil when it can. The
    /// queue makes batch jobs only when a notification starts (`sending`) and ends a notification
    /// when its last batch is recorded: a batch job of a pending or final notification, or a
    /// notification job of a notification that already started, is a malformed row (written by
    /// hand, or by a bug), and running it would send a scheduled notification early, or again.
    public func malformation(notification state: NotificationState) -> String? {
        switch (self, state) {
        case (.batch, .sending), (.split, .sending), (.notification, .pending): return nil
        case (.batch, _): return "a batch job of a notification that is \(state.rawValue), not sending"
        case (.split, _): return "a split job of a notification that is \(state.rawValue), not sending"
        case (.notification, _): return "a notification job of a notification that is \(state.rawValue), not pending"
        }
    }
}

/// A queue job's state, the spellings of `push_jobs.state`:
/// available -> running -> completed | available (retry) | discarded; available -> cancelled.
public enum JobState: String, Sendable, Hashable, CaseIterable, Codable {
    case available, running, completed, discarded, cancelled
}

/// When a job that failed as a whole (not a delivery: the job itself, e.g. a database error while
/// it ran, or a row the worker could not read) runs again: `min(cap, 2^attempt)` seconds after
/// attempt `attempt` (2, 4, 8, ... s, capped at 300 s). The queue sets the job aside (discarded)
/// once its attempts are spent. The one owner of the job retry delay: the worker's failure path
/// and the store's undecodable-row path both ask it.
public struct JobRetryPolicy: Sendable, Hashable {
    /// Longest delay, seconds.
    public var capSeconds: TimeInterval

    /// The product default: capped at 300 s.
    public static let `default` = JobRetryPolicy(capSeconds: 300)

    /// Makes a policy (the cap is at least 1 s).
    public init(capSeconds: TimeInterval) { self.capSeconds = max(1, capSeconds) }

    /// The delay after attempt `attempt` (1-based; values below 1 count as 1).
    public func delay(afterAttempt attempt: Int) -> TimeInterval {
        let exponent = min(max(1, attempt), 62)
        return min(capSeconds, Double(UInt64(1) << UInt64(exponent)))
    }
}

/// The device limits (R-DEV-5, R-DEV-6): their one owner. `DeviceRegistry` passes them to
/// `push_register_device_v2` on every call; the SQL function holds no number of its own.
public enum DeviceLimits {
    /// R-DEV-5: active devices per user (per app and mode).
    public static let perUser = 20
    /// R-DEV-6: active devices per app in `mode`: 1,000,000 live, 1,000 test.
    public static func perApp(_ mode: Mode) -> Int64 {
        switch mode {
        case .live: return 1_000_000
        case .test: return 1_000
        }
    }
}
