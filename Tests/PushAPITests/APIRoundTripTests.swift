import Foundation
import XCTest
import PushCore
import PushStore

/// The endpoints end to end (issue 14 part 4): pagination newest first with `has_more`, filters,
/// idempotent replays, cancel and its 409, delete and reactivation (R-DEV-7), keep-alive, and the
/// management address.
final class APIRoundTripTests: APITestCase {
    func testDevicesPageNewestFirstWithFilters() throws {
        var ids: [String] = []
        for i in 0..<5 { ids.append(try register(token: "page_\(i)", user: i % 2 == 0 ? "even" : "odd")) }
        let first = try call("GET", "/v1/push/devices?app_id=\(appID)&limit=2", key: testKey)
        XCTAssertEqual(first.status, 200, first.text)
        let page1 = try XCTUnwrap(first.json["data"] as? [[String: Any]]).compactMap { $0["id"] as? String }
        XCTAssertEqual(page1, [ids[4], ids[3]])
        XCTAssertEqual(first.json["has_more"] as? Bool, true)
        let second = try call("GET", "/v1/push/devices?app_id=\(appID)&limit=2&starting_after=\(ids[3])", key: testKey)
        XCTAssertEqual(try XCTUnwrap(second.json["data"] as? [[String: Any]]).compactMap { $0["id"] as? String }, [ids[2], ids[1]])
        let last = try call("GET", "/v1/push/devices?app_id=\(appID)&limit=2&starting_after=\(ids[1])", key: testKey)
        XCTAssertEqual(try XCTUnwrap(last.json["data"] as? [[String: Any]]).compactMap { $0["id"] as? String }, [ids[0]])
        XCTAssertEqual(last.json["has_more"] as? Bool, false)
        let even = try call("GET", "/v1/push/devices?app_id=\(appID)&user_id=even", key: testKey)
        XCTAssertEqual(try XCTUnwrap(even.json["data"] as? [[String: Any]]).compactMap { $0["id"] as? String }, [ids[4], ids[2], ids[0]])
        // Deleting deactivates (R-DEV-7); the active filter sees it; registering again reactivates.
        let deleted = try call("DELETE", "/v1/push/devices/\(ids[2])", key: testKey)
        XCTAssertEqual(deleted.json["active"] as? Bool, false)
        let active = try call("GET", "/v1/push/devices?app_id=\(appID)&active=false", key: testKey)
        XCTAssertEqual(try XCTUnwrap(active.json["data"] as? [[String: Any]]).compactMap { $0["id"] as? String }, [ids[2]])
        XCTAssertEqual(try call("DELETE", "/v1/push/devices/\(ids[2])", key: testKey).status, 200, "deleting again is harmless")
        let back = try call("PUT", "/v1/push/devices", key: testKey, json: deviceJSON(token: "page_2", user: "even"))
        XCTAssertEqual(back.json["id"] as? String, ids[2])
        XCTAssertEqual(back.json["active"] as? Bool, true)
        // Without app_id: every app of the account, still one mode.
        XCTAssertEqual((try call("GET", "/v1/push/devices?limit=100", key: testKey).json["data"] as? [Any])?.count, 5)
        XCTAssertEqual(try call("GET", "/v1/push/devices?starting_after=pdev_nope", key: testKey).status, 404)
    }

    func testNotificationsReplayCancelAndList() throws {
        try register(token: "rt_device")
        let body = #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"t","send_at":"\#(APITestCase.inADay)"}"#
        let created = try call("POST", "/v1/push/notifications", key: testKey, json: body, headers: [("Idempotency-Key", "k-1")])
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertNil(created.headers["idempotent-replayed"])
        let id = try XCTUnwrap(created.json["id"] as? String)
        XCTAssertTrue(created.json["encrypted"] is NSNull, "null until its send time")
        XCTAssertEqual(created.json["status"] as? String, "pending")
        let replay = try call("POST", "/v1/push/notifications", key: testKey, json: body, headers: [("Idempotency-Key", "k-1")])
        XCTAssertEqual(replay.status, 200)
        XCTAssertEqual(replay.headers["idempotent-replayed"], "true")
        XCTAssertEqual(replay.json["id"] as? String, id)
        XCTAssertEqual(try count("push_notifications"), 1)
        let other = try call("POST", "/v1/push/notifications", key: testKey, json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"now"}"#)
        XCTAssertEqual(other.status, 201)
        let list = try call("GET", "/v1/push/notifications?app_id=\(appID)", key: testKey)
        XCTAssertEqual(try XCTUnwrap(list.json["data"] as? [[String: Any]]).compactMap { $0["id"] as? String },
                       [try XCTUnwrap(other.json["id"] as? String), id], "newest first")
        XCTAssertNil((list.json["data"] as? [[String: Any]])?.first?["deliveries"], "lists leave deliveries out")
        let pending = try call("GET", "/v1/push/notifications?status=pending&limit=1", key: testKey)
        XCTAssertEqual((pending.json["data"] as? [Any])?.count, 1)
        XCTAssertEqual(pending.json["has_more"] as? Bool, true)
        let cancelled = try call("POST", "/v1/push/notifications/\(id)/cancel", key: testKey)
        XCTAssertEqual(cancelled.status, 200, cancelled.text)
        XCTAssertEqual(cancelled.json["status"] as? String, "cancelled")
        XCTAssertEqual(try count("push_ledger", "kind = 'refund'"), 1, "refunded")
        let again = try call("POST", "/v1/push/notifications/\(id)/cancel", key: testKey)
        XCTAssertEqual(again.status, 409)
        XCTAssertEqual(again.errorCode, "NOT_CANCELLABLE")
        XCTAssertTrue(again.text.contains("notification \(id) "), again.text)
        // The key reused with other content: the message names the first notification by its id (R-API-4).
        let reused = try call("POST", "/v1/push/notifications", key: testKey,
                              json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"other"}"#, headers: [("Idempotency-Key", "k-1")])
        XCTAssertEqual(reused.status, 409, reused.text)
        XCTAssertEqual(reused.errorCode, "IDEMPOTENCY_KEY_REUSED")
        XCTAssertTrue(reused.text.contains("notification \(id) "), reused.text)
    }

