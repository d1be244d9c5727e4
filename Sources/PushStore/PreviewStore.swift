import Foundation
import PushCore

/// What a successful preview fetch read (R-IDS-2): the notification's content and, when the
/// device has a key, the key to seal it to; `newlyConfirmed` when this fetch confirmed the delivery.
public struct PreviewContent: Sendable, Equatable {
    /// The notification.
    public var notificationID: UUID
    /// Its app and mode.
    public var appID: UUID
    public var mode: String
    /// The fetching device and its platform.
    public var deviceID: UUID
    public var platform: String
    /// The device's current key (65-byte point) and kid, nil when it has none.
    public var publicKey: [UInt8]?
    public var kid: String?
    /// The content as stored (`data` is the client's JSON object text, key order kept).
    public var title: String?
    public var body: String?
    public var data: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    /// The notification's loc keys and args (R-KIND-3); the args as JSON array text.
    public var titleLocKey: String?
    public var titleLocArgsJSON: String?
    public var bodyLocKey: String?
    public var bodyLocArgsJSON: String?
    /// True when this fetch was the delivery's first confirmation (R-IDS-4).
    public var newlyConfirmed: Bool
}

/// A delivery a receipt confirmed (R-IDS-4): the labels of the confirmation metric.
public struct ConfirmedDelivery: Sendable, Equatable {
    public var appID: UUID
    public var mode: String
    public var platform: String
}

/// The preview fetch, receipts and revocation (issue 24, R-IDS-2..4), SQL in `PreviewQueries`.
/// The fetch and the receipt are one prepared statement each, whatever they are sent (R-IDS-3).
public final class PreviewStore {
    /// The session every call runs on.
    public let connection: PGConnection

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// The content for the device of `tokenHash` (SHA-256 of its preview token) and
    /// `notificationID` (pass `PreviewStore.noNotification` for a malformed id), or nil for every
    /// refusal alike. One statement, the same lookups in every case. `confirm` false (a `HEAD`:
    /// no content reaches the device) leaves the delivery unconfirmed (R-IDS-4).
    public func fetch(tokenHash: [UInt8], notificationID: UUID, confirm: Bool = true) throws -> PreviewContent? {
        let r = try connection.execPrepared(name: "pushfleet_preview_fetch", sql: PreviewQueries.fetch,
                                            params: [.bytea(tokenHash), .uuid(notificationID), .bool(confirm)])
        guard r.rowCount == 1, try r.bool(0, "allowed") else { return nil }
        return PreviewContent(
            notificationID: try r.uuid(0, "notification_id"), appID: try r.uuid(0, "app_id"), mode: try r.string(0, "mode"),
            deviceID: try r.uuid(0, "device_id"), platform: try r.string(0, "platform"),
            publicKey: try r.decode(0, "public_key"), kid: try r.decode(0, "kid"), title: try r.decode(0, "title"),
            body: try r.decode(0, "body"), data: try r.decode(0, "data"), badge: try r.decode(0, "badge"),
            sound: try r.decode(0, "sound"), threadID: try r.decode(0, "thread_id"),
            titleLocKey: try r.decode(0, "title_loc_key"), titleLocArgsJSON: try r.decode(0, "title_loc_args"),
            bodyLocKey: try r.decode(0, "body_loc_key"), bodyLocArgsJSON: try r.decode(0, "body_loc_args"),
            newlyConfirmed: try r.bool(0, "newly_confirmed"))
    }

    /// Records a receipt: the delivery confirmed when the token's device has a sent delivery of the
    /// notification and the app confirms deliveries. Returns the confirmation's labels only when
    /// this receipt was its first; nil in every other case (the caller answers 204 regardless).
    public func receipt(tokenHash: [UInt8], notificationID: UUID) throws -> ConfirmedDelivery? {
        let r = try connection.execPrepared(name: "pushfleet_preview_receipt", sql: PreviewQueries.receipt,
                                            params: [.bytea(tokenHash), .uuid(notificationID)])
        guard r.rowCount == 1, try r.bool(0, "newly_confirmed") else { return nil }
        return ConfirmedDelivery(appID: try r.uuid(0, "app_id"), mode: try r.string(0, "mode"),
                                 platform: try r.string(0, "platform"))
    }

    /// Revokes the notification's content for every device (`userIDs` nil) or for those users'
    /// devices (`push_revoke`, sql/0020). False for an unknown notification.
    /// - Throws: `PushError` `VALIDATION_ERROR` (field `user_ids`); `PGError`.
    public func revoke(notificationID: UUID, userIDs: [String]?) throws -> Bool {
        try StoreErrors.mapped {
            try connection.exec(PreviewQueries.revoke, [.uuid(notificationID), userIDs.map { .textArray($0) }])
                .bool(0, "revoked")
        }
    }

    /// The id a malformed notification id is looked up as (the all-zero UUID, never a row's).
    public static let noNotification = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
}

/// Sent and confirmed deliveries of one app, mode and platform over a window (R-IDS-4), for
/// `pushfleet stats`: the same rate the Prometheus series give, read from the delivery rows.
public struct ConfirmationRate: Sendable, Equatable, Codable {
    @PrefixedUUID<AppIDKind> public var appID: UUID
    public var mode: String
    /// `ios`, `android`, `web`, or `other` for a device row gone since (R-DEV-7).
    public var platform: String
    public var sent: Int64
    public var confirmed: Int64
}

extension PreviewStore {
    /// Sent deliveries finished since `since` that count towards the confirmation rate (of apps with
    /// `confirm_deliveries`, sent since it was turned on: `PreviewQueries.counted`), and how many of
    /// them are confirmed, by app, mode and platform. A range of `push_deliveries_finished_idx`
    /// (an operator's command, never a hot path).
    public func confirmationRates(since: Date) throws -> [ConfirmationRate] {
        let r = try connection.exec(PreviewQueries.confirmationRates, [.date(since)])
        return try r.rows.map { i in
            ConfirmationRate(appID: try r.uuid(i, "app_id"), mode: try r.string(i, "mode"), platform: try r.string(i, "platform"),
                             sent: try r.int64(i, "sent"), confirmed: try r.int64(i, "confirmed"))
        }
    }
}
