import Foundation
import PushAcceptance
import PushCore

/// `PUT /v1/push/devices` (R-DEV-1): the app as sent, and the rest as the acceptance service's
/// request (R-API-6: the rules of R-DEV-1..4 are its own). The route sets the app and the mode.
public struct DeviceBody: Sendable {
    /// The app, as sent (`papp_...`).
    public var appID: String
    /// The registration; `appID` and `mode` are placeholders until the route sets them.
    public var request: DeviceRegistrationRequest

    /// Reads the body. - Throws: `APIError` 400 (not JSON, wrong types), 422 (missing or unknown).
    public static func decode(_ body: [UInt8]) throws -> DeviceBody {
        var f = try JSONFields.parseBody(body)
        let appID = try f.requiredString("app_id")
        let platform = try f.requiredString("platform")
        let token = try f.string("token")
        var subscription: DeviceRegistrationRequest.WebSubscription?
        if let s = try f.object("subscription") {
            var sf = JSONFields(s, prefix: "subscription.")
            let endpoint = try sf.requiredString("endpoint")
            // `PushSubscription.toJSON()` carries `expirationTime` (W3C Push API: null, or
            // milliseconds since the epoch): read for its type, then ignored (nothing is stored).
            _ = try sf.double("expirationTime")
            guard let keys = try sf.object("keys", nullable: false) else { throw sf.missing("keys") }
            var kf = JSONFields(keys, prefix: "subscription.keys.")
            let p256dh = try kf.requiredString("p256dh"), auth = try kf.requiredString("auth")
            try kf.finish()
            try sf.finish()
            subscription = .init(endpoint: endpoint, p256dh: p256dh, auth: auth)
        }
        let userID = try f.requiredString("user_id")
        let environment = try f.string("apns_environment")
        let key: DeviceRegistrationRequest.EncryptionKeyChange
        switch try f.presence("encryption_public_key") {
        case .absent: key = .keep
        case .null: key = .remove
        case .value(let text): key = .set(text)
        }
        let rotate = try f.bool("rotate_preview_token") ?? false
        try f.finish()
        return DeviceBody(appID: appID, request: DeviceRegistrationRequest(
            appID: placeholderID, mode: .test, platform: platform, token: token, subscription: subscription,
            userID: userID, apnsEnvironment: environment, encryptionKey: key, rotatePreviewToken: rotate))
    }
}

/// `POST /v1/push/notifications/{id}/revoke`: no body, `{}`, or `{"user_ids": [...]}` (issue 24
/// part 4). - Throws: `APIError` 400 / 422.
struct RevokeBody: Sendable {
    var userIDs: [String]?

    static func decode(_ body: [UInt8]) throws -> RevokeBody {
        if body.isEmpty { return RevokeBody() }
        var f = try JSONFields.parseBody(body)
        // `null` is refused, not read as absent: absent revokes for every device, which a client
        // serializing an empty list as null never meant (the fresh-user trial of issue 24).
        let users = try f.strings("user_ids", nullable: false)
        try f.finish()
        return RevokeBody(userIDs: users)
    }
}

/// The all-zero UUID: what a request's app holds until the route has checked the one sent.
let placeholderID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

/// `POST /v1/push/apps` and `PATCH /v1/push/apps/:id` (R-APP-1; the placeholder loc keys of
/// R-KIND-3, where an update's empty string removes one; the content mode of R-IDS-1).
public struct AppBody: Sendable {
    public var name: String?
    public var requireEncryption: Bool?
    public var placeholderTitle: String?
    public var placeholderBody: String?
    public var placeholderTitleLocKey: String?
    public var placeholderBodyLocKey: String?
    /// `confirm_deliveries` (R-IDS-4).
    public var confirmDeliveries: Bool?
    /// `preview_window_seconds` (issue 24 part 4).
    public var previewWindowSeconds: Int?
    /// `content_mode` (R-IDS-1), as sent: the acceptance service checks it.
    public var contentMode: String?

    /// Reads the body; `creating` requires `name`.
    public static func decode(_ body: [UInt8], creating: Bool) throws -> AppBody {
        var f = try JSONFields.parseBody(body)
        let name = creating ? try f.requiredString("name") : try f.string("name")
        var b = AppBody(name: name, requireEncryption: try f.bool("require_encryption"),
                        placeholderTitle: try f.string("placeholder_title"),
                        placeholderBody: try f.string("placeholder_body"),
                        placeholderTitleLocKey: try f.string("placeholder_title_loc_key"),
                        placeholderBodyLocKey: try f.string("placeholder_body_loc_key"),
                        contentMode: try f.string("content_mode"))
        b.confirmDeliveries = try f.bool("confirm_deliveries")
        b.previewWindowSeconds = try f.int("preview_window_seconds")
        try f.finish()
        return b
    }
}

/// `POST /v1/push/notifications` (R-SEND-1): the app and device ids as sent, and the rest as the
/// acceptance service's request; the route sets the app, mode, devices and idempotency key.
public struct NotificationBody: Sendable {
    /// The app, as sent (`papp_...`).
    public var appID: String
    /// Optional narrowing, as sent (`pdev_...`).
    public var deviceIDs: [String]?
    /// The notification; `appID` and `mode` are placeholders until the route sets them.
    public var request: SendRequest

