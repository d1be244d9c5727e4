import struct Foundation.UUID

/// One FCM HTTP v1 message (Firebase's "REST Resource: projects.messages"), built byte-exact for
/// encrypted (R-ENC-5) and plaintext (R-PLAIN-2) deliveries. `requestBody(ttlSeconds:)` gives the whole
/// POST body: `{"message":{"token":…[,"notification":{…}][,"data":{…}],"android":{"priority":"HIGH",
/// "ttl":"123s"[,"collapse_key":…][,"notification":{"sound","tag","notification_count","channel_id",
/// "title_loc_key","title_loc_args","body_loc_key","body_loc_args"}]}}}`. A background push (R-KIND-1)
/// is a data-only message whatever the key: the content validation leaves it nothing else.
public struct FCMMessage: Sendable, Hashable {
    /// One `data` entry; FCM data values are strings only.
    public struct DataEntry: Sendable, Hashable {
        /// Key.
        public var key: String
        /// String value.
        public var value: String
        /// Makes an entry.
        public init(_ key: String, _ value: String) { self.key = key; self.value = value }
    }

    /// FCM `notification` block (plaintext only).
    public struct Notification: Sendable, Hashable {
        /// Title, if any.
        public var title: String?
        /// Body, if any.
        public var body: String?
    }

    /// FCM `android.notification` block (plaintext only, R-PLAIN-2, R-KIND-3).
    public struct AndroidNotification: Sendable, Hashable {
        /// Sound name.
        public var sound: String?
        /// Tag (= thread_id).
        public var tag: String?
        /// Badge (= badge).
        public var notificationCount: Int?
        /// Notification channel (= channel_id).
        public var channelId: String?
        /// The localized title and body keys and arguments (= the notification's loc fields).
        public var localization = LocalizedText()

        /// True when the block would be empty.
        var isEmpty: Bool { sound == nil && tag == nil && notificationCount == nil && channelId == nil && localization.isEmpty }
    }

    /// Registration token.
    public var token: String
    /// `notification` block, nil for encrypted (data-only) messages.
    public var notification: Notification?
    /// `data` entries in order (`[("hk", envelope JSON)]` when encrypted).
    public var data: [DataEntry]
    /// `android.priority` (R-SEND-10).
    public var priority: Priority
    /// `android.collapse_key` (R-ENC-6: outside the envelope).
    public var collapseKey: String?
    /// `android.notification` block, nil for encrypted messages.
    public var androidNotification: AndroidNotification?

    /// Makes a message from its parts.
    public init(token: String, notification: Notification? = nil, data: [DataEntry], priority: Priority,
                collapseKey: String? = nil, androidNotification: AndroidNotification? = nil) {
        self.token = token
        self.notification = notification
        self.data = data
        self.priority = priority
        self.collapseKey = collapseKey
        self.androidNotification = androidNotification
    }

    /// Encrypted data-only message (R-ENC-5): `data.hk` = the envelope's compact JSON as a string.
    public static func encrypted(token: String, content: NotificationContent, envelope: Envelope) -> FCMMessage {
        FCMMessage(token: token, data: [DataEntry("hk", String(decoding: envelope.jsonBytes, as: UTF8.self))],
                   priority: content.priority, collapseKey: content.collapseKey)
    }

    /// `ids_only` data-only message (R-IDS-1), the same for every device whatever its key:
    /// `data.pf` = `IDsOnlyMarker.json` as a string, nothing else of the notification; priority and
    /// collapse key as for any message (R-SEND-10, R-ENC-6). An alert and a background push are
    /// the same message: the app fetches the content and shows it itself (as for R-ENC-5).
    public static func idsOnly(token: String, content: NotificationContent, notificationID: UUID) -> FCMMessage {
        FCMMessage(token: token, data: [DataEntry(IDsOnlyMarker.key, String(decoding: IDsOnlyMarker.json(notificationID: notificationID),
                                                                         as: UTF8.self))],
                   priority: content.priority, collapseKey: content.collapseKey)
    }

    /// Plaintext message (R-PLAIN-2): `notification` = {title, body}; `data` values as strings (a
    /// non-string JSON value as its compact JSON text); `android.notification` = sound, tag
    /// (thread_id), notification_count (badge), channel_id, and the loc keys and args (R-KIND-3);
    /// blocks without fields are left out. The iOS presentation fields are not Android's (R-KIND-2).
    public static func plaintext(token: String, content: NotificationContent) -> FCMMessage {
        var notification: Notification?
        if content.title != nil || content.body != nil {
            notification = Notification(title: content.title, body: content.body)
        }
        var android: AndroidNotification? = AndroidNotification(
            sound: content.sound, tag: content.threadId, notificationCount: content.badge, channelId: content.channelId,
            localization: content.localization)
        if android?.isEmpty == true { android = nil }
        let entries = (content.data?.members ?? []).map { member -> DataEntry in
            if case .string(let s) = member.value { return DataEntry(member.key, s) }
            return DataEntry(member.key, JSONWriter.string(member.value))
        }
        return FCMMessage(token: token, notification: notification, data: entries, priority: content.priority,
                          collapseKey: content.collapseKey, androidNotification: android)
    }

