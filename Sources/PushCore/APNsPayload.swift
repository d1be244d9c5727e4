/// APNs request bodies, byte-exact (R-ENC-4, R-ENC-9, R-PLAIN-1). Key order in `aps`:
/// `alert`, `mutable-content`, `badge`, `sound`, `thread-id`; top level `aps` then `hk` (or `data`).
public enum APNsPayload {
    /// Encrypted body: `{"aps":{"alert":{"title":P,"body":P},"mutable-content":1[,"badge":n]
    /// [,"sound":s][,"thread-id":t]},"hk":ENVELOPE}` with the app's placeholders (R-ENC-4).
    /// Equals the vector's `apns_payload` for the vector's inputs.
    public static func encrypted(content: NotificationContent, placeholders: AppPlaceholders,
                                 envelope: Envelope) -> [UInt8] {
        var out = encryptedPrefix(content: content, placeholders: placeholders)
        envelope.appendJSON(to: &out)
        out.append(contentsOf: encryptedSuffix)
        return out
    }

    /// Plaintext body (R-PLAIN-1): `{"aps":{"alert":{"title":…,"body":…}[,"badge"][,"sound"]
    /// [,"thread-id"]}[,"data":{…}]}`; `alert` holds only the fields the notification has and is
    /// left out when it has neither; no `hk`.
    public static func plaintext(content: NotificationContent) -> [UInt8] {
        var out = [UInt8]()
        out.append(contentsOf: #"{"aps":{"#.utf8)
        var needsComma = false
        if content.title != nil || content.body != nil {
            out.append(contentsOf: #""alert":{"#.utf8)
            if let title = content.title {
                out.append(contentsOf: #""title":"#.utf8)
                JSONWriter.appendString(title, to: &out)
            }
            if let body = content.body {
                if content.title != nil { out.append(0x2c) }
                out.append(contentsOf: #""body":"#.utf8)
                JSONWriter.appendString(body, to: &out)
            }
            out.append(0x7d)
            needsComma = true
        }
        appendClearExtras(content, needsComma: needsComma, to: &out)
        out.append(0x7d)
        if let data = content.data {
            out.append(contentsOf: #","data":"#.utf8)
            JSONWriter.append(data, to: &out)
        }
        out.append(0x7d)
        return out
    }

    /// Everything an encrypted body holds before the envelope object (ends with `"hk":`).
    static func encryptedPrefix(content: NotificationContent, placeholders: AppPlaceholders) -> [UInt8] {
        var out = [UInt8]()
        out.append(contentsOf: #"{"aps":{"alert":{"title":"#.utf8)
        JSONWriter.appendString(placeholders.title, to: &out)
        out.append(contentsOf: #","body":"#.utf8)
        JSONWriter.appendString(placeholders.body, to: &out)
        out.append(contentsOf: #"},"mutable-content":1"#.utf8)
        appendClearExtras(content, needsComma: true, to: &out)
        out.append(contentsOf: #"},"hk":"#.utf8)
        return out
    }

    /// What an encrypted body holds after the envelope object.
    static let encryptedSuffix: [UInt8] = [0x7d]

    /// `badge`, `sound`, `thread-id` in clear inside `aps` (R-ENC-4, R-PLAIN-1).
    private static func appendClearExtras(_ content: NotificationContent, needsComma: Bool, to out: inout [UInt8]) {
        var comma = needsComma
        func key(_ name: String) {
            if comma { out.append(0x2c) }
            comma = true
            JSONWriter.appendString(name, to: &out)
            out.append(0x3a)
        }
        if let badge = content.badge { key("badge"); out.append(contentsOf: String(badge).utf8) }
        if let sound = content.sound { key("sound"); JSONWriter.appendString(sound, to: &out) }
        if let thread = content.threadId { key("thread-id"); JSONWriter.appendString(thread, to: &out) }
    }
}
