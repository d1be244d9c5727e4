import Foundation

/// One broken ledger invariant (R-SEND-8, R-SEND-9).
public struct LedgerViolation: Sendable, Equatable, Codable {
    /// Stable kind: `DUPLICATE_CHARGE`, `DUPLICATE_REFUND`, `REFUND_WITHOUT_CHARGE`,
    /// `NET_MISMATCH`, `DEVICE_COUNT_MISMATCH`, `SMS_LEDGER_MISMATCH`.
    public var violation: String
    /// The notification concerned.
    @PrefixedUUID<NotificationIDKind> public var notificationID: UUID
    /// The device concerned; nil for a notification-level violation (`DEVICE_COUNT_MISMATCH`).
    @PrefixedOptionalUUID<DeviceIDKind> public var deviceID: UUID?
    /// Human detail (counts, the delivery's ending, what it nets and should net).
    public var detail: String
}

/// What a ledger check covered.
public struct LedgerCheckScope: Sendable, Equatable, Codable {
    /// Notifications accepted in the window.
    public var notifications: Int
    /// Of those, the final ones (sent, sms_fallback, failed, cancelled).
    public var finalNotifications: Int
    /// Their ledger rows (charges and refunds).
    public var ledgerRows: Int
    /// Their delivery rows.
    public var deliveries: Int
}

/// Audits the ledger against the deliveries (SQL in `LedgerQueries`): at most one charge and
/// one refund per (notification, device), no refund without a charge, every final delivery nets
/// what R-SEND-9 says, and every final notification's `device_count` is the number of its devices
/// netting one charge. Read-only.
public final class LedgerStore {
    /// The connection this store runs on.
    public let connection: PGConnection

    /// Wraps an open connection.
    public init(connection: PGConnection) { self.connection = connection }

    /// The violations among notifications accepted in [`since`, `until`) (nil: unbounded), at most
    /// `limit`, ordered by kind then ids. Empty when the ledger is sound.
    /// - Throws: `PGError` from the server.
    public func check(since: Date? = nil, until: Date? = nil, limit: Int = 1000) throws -> [LedgerViolation] {
        let r = try connection.exec(LedgerQueries.violations, [since.map(PGValue.date), until.map(PGValue.date),
                                                               .int(max(1, limit))])
        return try r.rows.map { i in
            LedgerViolation(violation: try r.string(i, "violation"), notificationID: try r.uuid(i, "notification_id"),
                            deviceID: try r.isNull(i, "device_id") ? nil : try r.uuid(i, "device_id"),
                            detail: try r.string(i, "detail"))
        }
    }

    /// How many notifications, final notifications, ledger rows and deliveries the same window holds.
    /// - Throws: `PGError` from the server.
    public func checkScope(since: Date? = nil, until: Date? = nil) throws -> LedgerCheckScope {
        let r = try connection.exec(LedgerQueries.scope, [since.map(PGValue.date), until.map(PGValue.date)])
        return LedgerCheckScope(notifications: try r.int(0, "notifications"),
                                finalNotifications: try r.int(0, "final_notifications"),
                                ledgerRows: try r.int(0, "ledger_rows"), deliveries: try r.int(0, "deliveries"))
    }
}
