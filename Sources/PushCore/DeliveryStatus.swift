/// The status of one delivery row (R-SEND-8), carried through its attempts: the spellings of
/// `push_deliveries.status`.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Not yet final: waiting for a retry at its `next_attempt_at` (R-SEND-12).
    case retrying
    /// Handed to the provider and accepted (final).
    case sent
    /// Final without reaching the device; `error_code` says why.
    case failed

    /// True for `sent` and `failed`: a final row is never written again (R-SEND-8).
    public var isFinal: Bool { self != .retrying }
}

/// A notification's final status (R-SEND-6), see `NotificationOutcome`.
public enum NotificationStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// At least one delivery was sent.
    case sent
    /// No delivery was sent and there is no SMS fallback; `error_code` says why.
    case failed
    /// No delivery was sent; the SMS fallback goes out instead.
    case smsFallback = "sms_fallback"
}

/// Where a notification is in its life, the spellings of `push_notifications.status`:
/// pending -> sending -> sent | sms_fallback | failed; pending -> cancelled.
public enum NotificationState: String, Sendable, Hashable, CaseIterable, Codable {
    /// Accepted, its send time not come (its notification job waits).
    case pending
    /// Its send time came: the policy was read and the audience split into batches (R-SEND-2).
    case sending
    /// Final: at least one delivery was sent.
    case sent
    /// Final: nothing was sent, the SMS fallback went out.
    case smsFallback = "sms_fallback"
    /// Final: nothing was sent.
    case failed
    /// Final: cancelled before its send time.
    case cancelled

    /// The state a final status is stored as.
    public init(_ final: NotificationStatus) {
        switch final {
        case .sent: self = .sent
        case .failed: self = .failed
        case .smsFallback: self = .smsFallback
        }
    }

    /// True once the notification ended (sent, sms_fallback, failed, cancelled).
    public var isFinal: Bool { self != .pending && self != .sending }
}
