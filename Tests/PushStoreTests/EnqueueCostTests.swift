import Foundation
import XCTest
import PushTestSupport
@testable import PushStore

/// What sql/0021 changed in `push_enqueue`'s cost (issue 17, part 4), held by what the planner does
/// rather than by time: the measures of content that PL/pgSQL calls are inlined (a SQL function the
/// planner does not inline is parsed and planned again at every call from PL/pgSQL), they measure
/// what they measured before, and `push_enqueue` plans its statements once per session. That the
/// bounds, messages and answers did not change is held by `FieldBoundsTests` (every bound through
/// `push_enqueue` directly), the acceptance tests and the queue conformance suite.
final class EnqueueCostTests: PGTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, directory: RepoPaths.sqlDirectory).migrate()
    }

    /// The planner's rendering of a query's output columns (`EXPLAIN VERBOSE`).
    private func output(_ sql: String) throws -> String {
        let r = try conn.exec("EXPLAIN (VERBOSE, COSTS OFF) " + sql)
        return try r.rows.map { try r.string($0, "QUERY PLAN") }.first { $0.contains("Output:") } ?? ""
    }

    /// Inlined, a call is its body: the plan names `to_json` and `array_to_string`, never the
    /// functions. (Declared IMMUTABLE over a STABLE body, or with a subquery, they were not.)
    func testTheContentMeasuresAreInlined() throws {
        let plan = try output("""
            SELECT push_json_text_bytes(c.relname::text), push_loc_text_bytes(c.relname::text, ARRAY[c.relname::text],
                                                                                NULL, c.reloptions)
              FROM pg_class c
            """)
        XCTAssertTrue(plan.contains("to_json"), plan)
        XCTAssertTrue(plan.contains("array_to_string"), plan)
        XCTAssertFalse(plan.contains("push_json_text_bytes"), plan)
        XCTAssertFalse(plan.contains("push_loc_text_bytes"), plan)
    }

    /// push_loc_text_bytes counts what sql/0011's sum over the arguments counted: UTF-8 bytes, null
    /// arguments and null or empty lists as nothing.
    func testLocTextBytesCountsEveryArgumentsBytes() throws {
        let cases: [(String?, [String?]?, String?, [String?]?)] = [
            (nil, nil, nil, nil),
            ("K", [], "B", nil),
            ("GAME_INVITE", ["Jenna", "Frank"], nil, ["é", "日本語", nil, ""]),
            (nil, [nil, nil], "BODY_KEY", ["🙂"]),
        ]
        for (titleKey, titleArgs, bodyKey, bodyArgs) in cases {
            let r = try conn.exec("""
                SELECT push_loc_text_bytes($1, $2::text[], $3, $4::text[]) AS measured,
                       coalesce(octet_length($1), 0) + coalesce(octet_length($3), 0)
                       + coalesce((SELECT sum(octet_length(a)) FROM unnest($2::text[]) a), 0)
                       + coalesce((SELECT sum(octet_length(a)) FROM unnest($4::text[]) a), 0) AS summed
                """, [titleKey.map(PGValue.text), titleArgs.map(PGValue.textArray), bodyKey.map(PGValue.text),
                      bodyArgs.map(PGValue.textArray)])
            let expected = [titleKey, bodyKey].compactMap { $0?.utf8.count }.reduce(0, +)
                + ((titleArgs ?? []) + (bodyArgs ?? [])).compactMap { $0?.utf8.count }.reduce(0, +)
            XCTAssertEqual(try r.int64(0, "measured"), Int64(expected), "\(cases)")
            XCTAssertEqual(try r.int64(0, "measured"), try r.int64(0, "summed"))
        }
    }

    /// push_enqueue keeps its plans: the charges' query, planned for each call's values, cost
    /// about 150 us of planning per single-user notification (its generic plan, costed for an
    /// audience of unknown size, never looked cheaper than a custom one for one user).
    func testEnqueuePlansGenerically() throws {
        let r = try conn.exec("""
            SELECT array_to_string(proconfig, ',') AS config FROM pg_proc
             WHERE proname = 'push_enqueue' AND pronamespace = 'public'::regnamespace
            """)
        XCTAssertEqual(r.rowCount, 1, "one push_enqueue (no overload)")
        XCTAssertEqual(try r.string(0, "config"), "plan_cache_mode=force_generic_plan")
    }
}
