/// Delivery priority (R-SEND-10): `high` is the default.
public enum Priority: String, Sendable, Hashable, CaseIterable, Codable {
    /// Deliver now: `apns-priority: 10`, FCM `android.priority: HIGH`, Web Push `Urgency: high`.
    case high
    /// Deliver when convenient: `apns-priority: 5`, FCM `NORMAL`, Web Push `Urgency: normal`.
    case normal

    /// The `apns-priority` header value: 10 or 5.
    public var apnsPriority: Int {
        switch self {
        case .high: return 10
        case .normal: return 5
        }
    }

    /// FCM `android.priority`: `"HIGH"` or `"NORMAL"`.
    public var fcmPriority: String {
        switch self {
        case .high: return "HIGH"
        case .normal: return "NORMAL"
        }
    }

    /// Web Push `Urgency` header (RFC 8030 §5.3): `"high"` or `"normal"`.
    public var webPushUrgency: String { rawValue }
}
