/// What a notification says and how it travels (R-SEND-1), as the worker reads it at send time.
///
/// `title`, `body`, `data`, `badge`, `sound`, `threadId` and the `localization` are content (sealed
/// for encrypted deliveries, R-ENC-3, R-KIND-3); `collapseKey`, `priority`, `pushType` travel outside
/// any envelope (R-ENC-6, R-SEND-10, R-KIND-1), and so do the iOS `presentation` fields (R-KIND-2)
/// and the Android `channelId` (plaintext Android only; an encrypted Android app picks its channel).
public struct NotificationContent: Sendable, Hashable {
    /// APNs' limit for `apns-collapse-id`, applied to every platform (R-SEND-13): 64 UTF-8 bytes.
    public static let maxCollapseKeyBytes = 64

    /// Title, if the notification has one.
    public var title: String?
    /// Body, if the notification has one.
    public var body: String?
    /// Custom data: a JSON object in the client's key order (see `JSONParser.parseDataObject`).
    public var data: JSONObject?
    /// App-icon badge number.
    public var badge: Int?
    /// Sound name (e.g. `"default"`).
    public var sound: String?
    /// Thread / grouping id (APNs `thread-id`, Android `tag`).
    public var threadId: String?
    /// Collapse key (APNs `apns-collapse-id`, FCM `collapse_key`, Web Push `Topic`); never sealed.
    public var collapseKey: String?
    /// Priority (R-SEND-10), `high` by default.
    public var priority: Priority
    /// Alert (default) or background (R-KIND-1).
    public var pushType: PushType
    /// iOS presentation fields (R-KIND-2); ignored for Android and Web devices.
    public var presentation: IOSPresentation
    /// The notification's own localized title and body (R-KIND-3).
    public var localization: LocalizedText
    /// Android notification channel (`android.notification.channel_id`), plaintext Android only.
    public var channelId: String?

    /// Makes content; every field is optional except `priority` (default `.high`) and `pushType`
    /// (default `.alert`).
    public init(title: String? = nil, body: String? = nil, data: JSONObject? = nil, badge: Int? = nil,
                sound: String? = nil, threadId: String? = nil, collapseKey: String? = nil,
                priority: Priority = .high, pushType: PushType = .alert, presentation: IOSPresentation = IOSPresentation(),
                localization: LocalizedText = LocalizedText(), channelId: String? = nil) {
        self.title = title
        self.body = body
        self.data = data
        self.badge = badge
        self.sound = sound
        self.threadId = threadId
        self.collapseKey = collapseKey
        self.priority = priority
        self.pushType = pushType
        self.presentation = presentation
        self.localization = localization
        self.channelId = channelId
    }

    /// Acceptance checks that do not depend on devices: a collapse key of at most 64 UTF-8 bytes
    /// (R-SEND-13), a non-negative badge, and no `data` key that FCM reserves (`from`,
    /// `message_type`, `google.*`, `gcm.*`: Firebase's "REST Resource: projects.messages", field `data`)
    /// or that the honkio Android SDK reads as the envelope (`hk`, R-ENC-5) *(product decision)*.
    /// - Throws: `PushError` with code `.validationError`.
    public func validate() throws {
        let members = data?.members ?? []
        for (i, member) in members.enumerated() where Self.isReservedDataKey(member.key) {
            throw PushError(.validationError, "data: key \(i + 1) of \(members.count) is reserved (hk, from, message_type, google.*, gcm.*)",
                            field: "data")
        }
        if let key = collapseKey, key.utf8.count > Self.maxCollapseKeyBytes {
            throw PushError(.validationError,
                            "collapse_key: \(key.utf8.count) bytes, at most \(Self.maxCollapseKeyBytes) allowed",
                            field: "collapse_key")
        }
        if let badge = badge, badge < 0 {
            throw PushError(.validationError, "badge: must not be negative", field: "badge")
        }
        try validateKind()
    }

    /// True for `data` keys refused by `validate()`: `hk`, `from`, `message_type`, `google.*`, `gcm.*`.
    public static func isReservedDataKey(_ key: String) -> Bool {
        key == "hk" || key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.")
    }
}

/// The app's placeholder shown by iOS for an encrypted notification (R-APP-1, R-ENC-4): a literal
/// title and body, or, per part, a localization key (R-KIND-3) that each phone looks up in its own
/// language (`aps.alert` `title-loc-key` / `loc-key`, never with arguments).
public struct AppPlaceholders: Sendable, Hashable {
    /// Default `placeholder_title`.
    public static let defaultTitle = "New notification"
    /// Default `placeholder_body` (emitted as `""`).
    public static let defaultBody = ""

    /// `placeholder_title`.
    public var title: String
    /// `placeholder_body`.
    public var body: String
    /// `placeholder_title_loc_key`: sent as `title-loc-key` instead of `title` when set.
    public var titleLocKey: String?
    /// `placeholder_body_loc_key`: sent as `loc-key` instead of `body` when set.
    public var bodyLocKey: String?

    /// Makes placeholders; defaults `New notification`, the empty string and no loc keys.
    public init(title: String = AppPlaceholders.defaultTitle, body: String = AppPlaceholders.defaultBody,
                titleLocKey: String? = nil, bodyLocKey: String? = nil) {
        self.title = title
        self.body = body
        self.titleLocKey = titleLocKey
        self.bodyLocKey = bodyLocKey
    }
}