    /// `"audience": "users"`, what a notification answer says of a user list, is taken back in a
    /// request as that audience (the same as leaving it out): sent as the user list, answered
    /// `"audience": "users"`, replayed by the same body without it; without `user_ids` it is
    /// refused as absence is; `platforms` without `audience: all` is refused naming `platforms`,
    /// saying what is wrong, not as a missing `user_ids`. Nothing refused is written.
    func testAudienceUsersIsTheUserListAndPlatformsWithoutAllSayWhy() throws {
        try register(token: "aud_device")
        let body = #"{"app_id":"\#(appID)","audience":"users","user_ids":["user_1042"],"title":"t"}"#
        let created = try call("POST", "/v1/push/notifications", key: testKey, json: body, headers: [("Idempotency-Key", "k-aud")])
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertEqual(created.json["audience"] as? String, "users")
        XCTAssertEqual(created.json["user_count"] as? Int, 1)
        let id = try XCTUnwrap(created.json["id"] as? String)
        let shown = try call("GET", "/v1/push/notifications/\(id)", key: testKey)
        XCTAssertEqual(shown.json["audience"] as? String, "users")
        let replay = try call("POST", "/v1/push/notifications", key: testKey,
                              json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"t"}"#, headers: [("Idempotency-Key", "k-aud")])
        XCTAssertEqual(replay.status, 200, "the same notification with the field left out: \(replay.text)")
        XCTAssertEqual(replay.json["id"] as? String, id)
        let before = try count("push_notifications")
        let noUsers = try call("POST", "/v1/push/notifications", key: testKey, json: #"{"app_id":"\#(appID)","audience":"users","title":"t"}"#)
        XCTAssertEqual(noUsers.status, 422, noUsers.text)
        XCTAssertEqual(noUsers.errorField, "user_ids")
        for json in [#"{"app_id":"\#(appID)","platforms":["ios"],"title":"t"}"#,
                     #"{"app_id":"\#(appID)","audience":"users","user_ids":["user_1042"],"platforms":["ios"],"title":"t"}"#] {
            let r = try call("POST", "/v1/push/notifications", key: testKey, json: json)
            XCTAssertEqual(r.status, 422, r.text)
            XCTAssertEqual(r.errorField, "platforms", r.text)
            XCTAssertTrue(r.text.contains("narrows only a whole-app audience: give audience all with it"), r.text)
        }
        let unknown = try call("POST", "/v1/push/notifications", key: testKey,
                               json: #"{"app_id":"\#(appID)","audience":"everyone","user_ids":["user_1042"],"title":"t"}"#)
        XCTAssertEqual(unknown.errorField, "audience", unknown.text)
        XCTAssertTrue(unknown.text.contains("must be all (every active device of the app in its mode), users"), unknown.text)
        XCTAssertEqual(try count("push_notifications"), before, "a refused request wrote something")
    }

    /// Cancel takes no body: none or `{}` is fine, a member is refused like any unknown field (so
    /// nobody believes `{"reason": ...}` was kept), malformed JSON is 400, and nothing is cancelled.
    func testCancelRefusesABodyWithMembers() throws {
        try register(token: "cancel_body")
        let body = #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"t","send_at":"\#(APITestCase.inADay)"}"#
        let id = try XCTUnwrap(try call("POST", "/v1/push/notifications", key: testKey, json: body).json["id"] as? String)
        let path = "/v1/push/notifications/\(id)/cancel"
        let member = try call("POST", path, key: testKey, json: #"{"reason":"typo"}"#)
        XCTAssertEqual(member.status, 422, member.text)
        XCTAssertEqual(member.errorField, "reason")
        XCTAssertEqual(try call("POST", path, key: testKey, json: "{").status, 400)
        XCTAssertEqual(try call("POST", path, key: testKey, json: "{}", headers: [("Content-Type", "text/plain")]).status, 415)
        XCTAssertEqual(try count("push_notifications", "status = 'cancelled'"), 0)
        let empty = try call("POST", path, key: testKey, json: "{}")
        XCTAssertEqual(empty.status, 200, empty.text)
        XCTAssertEqual(empty.json["status"] as? String, "cancelled")
    }

    func testKeepAliveAndTheManagementAddress() throws {
        let c = try RawHTTP(port: port)
        for _ in 0..<5 {
            let r = try c.request("GET", "/v1/push/apps/\(appID)", headers: [("Authorization", "Bearer \(testKey)")])
            XCTAssertEqual(r.status, 200)
            XCTAssertNotNil(r.headers["request-id"])
        }
        let management = try XCTUnwrap(server.managementServer).port
        XCTAssertEqual(try RawHTTP.call(port: management, "GET", "/healthz").status, 200)
        XCTAssertEqual(try RawHTTP.call(port: management, "POST", "/metrics").status, 405)
        // With a body too: the method is wrong whatever the body (not 413 for a body over 0 bytes).
        for body in [Array("x".utf8), [UInt8](repeating: 0x61, count: 10_000)] {
            let r = try RawHTTP.call(port: management, "POST", "/metrics", body: body)
            XCTAssertEqual(r.status, 405, "\(body.count)-byte body: \(r.text)")
            XCTAssertEqual(r.headers["allow"], "GET, HEAD")
        }
        XCTAssertEqual(try RawHTTP.call(port: management, "GET", "/v1/push/apps").status, 404, "no API there")
        XCTAssertEqual(try RawHTTP.call(port: port, "GET", "/metrics").status, 404, "no metrics on the API address")
        let metrics = try RawHTTP.call(port: management, "GET", "/metrics").text
        for name in ["pushfleet_api_requests_total{route=\"/v1/push/apps/{id}\",method=\"GET\",status=\"200\"} 5",
                     "pushfleet_api_request_duration_seconds_bucket{route=\"/v1/push/apps/{id}\",le=\"+Inf\"} 5",
                     "pushfleet_api_db_pool_connections{state=\"in_use\"}", "pushfleet_api_db_pool_max_connections 8",
                     "pushfleet_api_db_pool_waiting", "pushfleet_api_rate_limited_total", "pushfleet_api_connections",
                     "pushfleet_api_inflight_requests", "pushfleet_api_deadline_closed_total", "pushfleet_api_ready",
                     "pushfleet_api_db_errors_total"] {
            XCTAssertTrue(metrics.contains(name), "\(name) missing from:\n\(metrics)")
        }
    }

    /// A client that resets its connection while its registration runs (as wrk does at the end of
    /// a run): the device is registered, and the exchange is counted with the answer its work got,
    /// 200 on its route, never as a status-0 "unmatched" request. (Here libmicrohttpd calls the
    /// handler again on resume before it sees the reset, so the answer is queued and the write
    /// fails; when it sees the reset first, the answer is never queued and the access log says
    /// `abort: "unsent"`. Which comes first is libmicrohttpd's timing; both must count 200.)
    func testAClientGoneMidRequestIsCountedWithTheAnswerItsWorkGot() throws {
        let holder = try db.database.connect()
        try holder.exec("BEGIN")
        try holder.exec("SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/test/gone_user', 0))", [.text(app.uuidString.lowercased())])
        do {
            let c = try RawHTTP(port: port)
            try c.send(RawHTTP.requestBytes("PUT", "/v1/push/devices",
                                            headers: [("Authorization", "Bearer \(testKey)"), ("Content-Type", "application/json")],
                                            body: Array(deviceJSON(token: "gone_token", user: "gone_user").utf8)))
            Thread.sleep(forTimeInterval: 0.3)
            c.reset()   // the client gives up while its request waits on the user's registration lock
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTAssertEqual(try count("push_devices", "token = 'gone_token'"), 0)
        try holder.exec("COMMIT")
        let management = try XCTUnwrap(server.managementServer).port
        let counted = "pushfleet_api_requests_total{route=\"/v1/push/devices\",method=\"PUT\",status=\"200\"} 1"
        var metrics = ""
        for _ in 0..<50 where !metrics.contains(counted) {
            Thread.sleep(forTimeInterval: 0.1)
            metrics = try RawHTTP.call(port: management, "GET", "/metrics").text
        }
        XCTAssertTrue(metrics.contains(counted), metrics)
        XCTAssertFalse(metrics.contains("status=\"0\""), metrics)
        XCTAssertEqual(try count("push_devices", "token = 'gone_token'"), 1, "its work was done")
    }
}
