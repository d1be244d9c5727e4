import Foundation
import PushCore

/// One row of the usage report: an app's deliveries in one mode on one UTC day (R-SEND-9).
public struct UsageRow: Sendable, Equatable {
    /// The app.
    public var appID: UUID
    /// `test` or `live`.
    public var mode: String
    /// The UTC day, `YYYY-MM-DD`.
    public var day: String
    /// Charge rows of the ledger written that day.
    public var charged: Int
    /// Refund rows of the ledger written that day.
    public var refunded: Int
    /// SMS fallbacks taken that day (ledger rows of kind `sms`, R-SMS-1: one per SMS the provider
    /// took or may have taken), billed apart from deliveries.
    public var sms: Int = 0
    /// `charged - refunded`: the deliveries the day bills (SMS apart, in `sms`).
    public var net: Int { charged - refunded }
}

/// The days a usage report covers: UTC calendar days `from` to `to`, both included, at most 366.
public struct UsageRange: Sendable, Equatable {
    /// The first day's start (UTC midnight).
    public var start: Date
    /// The day after the last day's start (exclusive end).
    public var end: Date

    /// The most days one report covers.
    public static let maxDays = 366

    /// Parses `YYYY-MM-DD` days; absent `to` is today (UTC), absent `from` is 29 days before `to`.
    /// - Throws: `PushError` `VALIDATION_ERROR` naming `from` or `to` for a day that is not a real
    ///   `YYYY-MM-DD`, `to` before `from`, or more than 366 days.
    public static func parse(from: String?, to: String?, now: Date = Date()) throws -> UsageRange {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0)!
        func day(_ text: String, _ field: String) throws -> Date {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                  let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
                  let date = calendar.date(from: DateComponents(year: y, month: m, day: d)),
                  calendar.component(.day, from: date) == d, calendar.component(.month, from: date) == m else {
                throw PushError(.validationError, "\(field) must be a day, YYYY-MM-DD", field: field)
            }
            return date
        }
        let last = try to.map { try day($0, "to") } ?? calendar.startOfDay(for: now)
        let first = try from.map { try day($0, "from") } ?? last.addingTimeInterval(-29 * 86_400)
        guard first <= last else { throw PushError(.validationError, "to must not be before from", field: "to") }
        let days = Int((last.timeIntervalSince(first) / 86_400).rounded()) + 1
        guard days <= maxDays else {
            throw PushError(.validationError, "a report covers at most \(maxDays) days", field: "from")
        }
        return UsageRange(start: first, end: last.addingTimeInterval(86_400))
    }
}

/// A place in the usage report's order (day, then app, then mode): the last row of a page, from
/// which the next page starts. Its text, `YYYY-MM-DD.papp_....mode`, is the API's `starting_after`.
public struct UsageCursor: Sendable, Equatable {
    /// The row's UTC day, `YYYY-MM-DD`.
    public var day: String
    /// The row's app.
    public var appID: UUID
    /// The row's mode, `test` or `live`.
    public var mode: String

    /// Makes a cursor.
    public init(day: String, appID: UUID, mode: String) {
        self.day = day
        self.appID = appID
        self.mode = mode
    }

    /// The cursor after `row`.
    public init(after row: UsageRow) { self.init(day: row.day, appID: row.appID, mode: row.mode) }

    /// `YYYY-MM-DD.papp_....mode`.
    public var text: String { "\(day).\(PrefixedID.format(.app, appID)).\(mode)" }

    /// The cursor of `text`, or nil when it is not one (a day that is not real, an app id that is
    /// not one, a mode other than test or live).
    public static func parse(_ text: String) -> UsageCursor? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, (try? UsageRange.parse(from: String(parts[0]), to: String(parts[0]))) != nil,
              let app = PrefixedID.parse(String(parts[1]), as: .app), Mode(rawValue: String(parts[2])) != nil else { return nil }
        return UsageCursor(day: String(parts[0]), appID: app, mode: String(parts[2]))
    }
}

