import struct Foundation.UUID

/// APNs request bodies, byte-exact (R-ENC-4, R-ENC-9, R-PLAIN-1, R-KIND-1..3). Key order in `aps`:
/// `alert`, `mutable-content`, `badge`, `sound`, `thread-id`, then the presentation fields
/// `interruption-level`, `relevance-score`, `category`, `target-content-id` (R-KIND-2); a background
/// push's `aps` is `{"content-available":1}` alone. Top level: `aps` then `hk` (or `data`).
public enum APNsPayload {
    /// Encrypted body. Alert: `{"aps":{"alert":{PLACEHOLDER},"mutable-content":1[,"badge":n]
    /// [,"sound":s][,"thread-id":t][,presentation fields]},"hk":ENVELOPE}`, where PLACEHOLDER is
    /// `"title":P` or `"title-loc-key":K`, then `"body":P` or `"loc-key":K` (the app's placeholder,
    /// R-ENC-4, R-KIND-3; never loc args). Background: `{"aps":{"content-available":1},"hk":ENVELOPE}`.
    /// Equals the vector's `apns_payload` for the vector's inputs.
    public static func encrypted(content: NotificationContent, placeholders: AppPlaceholders,
                                 envelope: Envelope) -> [UInt8] {
        var out = encryptedPrefix(content: content, placeholders: placeholders)
        envelope.appendJSON(to: &out)
        out.append(contentsOf: encryptedSuffix)
        return out
    }

