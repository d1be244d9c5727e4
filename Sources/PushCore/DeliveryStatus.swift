/// The status of one delivery row (R-SEND-8), carried through its attempts.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Not yet final: waiting for its first attempt or for a retry.
    case pending
    /// Handed to the provider and accepted (final).
    case sent
    /// Final without reaching the device; `error_code` says why.
    case failed
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
