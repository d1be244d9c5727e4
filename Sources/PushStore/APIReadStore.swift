import Foundation
import PushCore

/// One delivery of a notification, as the API shows it (R-SEND-8).
public struct APIDelivery: Sendable, Equatable {
    /// The device.
    public var deviceID: UUID
    /// `retrying`, `sent` or `failed`.
    public var status: String
    /// Sealed to the device's key (or RFC 8291 for web).
    public var encrypted: Bool
    /// Why it failed, when it did.
    public var errorCode: String?
    /// Provider attempts made.
    public var attempts: Int
    /// When its device's first preview fetch or receipt confirmed it (R-IDS-4), nil until then.
    public var confirmedAt: Date? = nil
}

/// A notification as the API shows it: `encrypted` is nil until its send time (R-SEND-2);
/// `deliveries` is nil in lists.
public struct APINotification: Sendable, Equatable {
    /// The notification id.
    public var id: UUID
    /// Its push app.
    public var appID: UUID
    /// `pending`, `sending`, `sent`, `sms_fallback`, `failed` or `cancelled`.
    public var status: String
    /// The app's `require_encryption` at the send time; nil before it.
    public var encrypted: Bool?
    /// The app's content mode at the send time (R-IDS-1); nil before it (and for a notification a
    /// previous release started: sent sealed).
    public var contentMode: ContentMode?
    /// Deliveries that net one charge (R-SEND-9).
    public var deviceCount: Int
    /// Why it failed, when it did.
    public var errorCode: String?
    /// The scheduled time, if any.
    public var sendAt: Date?
    /// When it was accepted.
    public var acceptedAt: Date
    /// When it became final.
    public var finishedAt: Date?
    /// Its deliveries (nil in lists).
    public var deliveries: [APIDelivery]?
    /// Its SMS fallback's outcome (R-SMS-1), the facts `notifications show` prints; nil when it has none.
    public var sms: SMSReport?
    /// Deliveries confirmed by their device's first preview fetch or receipt (R-IDS-4).
    public var confirmedCount = 0
    /// True once its content was revoked for every device (issue 24 part 4).
    public var revoked = false
    /// `all` for a whole-app audience (issue 22), `users` for one of listed user ids.
    public var audience = "users"
    /// How many user ids it names (nil for a whole-app audience).
    public var userCount: Int? = nil
    /// The platforms a whole-app audience was narrowed to, nil when not narrowed.
    public var platforms: [String]? = nil
}

/// One page of a list: at most the limit asked for, and whether more follow.
public struct APIPage<Item: Sendable>: Sendable {
    /// The page's items, newest first.
    public var items: [Item]
    /// True when more follow (`starting_after` the last one).
    public var hasMore: Bool

    /// A page (for lists cut outside SQL: an app's webhook endpoints, at most 20 per mode).
    public init(items: [Item], hasMore: Bool) {
        self.items = items
        self.hasMore = hasMore
    }
}

/// The API's reads, scoped to one account and mode (R-API-1, R-MODE-1): another account's or the
/// other mode's object answers nil exactly like a missing one. SQL in `APIQueries`; the hot
/// statements are prepared once per pooled session.
public final class APIReadStore {
    /// The session every call runs on.
    public let connection: PGConnection
    /// The key's account.
    public let accountID: UUID
    /// The key's mode.
    public let mode: Mode
    /// The apps the key is limited to (issue 15 part 3); nil: every app of the account.
    public let appIDs: [UUID]?

    /// Reads for `accountID` in `mode` on `connection`, within `appIDs` when given.
    public init(connection: PGConnection, accountID: UUID, mode: Mode, appIDs: [UUID]? = nil) {
        self.connection = connection
        self.accountID = accountID
        self.mode = mode
        self.appIDs = appIDs
    }

    private var scope: PGValue? { appIDs.map { .uuidArray($0) } }