    /// Plaintext body (R-PLAIN-1). Alert: `{"aps":{"alert":{…}[,"badge"][,"sound"][,"thread-id"]
    /// [,presentation fields]}[,"data":{…}]}`, `alert` holding `title`, `body`, `title-loc-key`,
    /// `title-loc-args`, `loc-key`, `loc-args` as the notification has them (R-KIND-3) and left out
    /// when it has none. Background (R-KIND-1): `{"aps":{"content-available":1}[,"data":{…}]}`. No `hk`.
    public static func plaintext(content: NotificationContent) -> [UInt8] {
        var out = [UInt8]()
        if content.pushType == .background {
            out.append(contentsOf: backgroundAPS)
        } else {
            out.append(contentsOf: #"{"aps":{"#.utf8)
            var fields = Fields(out: out)
            appendPlaintextAlert(content, to: &fields)
            appendClearExtras(content, to: &fields)
            out = fields.out
            out.append(0x7d)
        }
        if let data = content.data {
            out.append(contentsOf: #","data":"#.utf8)
            JSONWriter.append(data, to: &out)
        }
        out.append(0x7d)
        return out
    }

    /// An `ids_only` body (R-IDS-1), the same for every device of the notification, keyed or not.
    /// Alert: `{"aps":{"alert":{PLACEHOLDER},"mutable-content":1[,"badge":n][,"sound":s]},"pf":MARKER}`,
    /// PLACEHOLDER as for an encrypted body (the app's loc keys where set, else its literal title
    /// and body); `sound` is the name or the critical-alert dictionary (both are `aps.sound`).
    /// Background: `{"aps":{"content-available":1},"pf":MARKER}`. MARKER is `IDsOnlyMarker.json`.
    /// Never a title, body, data, thread id, loc key or argument of the notification, nor its
    /// presentation fields (the extension sets them from the fetched content).
    public static func idsOnly(content: NotificationContent, placeholders: AppPlaceholders, notificationID: UUID) -> [UInt8] {
        var out: [UInt8]
        if content.pushType == .background {
            out = backgroundAPS
        } else {
            var fields = Fields(out: Array(#"{"aps":{"alert":{"#.utf8))
            appendPlaceholder(placeholders, to: &fields)
            fields.out.append(contentsOf: #"},"mutable-content":1"#.utf8)
            appendBadgeAndSound(content, to: &fields)
            fields.out.append(0x7d)
            out = fields.out
        }
        out.append(contentsOf: #","pf":"#.utf8)
        out.append(contentsOf: IDsOnlyMarker.json(notificationID: notificationID))
        out.append(0x7d)
        return out
    }

    /// Everything an encrypted body holds before the envelope object (ends with `"hk":`).
    static func encryptedPrefix(content: NotificationContent, placeholders: AppPlaceholders) -> [UInt8] {
        if content.pushType == .background { return backgroundAPS + Array(#","hk":"#.utf8) }
        var fields = Fields(out: Array(#"{"aps":{"alert":{"#.utf8))
        appendPlaceholder(placeholders, to: &fields)
        fields.out.append(contentsOf: #"},"mutable-content":1"#.utf8)
        appendClearExtras(content, to: &fields)
        fields.out.append(contentsOf: #"},"hk":"#.utf8)
        return fields.out
    }

    /// What an encrypted body holds after the envelope object.
    static let encryptedSuffix: [UInt8] = [0x7d]

    /// `{"aps":{"content-available":1}`: a background push's whole `aps` (R-KIND-1), object left open.
    static let backgroundAPS: [UInt8] = Array(#"{"aps":{"content-available":1}"#.utf8)

    /// Members of one JSON object being written, commas placed as needed.
    private struct Fields {
        var out: [UInt8]
        var comma = false

        mutating func key(_ name: String) {
            if comma { out.append(0x2c) }
            comma = true
            JSONWriter.appendString(name, to: &out)
            out.append(0x3a)
        }

        mutating func string(_ name: String, _ value: String) {
            key(name)
            JSONWriter.appendString(value, to: &out)
        }

        mutating func strings(_ name: String, _ values: [String]) {
            key(name)
            JSONWriter.appendStrings(values, to: &out)
        }

        mutating func number(_ name: String, _ text: String) {
            key(name)
            out.append(contentsOf: text.utf8)
        }
    }

    /// `"alert":{…}` of a plaintext alert, when the notification has any of its six fields.
    private static func appendPlaintextAlert(_ content: NotificationContent, to fields: inout Fields) {
        let loc = content.localization
        guard content.title != nil || content.body != nil || !loc.isEmpty else { return }
        fields.key("alert")
        var alert = Fields(out: [0x7b])
        if let title = content.title { alert.string("title", title) }
        if let body = content.body { alert.string("body", body) }
        if let key = loc.titleLocKey { alert.string("title-loc-key", key) }
        if let args = loc.titleLocArgs { alert.strings("title-loc-args", args) }
        if let key = loc.bodyLocKey { alert.string("loc-key", key) }
        if let args = loc.bodyLocArgs { alert.strings("loc-args", args) }
        alert.out.append(0x7d)
        fields.out.append(contentsOf: alert.out)
    }

    /// The app's placeholder in `aps.alert` (R-ENC-4, R-KIND-3): `title-loc-key` or `title`, then
    /// `loc-key` or `body`.
    private static func appendPlaceholder(_ placeholders: AppPlaceholders, to fields: inout Fields) {
        if let key = placeholders.titleLocKey { fields.string("title-loc-key", key) } else { fields.string("title", placeholders.title) }
        if let key = placeholders.bodyLocKey { fields.string("loc-key", key) } else { fields.string("body", placeholders.body) }
    }

    /// `badge`, `sound` (or the critical-alert sound dictionary), `thread-id` (R-ENC-4, R-PLAIN-1),
    /// then `interruption-level`, `relevance-score`, `category`, `target-content-id` (R-KIND-2), in
    /// clear inside `aps`.
    private static func appendClearExtras(_ content: NotificationContent, to fields: inout Fields) {
        appendBadgeAndSound(content, to: &fields)
        let p = content.presentation
        if let thread = content.threadId { fields.string("thread-id", thread) }
        if let level = p.interruptionLevel { fields.string("interruption-level", level.rawValue) }
        if let score = p.relevanceScore { fields.number("relevance-score", score.description) }
        if let category = p.category { fields.string("category", category) }
        if let target = p.targetContentId { fields.string("target-content-id", target) }
    }

    /// `badge`, then `sound` (the name, or the critical-alert sound dictionary).
    private static func appendBadgeAndSound(_ content: NotificationContent, to fields: inout Fields) {
        if let badge = content.badge { fields.number("badge", String(badge)) }
        let p = content.presentation
        if let sound = content.sound {
            fields.string("sound", sound)
        } else if let critical = p.criticalSound {
            fields.key("sound")
            var dict = Fields(out: [0x7b])
            dict.number("critical", "1")
            dict.string("name", critical.name)
            if let volume = critical.volume { dict.number("volume", volume.description) }
            dict.out.append(0x7d)
            fields.out.append(contentsOf: dict.out)
        }
    }
}
