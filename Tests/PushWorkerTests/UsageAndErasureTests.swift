import Foundation
import PushAcceptance
import PushCore
import PushStore
import PushTestSupport
@testable import PushWorker
import XCTest

/// The usage report (issue 15 part 4) and per-user erasure (part 6), on PostgreSQL after a real
/// worker run in test mode (the simulator; test mode stores each delivery's request body).
final class UsageAndErasureTests: PGWorkerTestCase {
    private var account: UUID!

    override func setUpWithError() throws {
        try super.setUpWithError()
        account = try conn.exec("SELECT push_default_account() AS id").uuid(0, "id")
    }

    /// A mixed run: two apps, charges at acceptance, a DEVICE_GONE refund (a device deleted
    /// before the send time), a cancelled notification's refunds, ledger rows spread over three
    /// days, an SMS taken. The report equals the ledger's charges minus refunds, and its SMS rows,
    /// per app, mode and day computed directly in SQL, and the range and mode filters cut it as
    /// they say.
    func testUsageEqualsTheLedgersChargesMinusRefundsComputedInSQL() throws {
        let a = try createApp(name: "usage a"), b = try createApp(name: "usage b")
        let gone = try register(a, user: "u1")
        try register(a, user: "u1")
        try register(a, user: "u2")
        try register(b, user: "u3")
        _ = try enqueue(a, users: ["u1", "u2"])
        _ = try enqueue(a, users: ["u1"])
        XCTAssertTrue(try DeviceRegistry(connection: conn).delete(appID: a, mode: .test, deviceID: gone))
        _ = try enqueue(b, users: ["u3"])
        let later = try enqueue(b, users: ["u3"]) { $0.sendAt = Date().addingTimeInterval(3_600) }
        try AcceptanceService(connection: conn).cancelNotification(id: later, appID: b, mode: .test)
        try drain(try makeWorker(), connection: workerConn)
        XCTAssertGreaterThan(try int("SELECT count(*)::int FROM push_ledger WHERE kind = 'refund'"), 0, "the run has refunds")
        // An SMS fallback taken (R-SMS-1: one ledger row of kind sms on no device), as the SMS
        // dispatcher records it: counted apart as `sms`, never in charged, refunded or net.
        _ = try conn.exec("""
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT id, '00000000-0000-0000-0000-000000000000', 'sms', app_id, mode, 'queued'
              FROM push_notifications WHERE app_id = $1 ORDER BY accepted_at LIMIT 1
            """, [.uuid(b)])
        // Spread the rows over days: some of a's yesterday, one of b's two days ago, one 40 days ago.
        _ = try conn.exec("""
            UPDATE push_ledger SET created_at = created_at - interval '1 day'
             WHERE app_id = $1 AND device_id = $2
            """, [.uuid(a), .uuid(gone)])
        _ = try conn.exec("""
            UPDATE push_ledger SET created_at = created_at - interval '2 days'
             WHERE ctid = (SELECT ctid FROM push_ledger WHERE app_id = $1 AND kind = 'charge' LIMIT 1)
            """, [.uuid(b)])
        _ = try conn.exec("""
            UPDATE push_ledger SET created_at = created_at - interval '40 days'
             WHERE ctid = (SELECT ctid FROM push_ledger WHERE app_id = $1 AND kind = 'charge'
                            AND created_at > now() - interval '1 day' LIMIT 1)
            """, [.uuid(a)])
        func expected(since days: Int) throws -> [String] {
            let r = try conn.exec("""
                SELECT app_id::text || ' ' || mode || ' ' || (created_at AT TIME ZONE 'UTC')::date::text || ' '
                       || count(*) FILTER (WHERE kind = 'charge') || ' ' || count(*) FILTER (WHERE kind = 'refund') || ' '
                       || (count(*) FILTER (WHERE kind = 'charge') - count(*) FILTER (WHERE kind = 'refund')) || ' '
                       || count(*) FILTER (WHERE kind = 'sms') AS line
                  FROM push_ledger
                 WHERE created_at >= (now() AT TIME ZONE 'UTC')::date - $1::int
                 GROUP BY app_id, mode, (created_at AT TIME ZONE 'UTC')::date ORDER BY 1
                """, [.int(days)])
            return try r.rows.map { try r.string($0, "line") }
        }
        func lines(_ rows: [UsageRow]) -> [String] {
            rows.map { "\($0.appID.uuidString.lowercased()) \($0.mode) \($0.day) \($0.charged) \($0.refunded) \($0.net) \($0.sms)" }.sorted()
        }
        let store = UsageStore(connection: conn)
        let month = try store.report(accountID: account, appID: nil, mode: .test, range: try UsageRange.parse(from: nil, to: nil))
        XCTAssertEqual(lines(month.rows), try expected(since: 29))
        XCTAssertEqual(Set(month.rows.map(\.day)).count, 3, "three days of rows in the default range")
        let from = ISO8601DateFormatter.string(from: Date().addingTimeInterval(-45 * 86_400), timeZone: TimeZone(identifier: "UTC")!,
                                               formatOptions: [.withFullDate])
        let wide = try store.report(accountID: account, appID: nil, mode: nil, range: try UsageRange.parse(from: from, to: nil))
        XCTAssertEqual(lines(wide.rows), try expected(since: 45), "the 40-day-old charge is in a 45-day range")
        XCTAssertEqual(wide.rows.map(\.net).reduce(0, +),
                       try int("SELECT (count(*) FILTER (WHERE kind = 'charge') - count(*) FILTER (WHERE kind = 'refund'))::int FROM push_ledger"))
        let onlyB = try store.report(accountID: account, appID: b, mode: .test, range: try UsageRange.parse(from: nil, to: nil))
        XCTAssertEqual(Set(onlyB.rows.map(\.appID)), [b])
        XCTAssertTrue(try store.report(accountID: account, appID: nil, mode: .live, range: try UsageRange.parse(from: nil, to: nil)).rows.isEmpty)
        XCTAssertThrowsError(try UsageRange.parse(from: "2026-02-30", to: nil))
        XCTAssertThrowsError(try UsageRange.parse(from: "2025-01-01", to: "2026-12-01"), "over 366 days")

        // Pages: one row a page walks the whole report in order, each `next` the last row's
        // cursor, and the last page has none (a page that stops early was `has_more` with no way on).
        XCTAssertGreaterThan(wide.rows.count, 2, "the walk needs several pages")
        XCTAssertNil(wide.next)
        var paging = UsageStore(connection: conn)
        paging.pageRows = 1
        var walked: [UsageRow] = [], after: UsageCursor?, pages = 0
        repeat {
            let page = try paging.report(accountID: account, appID: nil, mode: nil, range: try UsageRange.parse(from: from, to: nil),
                                         after: after)
            XCTAssertEqual(page.rows.count, 1)
            walked += page.rows
            after = page.next
            pages += 1
            if let after { XCTAssertEqual(UsageCursor.parse(after.text), after, "the cursor's text reads back") }
        } while after != nil && pages <= wide.rows.count
        XCTAssertEqual(walked, wide.rows)
        XCTAssertNil(UsageCursor.parse("2026-02-30.\(PrefixedID.format(.app, a)).test"))
        XCTAssertNil(UsageCursor.parse("2026-02-03.\(PrefixedID.format(.app, a)).prod"))

        // Another account's app, and an app outside a scoped credential's apps: NOT_FOUND, as the API
        // answers (R-API-1), not an empty report.
        let other = try AccountStore(connection: conn).createAccount(name: "other")
        let theirs = try AppStore(connection: conn).appCreate(name: "theirs", accountID: other.id).id
        for (app, scope) in [(theirs, nil), (b, [a])] as [(UUID, [UUID]?)] {
            XCTAssertThrowsError(try store.report(accountID: account, appID: app, appIDs: scope, mode: nil,
                                                  range: try UsageRange.parse(from: nil, to: nil))) {
                XCTAssertEqual(($0 as? PushError)?.code, .notFound)
                XCTAssertEqual(($0 as? PushError)?.field, "app_id")
            }
            XCTAssertThrowsError(try AuditStore(connection: conn).list(accountID: account, appID: app, appIDs: scope, after: nil, limit: 10)) {
                XCTAssertEqual(($0 as? PushError)?.code, .notFound)
            }
        }
    }