    /// The device, when this account and mode see it.
    public func device(id: UUID) throws -> StoredDevice? {
        let r = try connection.execPrepared(name: "pushfleet_api_device_get", sql: APIQueries.deviceGet,
                                            params: [.uuid(id), .text(mode.rawValue), .uuid(accountID), scope])
        return r.rowCount == 0 ? nil : try Self.device(r, 0)
    }

    /// Devices newest first; `after` is the last device of the previous page (it must be visible:
    /// check with `device(id:)` first). Fetches `limit + 1` rows to tell `hasMore`.
    public func devices(appID: UUID?, userID: String?, active: Bool?, after: UUID?, limit: Int) throws -> APIPage<StoredDevice> {
        let r = try connection.exec(APIQueries.deviceList, [
            .uuid(accountID), appID.map(PGValue.uuid), .text(mode.rawValue), userID.map(PGValue.text),
            active.map(PGValue.bool), after.map(PGValue.uuid), .int(limit + 1), scope,
        ])
        let all = try r.rows.map { try Self.device(r, $0) }
        return APIPage(items: Array(all.prefix(limit)), hasMore: all.count > limit)
    }

    /// The app, when this account owns it.
    public func app(id: UUID) throws -> PushApp? {
        let r = try connection.exec(APIQueries.appGet, [.uuid(id), .uuid(accountID), scope])
        return r.rowCount == 0 ? nil : try AppStore.decode(r, 0)
    }

    /// The account's apps, newest first, after the app `after` of the previous page.
    public func apps(after: UUID?, limit: Int) throws -> APIPage<PushApp> {
        let r = try connection.exec(APIQueries.appList, [.uuid(accountID), after.map(PGValue.uuid), .int(limit + 1), scope])
        let all = try r.rows.map { try AppStore.decode(r, $0) }
        return APIPage(items: Array(all.prefix(limit)), hasMore: all.count > limit)
    }

    /// The notification with its deliveries, in one round trip.
    public func notification(id: UUID) throws -> APINotification? {
        let r = try connection.execPrepared(name: "pushfleet_api_notification_get", sql: APIQueries.notificationGet,
                                            params: [.uuid(id), .text(mode.rawValue), .uuid(accountID), scope])
        guard r.rowCount > 0 else { return nil }
        return try Self.notificationWithDeliveries(r)
    }

    /// The notification of row 0 with the deliveries of every row (none when their columns are NULL).
    static func notificationWithDeliveries(_ r: PGResult) throws -> APINotification {
        var n = try Self.notification(r, 0)
        n.deliveries = try r.rows.compactMap { i -> APIDelivery? in
            guard let device: UUID = try r.decode(i, "device_id") else { return nil }
            return APIDelivery(deviceID: device, status: try r.string(i, "delivery_status"),
                               encrypted: try r.bool(i, "delivery_encrypted"),
                               errorCode: try r.decode(i, "delivery_error_code"), attempts: try r.int(i, "attempts"),
                               confirmedAt: try r.decode(i, "delivery_confirmed_at"))
        }
        n.confirmedCount = n.deliveries?.filter { $0.confirmedAt != nil }.count ?? 0
        return n
    }

    /// Whether the notification is visible here; its app id when it is.
    public func notificationApp(id: UUID) throws -> UUID? {
        let r = try connection.exec(APIQueries.notificationVisible, [.uuid(id), .text(mode.rawValue), .uuid(accountID), scope])
        return r.rowCount == 0 ? nil : try r.uuid(0, "app_id")
    }

    /// Notifications newest first, optionally of one app and status, after `after`.
    public func notifications(appID: UUID?, status: String?, after: UUID?, limit: Int) throws -> APIPage<APINotification> {
        let r = try connection.exec(APIQueries.notificationList, [
            .uuid(accountID), appID.map(PGValue.uuid), .text(mode.rawValue), status.map(PGValue.text),
            after.map(PGValue.uuid), .int(limit + 1), scope,
        ])
        let all = try r.rows.map { try Self.notification(r, $0) }
        return APIPage(items: Array(all.prefix(limit)), hasMore: all.count > limit)
    }