    /// The R-SEND-7 measure: `data` keys and values plus `notification` title and body, in UTF-8 bytes,
    /// and the localized title and body keys and arguments (they are what the notification shows in
    /// place of a title and body, R-KIND-3).
    public var ruleSize: Int {
        var n = 0
        for entry in data { n += entry.key.utf8.count + entry.value.utf8.count }
        n += notification?.title?.utf8.count ?? 0
        n += notification?.body?.utf8.count ?? 0
        n += androidNotification?.localization.textBytes ?? 0
        return n
    }

    /// The compact JSON of the `data` object alone (compare with the vector's `fcm_data`).
    public var dataJSON: [UInt8] {
        var out = [UInt8]()
        appendData(to: &out)
        return out
    }

    /// The whole request body for `POST …/messages:send`, with `android.ttl` = `"<ttlSeconds>s"`
    /// (the seconds left before expiry, R-SEND-10).
    public func requestBody(ttlSeconds: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(ruleSize + 256)
        out.append(contentsOf: #"{"message":{"token":"#.utf8)
        JSONWriter.appendString(token, to: &out)
        if let n = notification {
            out.append(contentsOf: #","notification":{"#.utf8)
            var comma = false
            appendOptional("title", n.title, comma: &comma, to: &out)
            appendOptional("body", n.body, comma: &comma, to: &out)
            out.append(0x7d)
        }
        if !data.isEmpty {
            out.append(contentsOf: #","data":"#.utf8)
            appendData(to: &out)
        }
        out.append(contentsOf: #","android":{"priority":"#.utf8)
        JSONWriter.appendString(priority.fcmPriority, to: &out)
        out.append(contentsOf: #","ttl":"#.utf8)
        JSONWriter.appendString("\(max(0, ttlSeconds))s", to: &out)
        if let key = collapseKey {
            out.append(contentsOf: #","collapse_key":"#.utf8)
            JSONWriter.appendString(key, to: &out)
        }
        if let a = androidNotification {
            out.append(contentsOf: #","notification":{"#.utf8)
            var comma = false
            appendOptional("sound", a.sound, comma: &comma, to: &out)
            appendOptional("tag", a.tag, comma: &comma, to: &out)
            if let count = a.notificationCount {
                appendKey("notification_count", comma: &comma, to: &out)
                out.append(contentsOf: String(count).utf8)
            }
            appendOptional("channel_id", a.channelId, comma: &comma, to: &out)
            let loc = a.localization
            appendOptional("title_loc_key", loc.titleLocKey, comma: &comma, to: &out)
            appendOptional("title_loc_args", loc.titleLocArgs, comma: &comma, to: &out)
            appendOptional("body_loc_key", loc.bodyLocKey, comma: &comma, to: &out)
            appendOptional("body_loc_args", loc.bodyLocArgs, comma: &comma, to: &out)
            out.append(0x7d)
        }
        out.append(contentsOf: "}}}".utf8)
        return out
    }

    // MARK: - Private

    private func appendData(to out: inout [UInt8]) {
        out.append(0x7b)
        for (i, entry) in data.enumerated() {
            if i > 0 { out.append(0x2c) }
            JSONWriter.appendString(entry.key, to: &out)
            out.append(0x3a)
            JSONWriter.appendString(entry.value, to: &out)
        }
        out.append(0x7d)
    }

    private func appendKey(_ key: String, comma: inout Bool, to out: inout [UInt8]) {
        if comma { out.append(0x2c) }
        comma = true
        JSONWriter.appendString(key, to: &out)
        out.append(0x3a)
    }

    private func appendOptional(_ key: String, _ value: String?, comma: inout Bool, to out: inout [UInt8]) {
        guard let value = value else { return }
        appendKey(key, comma: &comma, to: &out)
        JSONWriter.appendString(value, to: &out)
    }

    private func appendOptional(_ key: String, _ values: [String]?, comma: inout Bool, to out: inout [UInt8]) {
        guard let values = values else { return }
        appendKey(key, comma: &comma, to: &out)
        JSONWriter.appendStrings(values, to: &out)
    }
}
