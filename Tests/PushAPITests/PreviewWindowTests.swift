import Foundation
import XCTest
import PushCore
import PushStore
import PushWorker

/// The preview window of `ids_only` content (issue 24 part 4): written when the send time comes,
/// never past the TTL, and the content erased once it is over, like any other content after it.
final class PreviewWindowTests: PreviewTestCase {
    /// R-LIM-1: `preview_window_seconds` past its bound is a 422 naming the field, on create and on
    /// update, never a 500: a number past PostgreSQL's `int` (2^31 - 1) used to reach
    /// `push_app_set_preview` and fail there as a data error (found by schemathesis in CI). The bounds
    /// themselves are accepted, and a refused update changes nothing.
    func testAPreviewWindowPastItsBoundIsAValidationErrorNeverAServerError() throws {
        for bad in ["60040519485336", "2147483648", "2419201", "59", "0", "-1"] {
            let r = try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: "{\"preview_window_seconds\":\(bad)}")
            XCTAssertEqual(r.status, 422, "\(bad): \(r.text)")
            XCTAssertEqual(r.errorField, "preview_window_seconds", bad)
            let created = try call("POST", "/v1/push/apps", key: testKey, json: "{\"name\":\"w\",\"preview_window_seconds\":\(bad)}")
            XCTAssertEqual(created.status, 422, "\(bad): \(created.text)")
            XCTAssertEqual(created.errorField, "preview_window_seconds", bad)
        }
        let app = try call("GET", "/v1/push/apps/\(appID)", key: testKey)
        XCTAssertEqual(app.json["preview_window_seconds"] as? Int, 259_200, "the refused updates changed nothing")
        for good in [60, 2_419_200] {
            let r = try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: "{\"preview_window_seconds\":\(good)}")
            XCTAssertEqual(r.status, 200, r.text)
            XCTAssertEqual(r.json["preview_window_seconds"] as? Int, good)
        }
    }

    /// `push_preview_until` sets the window end at the send time for an ids_only notification only:
    /// least(started_at + the app's window, expires_at). The content mode column is sql/0019's
    /// (issue 24 part 1); where this branch runs without it, the test adds it inside a transaction
    /// it rolls back, so the trigger is exercised either way.
    func testTheWindowEndsAtTheAppsWindowAfterTheSendTimeAndNeverPastTheTTL() throws {
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: #"{"preview_window_seconds":3600}"#).status, 200)
        let later = "\"send_at\":\"\(APITestCase.inADay)\""
        let long = try XCTUnwrap(PrefixedID.parse(try send(extra: ",\"title\":\"a\",\(later)"), as: .notification))
        let short = try XCTUnwrap(PrefixedID.parse(try send(extra: ",\"title\":\"b\",\"ttl\":600,\(later)"), as: .notification))
        // As if its send time had come early: it expires 10 minutes from now, before the window ends.
        try conn.exec("UPDATE push_notifications SET expires_at = now() + interval '10 minutes' WHERE id = $1", [.uuid(short)])
        let sealed = try XCTUnwrap(PrefixedID.parse(try send(extra: ",\"title\":\"c\",\(later)"), as: .notification))
        let c: PGConnection = conn
        try c.exec("BEGIN")
        defer { _ = try? c.exec("ROLLBACK") }
        do {
            try c.exec("ALTER TABLE push_notifications ADD COLUMN IF NOT EXISTS content_mode text")
            try c.exec("UPDATE push_notifications SET content_mode = 'ids_only' WHERE id = ANY($1::uuid[])",
                       [.uuidArray([long, short])])
            try c.exec("UPDATE push_notifications SET content_mode = 'sealed' WHERE id = $1", [.uuid(sealed)])
            try c.exec("UPDATE push_notifications SET started_at = now() WHERE id = ANY($1::uuid[])",
                       [.uuidArray([long, short, sealed])])
            let r = try c.exec("""
                SELECT id, preview_until = started_at + interval '1 hour' AS window_end,
                       preview_until = expires_at AS ttl_end, preview_until IS NULL AS none
                  FROM push_notifications WHERE id = ANY($1::uuid[])
                """, [.uuidArray([long, short, sealed])])
            var seen: [UUID: (Bool?, Bool?, Bool)] = [:]
            for i in r.rows { seen[try r.uuid(i, "id")] = (try r.decode(i, "window_end"), try r.decode(i, "ttl_end"), try r.bool(i, "none")) }
            XCTAssertEqual(seen[long]?.0, true, "the app's window after the send time")
            XCTAssertEqual(seen[short]?.1, true, "never past the TTL")
            XCTAssertEqual(seen[sealed]?.2, true, "no window for a sealed notification")
        }
    }

    /// The Maintainer erases a final notification's content once greatest(finished_at,
    /// preview_until) is past: a notification inside its window keeps its content (and is served),
    /// then loses it (and answers 404) when the window is over.
    func testContentIsErasedWhenThePreviewWindowIsOverAndNotBefore() throws {
        let phone = try device("test_accept")
        let held = try send()
        let plain = try send()
        try deliver()
        let heldID = try XCTUnwrap(PrefixedID.parse(held, as: .notification))
        try conn.exec("UPDATE push_notifications SET preview_until = now() + interval '1 hour' WHERE id = $1", [.uuid(heldID)])
        // The app is ids_only (PreviewTestCase): both got the app's 72-hour window at their send
        // time; the plain one is made one without a window.
        try conn.exec("UPDATE push_notifications SET preview_until = NULL WHERE id = $1",
                      [.uuid(try XCTUnwrap(PrefixedID.parse(plain, as: .notification)))])
        let maintainer = Maintainer(config: Maintainer.Config())
        XCTAssertEqual(try maintainer.runOnce(connection: conn).erased, 1, "only the one without a window")
        XCTAssertEqual(try count("push_notifications", "content_erased_at IS NOT NULL"), 1)
        XCTAssertEqual(try fetch(plain, token: phone.token).status, 404)
        XCTAssertEqual(try fetch(held, token: phone.token).status, 200)
        try conn.exec("UPDATE push_notifications SET preview_until = now() - interval '1 second' WHERE id = $1", [.uuid(heldID)])
        XCTAssertEqual(try maintainer.runOnce(connection: conn).erased, 1)
        XCTAssertEqual(try count("push_notifications", "title IS NOT NULL OR body IS NOT NULL OR data IS NOT NULL"), 0)
        XCTAssertEqual(try fetch(held, token: phone.token).status, 404)
    }
}