    /// Every row of every table as text, with its bytea columns readable (test mode's stored
    /// request bodies are bytea: their hex text is searched too).
    private func everyRow() throws -> String {
        let tables = try conn.exec("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
        return try tables.rows.map { i -> String in
            let t = try tables.string(i, "tablename")
            return try conn.exec("SELECT coalesce(string_agg(x::text, E'\\n'), '') AS rows FROM \(t) x").string(0, "rows")
        }.joined(separator: "\n")
    }

    private func found(_ marker: String, in text: String) -> Bool {
        let hex = marker.utf8.map { String(format: "%02x", $0) }.joined()
        return text.contains(marker) || text.contains(hex)
    }

    /// Erasing one user leaves no title, body, data or SMS phone or text of theirs in any table;
    /// a notification to several keeps its content without naming them, and their deliveries of
    /// it lose their stored payloads; another user is untouched; a second erasure changes nothing.
    func testErasingAUserLeavesNoContentOfTheirsInAnyTable() throws {
        let app = try createApp(name: "erasure")
        let alice1 = try register(app, user: "alice")
        let alice2 = try register(app, user: "alice", platform: "android")
        let bob = try register(app, user: "bob")
        let alone = try enqueue(app, users: ["alice"], title: "ALICE-TITLE-7f3a", body: "ALICE-BODY-7f3a") {
            $0.data = #"{"secret":"ALICE-DATA-7f3a"}"#
            $0.smsPhone = "+15550107731"
            $0.smsText = "ALICE-SMS-7f3a"
        }
        let shared = try enqueue(app, users: ["alice", "bob"], title: "SHARED-TITLE-7f3a", body: "SHARED-BODY")
        let bobs = try enqueue(app, users: ["bob"], title: "BOB-TITLE-7f3a", body: "BOB-BODY")
        try drain(try makeWorker(), connection: workerConn)
        let before = try everyRow()
        for marker in ["ALICE-TITLE-7f3a", "ALICE-BODY-7f3a", "ALICE-DATA-7f3a", "ALICE-SMS-7f3a", "+15550107731"] {
            XCTAssertTrue(found(marker, in: before), "\(marker) is stored before the erasure (the test would prove nothing)")
        }
        XCTAssertGreaterThan(try int("SELECT count(*)::int FROM push_deliveries WHERE notification_id = $1 AND payload IS NOT NULL",
                                     [.uuid(shared)]), 0, "test mode stored the shared notification's bodies")

        let service = AcceptanceService(connection: conn)
        let erased = try service.eraseUser(appID: app, mode: .test, userID: "alice")
        XCTAssertEqual(erased, UserErasure(devicesDeactivated: 2, notificationsErased: 1, notificationsUnnamed: 1, payloadsErased: 4))

        let after = try everyRow()
        for marker in ["ALICE-TITLE-7f3a", "ALICE-BODY-7f3a", "ALICE-DATA-7f3a", "ALICE-SMS-7f3a", "+15550107731"] {
            XCTAssertFalse(found(marker, in: after), "\(marker) is still stored")
        }
        XCTAssertEqual(try conn.exec("SELECT user_ids::text FROM push_notifications WHERE id = $1", [.uuid(alone)]).string(0, 0), "{}")
        XCTAssertEqual(try conn.exec("SELECT user_ids::text || title FROM push_notifications WHERE id = $1", [.uuid(shared)]).string(0, 0),
                       "{bob}SHARED-TITLE-7f3a", "the shared notification keeps its content, without alice")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_deliveries WHERE notification_id = $1 AND device_id = ANY($2) AND payload IS NOT NULL",
                               [.uuid(shared), .uuidArray([alice1, alice2])]), 0)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_deliveries WHERE notification_id = $1 AND device_id = $2 AND payload IS NOT NULL",
                               [.uuid(shared), .uuid(bob)]), 1, "bob's delivery keeps its body")
        XCTAssertTrue(found("BOB-TITLE-7f3a", in: after), "bob's own notification is untouched")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_devices WHERE user_id = 'alice' AND active"), 0)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_devices WHERE id = $1 AND active", [.uuid(bob)]), 1)
        XCTAssertEqual(try int("SELECT active_count::int FROM push_device_counts WHERE app_id = $1 AND mode = 'test'", [.uuid(app)]), 1)
        _ = bobs

        XCTAssertEqual(try service.eraseUser(appID: app, mode: .test, userID: "alice"),
                       UserErasure(devicesDeactivated: 0, notificationsErased: 0, notificationsUnnamed: 0, payloadsErased: 0))
        XCTAssertEqual(try everyRow(), after, "erasing again changes nothing")
        XCTAssertThrowsError(try service.eraseUser(appID: app, mode: .test, userID: "")) {
            XCTAssertEqual(($0 as? AcceptanceError)?.field, "user_id")
        }
    }
}