    static func device(_ r: PGResult, _ i: Int) throws -> StoredDevice {
        StoredDevice(id: try r.uuid(i, "id"), appID: try r.uuid(i, "app_id"), platform: try r.string(i, "platform"),
                  userID: try r.string(i, "user_id"), apnsEnvironment: try r.decode(i, "apns_environment"),
                  active: try r.bool(i, "active"), encryptionKeyID: try r.decode(i, "kid"),
                  createdAt: try r.date(i, "created_at"), lastRegisteredAt: try r.date(i, "last_registered_at"))
    }

    static func notification(_ r: PGResult, _ i: Int) throws -> APINotification {
        var n = APINotification(id: try r.uuid(i, "id"), appID: try r.uuid(i, "app_id"), status: try r.string(i, "status"),
                                encrypted: try r.decode(i, "encrypted"), contentMode: try r.decode(i, "content_mode"),
                                deviceCount: try r.int(i, "device_count"),
                                errorCode: try r.decode(i, "error_code"), sendAt: try r.decode(i, "send_at"),
                                acceptedAt: try r.date(i, "accepted_at"), finishedAt: try r.decode(i, "finished_at"),
                                deliveries: nil, sms: try SMSStore.report(r, i))
        n.revoked = try r.bool(i, "revoked")
        let audience: String? = try r.decode(i, "audience")
        n.audience = audience ?? "users"
        n.userCount = audience == nil ? try r.int(i, "user_count") : nil
        let platforms: String? = try r.decode(i, "audience_platforms")
        n.platforms = try platforms.map { try PGArrayText.strings($0) }
        // Lists carry the count (`APIQueries.notificationList`); a read with deliveries counts them.
        if (try? r.columnIndex(named: "confirmed_count")) != nil { n.confirmedCount = try r.int(i, "confirmed_count") }
        return n
    }
}

/// A read fused with the key lookup: who the key is (nil: no such key) and the object when the key's
/// account and mode see it (nil otherwise). The caller checks revocation, rate and permission
/// before answering with the object.
public struct KeyedRead<Object: Sendable>: Sendable {
    /// The key's principal (its `appOwned` is nil), or nil for an unknown key.
    public var principal: APIPrincipal?
    /// The object, when visible to the key.
    public var object: Object?
}

/// The API's GET-by-id reads in one round trip with the key lookup (SQL in `APIKeyedQueries`):
/// what `AccountStore.authenticate` then `APIReadStore` would read, in one statement.
public final class APIKeyedReads {
    /// The session every call runs on.
    public let connection: PGConnection

    /// Reads on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// The key and the device, in one statement.
    public func device(keyHash: [UInt8], id: UUID) throws -> KeyedRead<StoredDevice> {
        let r = try connection.execPrepared(name: "pushfleet_api_keyed_device", sql: APIKeyedQueries.device,
                                            params: [.bytea(keyHash), .uuid(id)])
        return KeyedRead(principal: try AccountStore.principal(r), object: try visible(r) ? APIReadStore.device(r, 0) : nil)
    }

    /// The key and the app, in one statement.
    public func app(keyHash: [UInt8], id: UUID) throws -> KeyedRead<PushApp> {
        let r = try connection.execPrepared(name: "pushfleet_api_keyed_app", sql: APIKeyedQueries.app,
                                            params: [.bytea(keyHash), .uuid(id)])
        return KeyedRead(principal: try AccountStore.principal(r), object: try visible(r) ? AppStore.decode(r, 0) : nil)
    }

    /// The key and the notification with its deliveries, in one statement.
    public func notification(keyHash: [UInt8], id: UUID) throws -> KeyedRead<APINotification> {
        let r = try connection.execPrepared(name: "pushfleet_api_keyed_notification", sql: APIKeyedQueries.notification,
                                            params: [.bytea(keyHash), .uuid(id)])
        return KeyedRead(principal: try AccountStore.principal(r),
                         object: try visible(r) ? APIReadStore.notificationWithDeliveries(r) : nil)
    }

    private func visible(_ r: PGResult) throws -> Bool { r.rowCount > 0 ? try !r.isNull(0, "id") : false }
}
