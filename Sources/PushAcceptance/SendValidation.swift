import Foundation
import PushCore
import PushStore

/// A send request that passed every device-independent check: what to store and the content the
/// size rule measures.
struct ValidatedSend {
    /// The storage step's input (`push_enqueue`), `data` in its compact form.
    var enqueue: EnqueueRequest
    /// The content as the worker will read it back.
    var content: NotificationContent
}

/// The device-independent checks of a send request (R-SEND-1, R-SEND-13, R-LIM-1), pure: each
/// refusal is `VALIDATION_ERROR` naming its field, in the order of the request's fields.
enum SendValidation {
    typealias Limits = AcceptanceLimits

    /// - Parameter platforms: the platforms served (the service's provider table), which a
    ///   whole-app audience's `platforms` must be among.
    static func validate(_ r: SendRequest, now: Date, platforms: Set<Platform>) throws -> ValidatedSend {
        try checkAudience(r, platforms: platforms)
        if let ids = r.deviceIDs, ids.isEmpty || ids.count > Limits.maxDeviceIDs {
            throw AcceptanceError.invalid("device_ids", "when given, 1 to \(Limits.maxDeviceIDs) device ids")
        }
        try noNUL(r.title, "title")
        try noNUL(r.body, "body")
        let data = try dataObject(r.data)
        if let badge = r.badge, !Limits.badge.contains(badge) {
            throw AcceptanceError.invalid("badge", "must be from 0 to \(Limits.badge.upperBound)")
        }
        try clearField(r.sound, "sound", max: Limits.maxSoundBytes)
        try clearField(r.threadID, "thread_id", max: Limits.maxThreadIDBytes)
        let kind = try KindValidation.validate(r)
        if let key = r.collapseKey {
            let bytes = key.utf8.count
            guard bytes >= 1, bytes <= Limits.maxCollapseKeyBytes, !key.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw AcceptanceError.invalid("collapse_key", "must be 1 to \(Limits.maxCollapseKeyBytes) bytes (R-SEND-13) without control characters")
            }
        }
        var priority = Priority.high
        if let text = r.priority {
            guard let p = Priority(rawValue: text) else { throw AcceptanceError.invalid("priority", "must be high or normal") }
            priority = p
        }
        if let ttl = r.ttlSeconds, !Limits.ttlSeconds.contains(ttl) {
            throw AcceptanceError.invalid("ttl", "must be from 0 to \(Limits.ttlSeconds.upperBound) seconds")
        }
        if let at = r.sendAt {
            let offset = at.timeIntervalSince(now)
            guard offset.isFinite, offset >= -Limits.sendAtEarliest, offset <= Limits.sendAtLatest else {
                throw AcceptanceError.invalid("send_at", "must be a finite time from 30 days before to 365 days after now")
            }
        }
        if let key = r.idempotencyKey {
            let n = Limits.characters(key)
            guard n >= 1, n <= Limits.maxIdempotencyKeyCharacters, !key.utf8.contains(0) else {
                throw AcceptanceError(.validationError, "the idempotency key must be 1 to \(Limits.maxIdempotencyKeyCharacters) characters, without NUL",
                                      field: "idempotency_key")
            }
        }
        if let sms = r.smsFallback {
            // R-SMS-1: the number as Twilio's `To` takes it; the text within the SMS bound.
            guard SMSText.isE164(sms.phone) else {
                throw AcceptanceError.invalid("sms_fallback.phone", "must be an E.164 number: + and 8 to 15 digits, the first not 0")
            }
            if let why = SMSText.textProblem(sms.text) { throw AcceptanceError.invalid("sms_fallback.text", why) }
        }