    /// Reads the body (`data` kept as compact JSON text in the client's key order, R-ENC-9;
    /// `send_at` RFC 3339 with an offset; the kind fields of R-KIND-1..3, `critical_sound` as
    /// `{"name", "volume"}`; `audience` `all` with optional `platforms` instead of `user_ids`, or
    /// `users`, the same as absent).
    /// - Throws: `APIError` 400 / 422.
    public static func decode(_ body: [UInt8]) throws -> NotificationBody {
        var f = try JSONFields.parseBody(body)
        let appID = try f.requiredString("app_id")
        // `audience: "all"` (issue 22) instead of `user_ids` (`"users"`, as answers say, is the same as
        // absent); its rules, and the refusal of `platforms` without it, are the acceptance service's.
        let audience = try f.string("audience")
        let users = try f.strings("user_ids")
        let platforms = try f.strings("platforms")
        var r = SendRequest(appID: placeholderID, mode: .test, userIDs: users ?? [])
        r.audience = audience
        r.platforms = platforms
        let devices = try f.strings("device_ids")
        // Without user_ids, device_ids (which only narrows them) is refused by the service, saying so.
        if users == nil && devices == nil && r.wholeAppAudience == nil && platforms == nil { throw f.missing("user_ids") }
        r.title = try f.string("title")
        r.body = try f.string("body")
        r.data = try f.object("data").map { JSONWriter.string(.object($0)) }
        r.badge = try f.int("badge")
        r.sound = try f.string("sound")
        r.threadID = try f.string("thread_id")
        r.collapseKey = try f.string("collapse_key")
        r.priority = try f.string("priority")
        if let text = try f.string("send_at") {
            guard let date = RFC3339.parse(text) else {
                throw APIError.validation("send_at must be an RFC 3339 time with an offset (2026-11-29T12:00:00Z)", field: "send_at")
            }
            r.sendAt = date
        }
        r.ttlSeconds = try f.int("ttl")
        if let sms = try f.object("sms_fallback") {
            var sf = JSONFields(sms, prefix: "sms_fallback.")
            r.smsFallback = .init(phone: try sf.requiredString("phone"), text: try sf.requiredString("text"))
            try sf.finish()
        }
        // The kinds of push (R-KIND-1..3): their rules are the acceptance service's (KindValidation).
        r.pushType = try f.string("push_type")
        r.interruptionLevel = try f.string("interruption_level")
        r.relevanceScore = try f.double("relevance_score")
        r.category = try f.string("category")
        r.targetContentID = try f.string("target_content_id")
        if let sound = try f.object("critical_sound") {
            var sf = JSONFields(sound, prefix: "critical_sound.")
            r.criticalSound = .init(name: try sf.string("name"), volume: try sf.double("volume"))
            try sf.finish()
        }
        r.titleLocKey = try f.string("title_loc_key")
        r.titleLocArgs = try f.strings("title_loc_args")
        r.bodyLocKey = try f.string("body_loc_key")
        r.bodyLocArgs = try f.strings("body_loc_args")
        r.channelID = try f.string("channel_id")
        try f.finish()
        return NotificationBody(appID: appID, deviceIDs: devices, request: r)
    }
}

/// `POST /v1/push/webhook_endpoints` (`app_id`, `url`, optional `event_types`) and `PATCH
/// /v1/push/webhook_endpoints/:id` (`url`, `event_types`, `enabled`, each optional). No `mode`:
/// the key's is the endpoint's (R-MODE-1). What a URL or a type may be is the store's rule.
public struct WebhookEndpointBody: Sendable {
    /// The app, as sent (`papp_...`); creation only.
    public var appID: String?
    /// Where events are POSTed.
    public var url: String?
    /// The event types; nil or empty: the default set (every type but the opt-in ones).
    public var eventTypes: [String]?
    /// Enable or disable; update only.
    public var enabled: Bool?

    /// Reads the body; `creating` takes `app_id` and refuses `enabled`, an update the reverse.
    /// - Throws: `APIError` 400 (not JSON, wrong types), 422 (unknown member).
    public static func decode(_ body: [UInt8], creating: Bool) throws -> WebhookEndpointBody {
        var f = try JSONFields.parseBody(body)
        var b = WebhookEndpointBody()
        if creating { b.appID = try f.string("app_id") }
        b.url = try f.string("url")
        b.eventTypes = try f.strings("event_types")
        if !creating { b.enabled = try f.bool("enabled") }
        try f.finish()
        return b
    }
}

/// A list route's query: `limit` (1 to 100, default 10), `starting_after` (the last id of the
/// previous page) and the route's filters. Unknown arguments and repeated ones are refused.
struct ListQuery {
    var limit = 10
    var startingAfter: String?
    var filters: [String: String] = [:]

    static let maxLimit = 100

    static func parse(_ items: [HTTPRequest.QueryItem], filters allowed: Set<String>) throws -> ListQuery {
        var q = ListQuery()
        var seen = Set<String>()
        for item in items {
            let name = String(item.name.prefix(64))
            guard item.validUTF8 else { throw APIError.invalidRequest("\(name) is not valid UTF-8 (after percent-decoding)", field: name) }
            guard seen.insert(item.name).inserted else {
                throw APIError.validation("\(name) is given twice", field: name)
            }
            guard let value = item.value else { throw APIError.validation("\(name) needs a value", field: name) }
            switch item.name {
            case "limit":
                guard let n = Int(value), (1...maxLimit).contains(n) else {
                    throw APIError.validation("limit must be a whole number from 1 to \(maxLimit)", field: "limit")
                }
                q.limit = n
            case "starting_after": q.startingAfter = value
            default:
                guard allowed.contains(item.name) else { throw APIError.unknownQueryArgument(item.name) }
                q.filters[item.name] = value
            }
        }
        return q
    }
}
