/// The webhook event types (R-HOOK-1, issue 19). The raw value is the `type` of the
/// webhook body and of `push_events.type`; it never changes once released.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// A device was deactivated: the provider said its token is no longer valid (`UNREGISTERED`),
    /// malformed (`INVALID_TOKEN`) or another app's (`APP_MISMATCH`, R-PRV-1/2), or the user's
    /// 21st device displaced it (`DEVICE_LIMIT`, R-DEV-5). Deleting a device fires nothing (R-DEV-4).
    case pushDeviceDeactivated = "push_device.deactivated"
    /// An app's live credential set was marked invalid (R-PRV-2, R-PRV-3). Live mode only (R-APP-3).
    case pushAppCredentialsInvalid = "push_app.credentials_invalid"
    /// An app's `require_encryption` was turned off (R-APP-1). Live mode (the API lets only a live
    /// credential change it).
    case pushAppEncryptionDisabled = "push_app.encryption_disabled"
    /// A notification reached its final status (sent, sms_fallback, failed, cancelled). Opt-in.
    case pushNotificationFinished = "push_notification.finished"
    /// A notification's SMS fallback reached its final state (queued, failed, unknown; R-SMS-1),
    /// after the notification's own `push_notification.finished` (which says `sms: queued`). Opt-in.
    case pushNotificationSMSFinished = "push_notification.sms_finished"

    /// True for types an endpoint gets only when it names them (one event per notification is
    /// a lot of traffic nobody asked for).
    public var isOptIn: Bool { self == .pushNotificationFinished || self == .pushNotificationSMSFinished }

    /// What an endpoint created without a list of types receives: every type except the opt-in ones.
    public static let defaultSubscription: [WebhookEventType] = allCases.filter { !$0.isOptIn }
}
