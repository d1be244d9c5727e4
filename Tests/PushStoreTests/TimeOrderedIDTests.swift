import Foundation
import XCTest
import PushTestSupport
@testable import PushStore

/// Notification ids are UUIDv7 (sql/0026, issue 17 part 6): the first 48 bits are the acceptance's
/// Unix milliseconds, so the primary keys that lead with a notification id take new entries at their
/// right edge instead of a random leaf of an index larger than memory (docs/bench.md, "History").
final class TimeOrderedIDTests: PGTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, directory: RepoPaths.sqlDirectory).migrate()
    }

    /// The first 12 hex digits of `id`, as milliseconds since the Unix epoch.
    private func millis(_ id: UUID) -> Int64 {
        Int64(String(PGUUIDText.format(id).replacingOccurrences(of: "-", with: "").prefix(12)), radix: 16) ?? -1
    }

    func testEnqueuedNotificationsGetVersion7IdsInAcceptanceOrder() throws {
        let app = try conn.exec("INSERT INTO push_apps (name) VALUES ('v7') RETURNING id").uuid(0, "id")
        var ids: [UUID] = []
        let before = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        for i in 0..<5 {
            let r = try conn.exec("SELECT notification_id FROM push_enqueue($1, 'test', ARRAY['u' || $2::text], NULL, 't', 'b', "
                                  + "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", [.uuid(app), .int(i)])
            ids.append(try r.uuid(0, "notification_id"))
            Thread.sleep(forTimeInterval: 0.003)
        }
        let after = Int64((Date().timeIntervalSince1970 * 1000).rounded(.up))
        for id in ids {
            let text = PGUUIDText.format(id)
            XCTAssertEqual(Array(text)[14], "7", "version 7: \(text)")
            XCTAssertTrue("89ab".contains(Array(text)[19]), "RFC 9562 variant: \(text)")
            XCTAssertGreaterThanOrEqual(millis(id), before - 5, "its time is the acceptance's")
            XCTAssertLessThanOrEqual(millis(id), after + 5)
        }
        XCTAssertEqual(ids.map(millis), ids.map(millis).sorted(), "accepted 3 ms apart: in order")
        XCTAssertEqual(ids.map(PGUUIDText.format), ids.map(PGUUIDText.format).sorted(), "so their keys sort in order too")
    }

    func testTheGeneratorIsRandomBeyondItsMillisecondAndTakesAGivenTime() throws {
        let r = try conn.exec("""
            SELECT count(DISTINCT u) AS n, count(DISTINCT left(u::text, 13)) AS prefixes,
                   bool_and(substr(u::text, 15, 1) = '7') AS v7, bool_and(substr(u::text, 20, 1) IN ('8', '9', 'a', 'b')) AS variant
              FROM (SELECT push_uuid_v7(timestamptz '2026-01-01T00:00:00.123Z') AS u FROM generate_series(1, 20000)) s
            """)
        XCTAssertEqual(try r.int(0, "n"), 20000, "74 random bits: no two alike")
        XCTAssertEqual(try r.int(0, "prefixes"), 1, "one millisecond, one prefix")
        XCTAssertEqual(try r.bool(0, "v7"), true)
        XCTAssertEqual(try r.bool(0, "variant"), true, "RFC 9562 variant bits 10, the v4's kept")
        let at = try conn.exec("SELECT push_uuid_v7(timestamptz '2026-01-01T00:00:00.123Z') AS u").uuid(0, "u")
        XCTAssertEqual(millis(at), 1_767_225_600_123)
    }

    /// sql/0027: the generator is one expression, which the planner inlines, so a statement that
    /// calls it (push_enqueue's INSERT, through the column default) never runs the SQL-function
    /// executor, which parsed and planned 0026's body again in every statement (~90 µs each).
    func testTheGeneratorIsInlinedIntoTheStatementsThatCallIt() throws {
        func explain(_ sql: String) throws -> String {
            let r = try conn.exec("EXPLAIN (VERBOSE, COSTS OFF) " + sql)
            return try r.rows.map { try r.string($0, "QUERY PLAN") }.joined(separator: "\n")
        }
        let plan = try explain("SELECT push_uuid_v7()")
        XCTAssertTrue(plan.contains("gen_random_uuid()"), plan)
        XCTAssertFalse(plan.contains("push_uuid_v7"), "inlined, not called: \(plan)")
        let insert = try explain("""
            INSERT INTO push_notifications (app_id, mode, user_ids, priority, ttl_seconds, accepted_at, expires_at)
            VALUES (gen_random_uuid(), 'test', ARRAY['u'], 'high', 60, now(), now())
            """)
        XCTAssertTrue(insert.contains("lpad(to_hex("), "the id default is the inlined expression: \(insert)")
        XCTAssertFalse(insert.contains("push_uuid_v7"), insert)
    }
}
