/// The sealed plaintext (R-ENC-3): compact JSON `{"title","body","data","badge","sound","thread_id"}`
/// in that order, then the notification's own localized texts (R-KIND-3) `"title_loc_key"`,
/// `"title_loc_args"`, `"body_loc_key"`, `"body_loc_args"` (arrays of strings), each member present
/// only when the notification has it. Also the Web Push plaintext (R-SEND-11). The vector's
/// `plaintext_json` is the reference. A background push (R-KIND-1) has only `data` (or nothing: `{}`).
public enum SealedPlaintext {
    /// The plaintext bytes for `content` (compact, R-ENC-9 escaping).
    public static func bytes(for content: NotificationContent) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(64 + (content.title?.utf8.count ?? 0) + (content.body?.utf8.count ?? 0))
        var first = true
        func key(_ name: StaticString) {
            out.append(first ? 0x7b : 0x2c)
            first = false
            out.append(0x22)
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: [0x22, 0x3a])
        }
        if let title = content.title { key("title"); JSONWriter.appendString(title, to: &out) }
        if let body = content.body { key("body"); JSONWriter.appendString(body, to: &out) }
        if let data = content.data { key("data"); JSONWriter.append(data, to: &out) }
        if let badge = content.badge { key("badge"); out.append(contentsOf: String(badge).utf8) }
        if let sound = content.sound { key("sound"); JSONWriter.appendString(sound, to: &out) }
        if let thread = content.threadId { key("thread_id"); JSONWriter.appendString(thread, to: &out) }
        let loc = content.localization
        if let k = loc.titleLocKey { key("title_loc_key"); JSONWriter.appendString(k, to: &out) }
        if let args = loc.titleLocArgs { key("title_loc_args"); JSONWriter.appendStrings(args, to: &out) }
        if let k = loc.bodyLocKey { key("body_loc_key"); JSONWriter.appendString(k, to: &out) }
        if let args = loc.bodyLocArgs { key("body_loc_args"); JSONWriter.appendStrings(args, to: &out) }
        if first { out.append(0x7b) }
        out.append(0x7d)
        return out
    }
}