/// The usage report (issue 15 part 4): deliveries charged net of refunds per app, mode and day,
/// read from the ledger (SQL in `UsageQueries`). The one library `pushfleet usage` and
/// `GET /v1/push/usage` call.
public struct UsageStore {
    /// The most rows one page of the report answers (the next page starts after its last row).
    public static let maxRows = 10_000

    /// The session every call runs on.
    public let connection: PGConnection
    /// This store's page size (`maxRows`; tests page by fewer).
    public var pageRows = UsageStore.maxRows

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// The account's usage over `range`, of one app or every app (within `appIDs` when given), of
    /// one mode or both (nil), by day, app and mode, after `after` (the previous page's `next`);
    /// `next` is the cursor of the following page when more than `pageRows` rows remain.
    /// - Throws: `PushError` `NOT_FOUND` (field `app_id`) when `appID` is not a live app of the
    ///   account within `appIDs` (the API and the CLI answer one way, R-API-1); `PGError`.
    public func report(accountID: UUID, appID: UUID?, appIDs: [UUID]? = nil, mode: Mode?, range: UsageRange,
                       after: UsageCursor? = nil) throws -> (rows: [UsageRow], next: UsageCursor?) {
        if let appID { try AccountStore(connection: connection).requireOwnedApp(appID, accountID: accountID, appIDs: appIDs) }
        // The cursor's day bounds the ledger range too, so that later pages probe fewer days.
        let cursorDay = try after.map { try UsageRange.parse(from: $0.day, to: $0.day).start }
        let r = try connection.exec(UsageQueries.report, [
            .uuid(accountID), appID.map(PGValue.uuid), appIDs.map { .uuidArray($0) }, mode.map { .text($0.rawValue) },
            .date(max(range.start, cursorDay ?? range.start)), .date(range.end), .int(pageRows + 1),
            after.map { .text($0.day) }, after.map { .uuid($0.appID) }, after.map { .text($0.mode) },
        ])
        let rows = try r.rows.map { i in
            UsageRow(appID: try r.uuid(i, "app_id"), mode: try r.string(i, "mode"), day: try r.string(i, "day"),
                     charged: try r.int(i, "charged"), refunded: try r.int(i, "refunded"), sms: try r.int(i, "sms"))
        }
        let page = Array(rows.prefix(pageRows))
        return (page, rows.count > pageRows ? page.last.map(UsageCursor.init(after:)) : nil)
    }
}

/// What erasing one user did (`push_erase_user`, sql/0015).
public struct UserErasure: Sendable, Equatable {
    /// Active devices deactivated (reason `USER_ERASED`).
    public var devicesDeactivated: Int
    /// Notifications addressed to the user alone whose content and SMS parts were erased.
    public var notificationsErased: Int
    /// Notifications addressed to several that no longer name the user.
    public var notificationsUnnamed: Int
    /// Stored delivery payloads erased.
    public var payloadsErased: Int

    /// Makes a value.
    public init(devicesDeactivated: Int, notificationsErased: Int, notificationsUnnamed: Int, payloadsErased: Int) {
        self.devicesDeactivated = devicesDeactivated
        self.notificationsErased = notificationsErased
        self.notificationsUnnamed = notificationsUnnamed
        self.payloadsErased = payloadsErased
    }

    /// Reads the function's row.
    static func decode(_ r: PGResult) throws -> UserErasure {
        UserErasure(devicesDeactivated: try r.int(0, "devices_deactivated"), notificationsErased: try r.int(0, "notifications_erased"),
                    notificationsUnnamed: try r.int(0, "notifications_unnamed"), payloadsErased: try r.int(0, "payloads_erased"))
    }

    /// Runs `push_erase_user` on `connection` (one statement, one transaction).
    public static func run(_ connection: PGConnection, appID: UUID, mode: Mode, userID: String) throws -> UserErasure {
        try decode(try StoreErrors.mapped {
            try connection.exec(UsageQueries.eraseUser, [.uuid(appID), .text(mode.rawValue), .text(userID)])
        })
    }
}
