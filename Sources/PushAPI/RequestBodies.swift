import Foundation
import PushCore

/// `PUT /v1/push/devices` (R-DEV-1): the fields as sent, typed; the rules of R-DEV-1..4 are the
/// acceptance service's.
public struct DeviceBody: Sendable {
    /// The app, as sent (`papp_...`).
    public var appID: String
    public var platform: String
    public var token: String?
    /// Web only: `{"endpoint", "keys": {"p256dh", "auth"}}`.
    public var subscription: Subscription?
    public var userID: String
    public var apnsEnvironment: String?
    /// Absent keeps, `null` removes, a value replaces (R-DEV-4).
    public var encryptionPublicKey: Presence<String>

    /// A browser's push subscription (RFC 8030 endpoint, RFC 8291 keys), as sent.
    public struct Subscription: Sendable {
        public var endpoint: String
        public var p256dh: String
        public var auth: String
    }

    /// Reads the body. - Throws: `APIError` 400 (not JSON, wrong types), 422 (missing or unknown).
    public static func decode(_ body: [UInt8]) throws -> DeviceBody {
        var f = try JSONFields.parseBody(body)
        let appID = try f.requiredString("app_id")
        let platform = try f.requiredString("platform")
        let token = try f.string("token")
        var subscription: Subscription?
        if let s = try f.object("subscription") {
            var sf = JSONFields(s, prefix: "subscription.")
            let endpoint = try sf.requiredString("endpoint")
            guard let keys = try sf.object("keys", nullable: false) else { throw sf.missing("keys") }
            var kf = JSONFields(keys, prefix: "subscription.keys.")
            let p256dh = try kf.requiredString("p256dh"), auth = try kf.requiredString("auth")
            try kf.finish()
            try sf.finish()
            subscription = Subscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
        }
        let userID = try f.requiredString("user_id")
        let environment = try f.string("apns_environment")
        let key = try f.presence("encryption_public_key")
        try f.finish()
        return DeviceBody(appID: appID, platform: platform, token: token, subscription: subscription, userID: userID,
                          apnsEnvironment: environment, encryptionPublicKey: key)
    }
}

/// `POST /v1/push/apps` and `PATCH /v1/push/apps/:id` (R-APP-1).
public struct AppBody: Sendable {
    public var name: String?
    public var requireEncryption: Bool?
    public var placeholderTitle: String?
    public var placeholderBody: String?

    /// Reads the body; `creating` requires `name`.
    public static func decode(_ body: [UInt8], creating: Bool) throws -> AppBody {
        var f = try JSONFields.parseBody(body)
        let name = creating ? try f.requiredString("name") : try f.string("name")
        let b = AppBody(name: name, requireEncryption: try f.bool("require_encryption"),
                        placeholderTitle: try f.string("placeholder_title"),
                        placeholderBody: try f.string("placeholder_body"))
        try f.finish()
        return b
    }
}

/// `POST /v1/push/notifications` (R-SEND-1): the content and how it travels, typed.
public struct NotificationBody: Sendable {
    public var appID: String
    public var userIDs: [String]
    /// Optional narrowing, as sent (`pdev_...`).
    public var deviceIDs: [String]?
    public var title: String?
    public var body: String?
    /// The `data` object as compact JSON text in the client's key order (R-ENC-9).
    public var data: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var collapseKey: String?
    public var priority: String?
    /// RFC 3339 with an offset.
    public var sendAt: Date?
    public var ttl: Int?
    public var smsPhone: String?
    public var smsText: String?

    /// Reads the body. - Throws: `APIError` 400 / 422.
    public static func decode(_ body: [UInt8]) throws -> NotificationBody {
        var f = try JSONFields.parseBody(body)
        let appID = try f.requiredString("app_id")
        guard let users = try f.strings("user_ids") else { throw f.missing("user_ids") }
        var n = NotificationBody(appID: appID, userIDs: users)
        n.deviceIDs = try f.strings("device_ids")
        n.title = try f.string("title")
        n.body = try f.string("body")
        n.data = try f.object("data").map { JSONWriter.string(.object($0)) }
        n.badge = try f.int("badge")
        n.sound = try f.string("sound")
        n.threadID = try f.string("thread_id")
        n.collapseKey = try f.string("collapse_key")
        n.priority = try f.string("priority")
        if let text = try f.string("send_at") {
            guard let date = RFC3339.parse(text) else {
                throw APIError.validation("send_at must be an RFC 3339 time with an offset (2026-11-29T12:00:00Z)", field: "send_at")
            }
            n.sendAt = date
        }
        n.ttl = try f.int("ttl")
        if let sms = try f.object("sms_fallback") {
            var sf = JSONFields(sms, prefix: "sms_fallback.")
            n.smsPhone = try sf.requiredString("phone")
            n.smsText = try sf.requiredString("text")
            try sf.finish()
        }
        try f.finish()
        return n
    }

    init(appID: String, userIDs: [String]) {
        self.appID = appID
        self.userIDs = userIDs
    }
}

/// RFC 3339 instants (with `Z` or a numeric offset, optional fractional seconds).
enum RFC3339 {
    static func parse(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: text) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)
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
                guard allowed.contains(item.name) else { throw APIError.validation("unknown query argument \(name)", field: name) }
                q.filters[item.name] = value
            }
        }
        return q
    }
}
