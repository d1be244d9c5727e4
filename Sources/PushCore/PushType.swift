/// What kind of push a notification is (R-KIND-1): an `alert` the user sees (the default), or a
/// `background` (silent) push that only wakes the app with its `data`.
///
/// The headers each provider gets follow from the push type and the notification's priority
/// (R-SEND-10), here in one place:
/// - APNs `apns-push-type`: `alert` or `background`; `apns-priority`: the priority's 10 or 5 for an
///   alert, always 5 for a background push (Apple's "Sending notification requests to APNs":
///   background notifications must use priority 5, and 10 is an error);
/// - FCM `android.priority`: the priority's `HIGH` or `NORMAL` whatever the push type (a data-only
///   message at `HIGH` wakes the device);
/// - Web Push `Urgency` (RFC 8030 §5.3): the priority's `high` or `normal` for an alert, `low` for a
///   background push (browsers have no silent push: the service worker still gets an ordinary one).
public enum PushType: String, Sendable, Hashable, CaseIterable, Codable {
    /// Shown to the user (the default).
    case alert
    /// Silent: data only, `content-available` on iOS, nothing shown.
    case background

    /// The `apns-push-type` header value.
    public var apnsPushType: String { rawValue }

    /// The `apns-priority` header value for a notification of `priority`: 5 for a background push
    /// whatever the priority, else the priority's own (10 or 5).
    public func apnsPriority(_ priority: Priority) -> Int {
        self == .background ? 5 : priority.apnsPriority
    }

    /// `apnsPriority(_:)` as the header's text, `"10"` or `"5"` (literals: nothing formatted per request).
    public func apnsPriorityText(_ priority: Priority) -> String {
        apnsPriority(priority) == 10 ? "10" : "5"
    }

    /// The Web Push `Urgency` header for a notification of `priority`: `low` for a background
    /// push, else the priority's own (`high` or `normal`).
    public func webPushUrgency(_ priority: Priority) -> String {
        self == .background ? "low" : priority.webPushUrgency
    }
}