        let content = NotificationContent(title: r.title, body: r.body, data: data, badge: r.badge, sound: r.sound,
                                          threadId: r.threadID, collapseKey: r.collapseKey, priority: priority,
                                          pushType: kind.pushType, presentation: kind.presentation,
                                          localization: kind.localization, channelId: r.channelID)
        do {
            try content.validate()
        } catch let e as PushError {
            throw AcceptanceError(e)
        }
        if content.isEmptyAlert {
            throw AcceptanceError.invalid("title", "an alert needs something to show or carry: title, body, title_loc_key, body_loc_key, badge, sound, critical_sound or data")
        }
        let compact = data.map { String(decoding: JSONWriter.bytes(.object($0)), as: UTF8.self) }
        let q = storageRequest(r, data: compact)
        return ValidatedSend(enqueue: q, content: content)
    }

    /// The storage step's input for `r`, with `data` as given (no check made here; `push_enqueue`
    /// reads an empty loc args array as none).
    static func storageRequest(_ r: SendRequest, data: String?) -> EnqueueRequest {
        var q = EnqueueRequest(appID: r.appID, mode: r.mode.rawValue, userIDs: r.userIDs)
        q.deviceIDs = r.deviceIDs
        q.audience = r.wholeAppAudience
        q.audiencePlatforms = r.platforms
        q.title = r.title
        q.body = r.body
        q.data = data
        q.badge = r.badge
        q.sound = r.sound
        q.threadID = r.threadID
        q.collapseKey = r.collapseKey
        q.priority = r.priority
        q.sendAt = r.sendAt
        q.ttlSeconds = r.ttlSeconds
        q.idempotencyKey = r.idempotencyKey
        q.smsPhone = r.smsFallback?.phone
        q.smsText = r.smsFallback?.text
        q.pushType = r.pushType
        q.interruptionLevel = r.interruptionLevel
        q.relevanceScore = r.relevanceScore
        q.category = r.category
        q.targetContentID = r.targetContentID
        q.criticalSoundName = r.criticalSound?.name
        q.criticalSoundVolume = r.criticalSound?.volume
        q.titleLocKey = r.titleLocKey
        q.titleLocArgs = r.titleLocArgs
        q.bodyLocKey = r.bodyLocKey
        q.bodyLocArgs = r.bodyLocArgs
        q.channelID = r.channelID
        return q
    }

    /// The audience (R-SEND-1, issue 22): the users of `user_ids` (`audience` absent or `users`), or
    /// `audience: all` (every active device of the app in the mode at the send time) with no
    /// `user_ids` and no `device_ids`, optionally narrowed to distinct `platforms` among those
    /// `served` (the provider table's).
    static func checkAudience(_ r: SendRequest, platforms served: Set<Platform>) throws {
        guard let audience = r.wholeAppAudience else {
            if r.platforms != nil {
                throw AcceptanceError.invalid("platforms", "narrows only a whole-app audience: give audience all with it, "
                                              + "or leave platforms out to address the users of user_ids")
            }
            try checkUsers(r.userIDs, narrowedBy: r.deviceIDs != nil)
            return
        }
        guard audience == "all" else {
            throw AcceptanceError.invalid("audience", "must be all (every active device of the app in its mode), "
                                          + "\(SendRequest.usersAudience) (the users of user_ids, as when absent) or absent")
        }
        guard r.userIDs.isEmpty, r.deviceIDs == nil else {
            throw AcceptanceError.invalid("audience", "a whole-app audience takes no user_ids and no device_ids")
        }
        if let platforms = r.platforms {
            guard !platforms.isEmpty, Set(platforms).count == platforms.count,
                  platforms.allSatisfy({ served.contains(Platform(rawValue: $0)) }) else {
                let names = served.map(\.rawValue).sorted()
                throw AcceptanceError.invalid("platforms", "when given, 1 to \(names.count) distinct platforms among \(names.joined(separator: ", "))")
            }
        }
    }

    /// Why `device_ids` without `user_ids` is refused.
    static let deviceIDsNeedUsers = "required with device_ids, which narrows the users of user_ids to some of their devices "
        + "(it addresses no device alone)"

    /// 1 to 1,000 user ids of 1 to 255 characters each, without NUL (R-DEV-1: no device can
    /// belong to any other user id). With `device_ids` (`narrowedBy`) and no user, the refusal says
    /// that `device_ids` only narrows the users (R-SEND-1: addressed to users, optionally narrowed
    /// to some of their devices).
    static func checkUsers(_ ids: [String], narrowedBy devices: Bool = false) throws {
        guard !ids.isEmpty else {
            throw AcceptanceError.invalid("user_ids", devices ? deviceIDsNeedUsers : "at least one user is required")
        }
        guard ids.count <= Limits.maxUserIDs else {
            throw AcceptanceError.invalid("user_ids", "at most \(Limits.maxUserIDs) user ids")
        }
        for (i, id) in ids.enumerated() {
            let n = Limits.characters(id)
            if n < 1 || n > Limits.maxUserIDCharacters || id.utf8.contains(0) {
                throw AcceptanceError.invalid("user_ids", "element \(i + 1) of \(ids.count) is not a user id of 1 to \(Limits.maxUserIDCharacters) characters without NUL")
            }
        }
    }

    /// The `data` object, or nil: at most 65,536 bytes of JSON text, a JSON object (strict
    /// RFC 8259, no duplicate key), no NUL in any string (PostgreSQL cannot process `\u0000`).
    static func dataObject(_ text: String?) throws -> JSONObject? {
        guard let text else { return nil }
        guard text.utf8.count <= Limits.maxDataTextBytes else {
            throw AcceptanceError.invalid("data", "at most \(Limits.maxDataTextBytes) bytes of JSON text")
        }
        let object: JSONObject
        do {
            object = try JSONParser.parseDataObject(text)
        } catch let e as PushError {
            // The parser's messages name a byte offset, never the text.
            throw AcceptanceError.invalid("data", e.message)
        }
        if containsNUL(.object(object)) {
            throw AcceptanceError.invalid("data", "must not hold \\u0000")
        }
        return object
    }

    private static func containsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let s): return s.utf8.contains(0)
        case .array(let items): return items.contains(where: containsNUL)
        case .object(let o): return o.members.contains { $0.key.utf8.contains(0) || containsNUL($0.value) }
        default: return false
        }
    }

    /// A field in clear beside an encrypted iOS payload: at most `max` bytes as escaped in JSON.
    static func clearField(_ text: String?, _ field: String, max: Int) throws {
        guard let text else { return }
        try noNUL(text, field)
        if Limits.jsonTextBytes(text) > max {
            throw AcceptanceError.invalid(field, "at most \(max) bytes (UTF-8, as escaped in the JSON payload)")
        }
    }

    static func characters(_ text: String, _ field: String, max: Int) throws {
        let n = Limits.characters(text)
        guard n >= 1, n <= max, !text.utf8.contains(0) else {
            throw AcceptanceError.invalid(field, "must be 1 to \(max) characters, without NUL")
        }
    }

    static func noNUL(_ text: String?, _ field: String) throws {
        if let text, text.utf8.contains(0) { throw AcceptanceError.invalid(field, "must not contain NUL") }
    }
}
