import Foundation
import XCTest
@testable import PushAPI
import PushCore
@testable import PushStore
import PushWorker

/// What issue 24's fresh-user trial found (sql/0022): the confirmation rate counts only deliveries
/// sent since `confirm_deliveries` was turned on, in `pushfleet stats` and in the two `/metrics`
/// series alike (R-IDS-4); a `HEAD` of a preview confirms nothing; a whole revocation erases the
/// stored content at once and is refused before the notification is final; per-user revocations
/// are bounded at 1,000 users (R-LIM-1); notification answers show their audience.
final class PreviewTrialFixTests: PreviewTestCase {
    /// Two deliveries sent before the switch, three after: the rate is over the three, and the
    /// stats' row equals the worker's sent series and the API's confirmed series. A fetch of a
    /// delivery sent before the switch is served but confirms nothing (it does not count).
    func testTheRateCountsOnlyDeliveriesSentSinceConfirmDeliveriesWasTurnedOn() throws {
        let phones = try (1...2).map { try device("test_accept_before_\($0)", user: "early") }
        let early = try send(users: ["early"])
        let metrics = WorkerMetrics()
        try deliver(metrics: metrics)
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: #"{"confirm_deliveries":true}"#).status, 200)
        let late = try (1...3).map { try device("test_accept_after_\($0)", user: "late") }
        let n = try send(users: ["late"])
        try deliver(metrics: metrics)  // the same worker series; it refreshes the apps every statsInterval
        XCTAssertEqual(try fetch(early, token: phones[0].token).status, 200, "served, as before")
        for d in late.prefix(2) { XCTAssertEqual(try fetch(n, token: d.token).status, 200) }
        XCTAssertEqual(try count("push_deliveries", "confirmed_at IS NOT NULL"), 2, "the early delivery was not confirmed")

        let rates = try PreviewStore(connection: conn).confirmationRates(since: Date().addingTimeInterval(-3600))
        XCTAssertEqual(rates.map { "\($0.platform) \($0.sent) \($0.confirmed)" }, ["ios 3 2"], "\(rates)")
        let series = "{app_id=\"\(appID)\",mode=\"test\",platform=\"ios\"}"
        XCTAssertEqual(Self.value(metrics.render(), "pushfleet_pushes_sent_total" + series), 3, metrics.render())
        XCTAssertEqual(Self.value(try apiMetrics(), "pushfleet_pushes_confirmed_total" + series), 2)

        // Off clears the time; on again starts counting from then.
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: #"{"confirm_deliveries":false}"#).status, 200)
        XCTAssertEqual(try count("push_apps", "id = '\(app.uuidString.lowercased())' AND confirm_deliveries_since IS NULL"), 1)
        XCTAssertEqual(try PreviewStore(connection: conn).confirmationRates(since: Date().addingTimeInterval(-3600)), [])
    }

    /// A HEAD of a preview answers what the GET answers (200 with no body, or the same 404) and
    /// confirms nothing; the GET that follows confirms.
    func testAHeadOfAPreviewConfirmsNothingAndRefusesLikeTheGet() throws {
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: #"{"confirm_deliveries":true}"#).status, 200)
        let phone = try device("test_accept_head")
        let n = try send()
        try deliver()
        func head(_ token: String) throws -> RawHTTP.Response {
            let c = try RawHTTP(port: port)
            try c.send(RawHTTP.requestBytes("HEAD", "/v1/push/previews/\(n)", headers: [("Authorization", "Bearer \(token)")]))
            return try c.readHead()
        }
        let served = try head(phone.token)
        XCTAssertEqual(served.status, 200, served.text)
        XCTAssertEqual(try count("push_deliveries", "confirmed_at IS NOT NULL"), 0, "a HEAD delivers no content: no confirmation")
        XCTAssertEqual(Self.value(try apiMetrics(), "pushfleet_pushes_confirmed_total{app_id=\"\(appID)\",mode=\"test\",platform=\"ios\"}"), 0)
        let refused = try head(phone.token + "x")
        XCTAssertEqual(refused.status, 404)
        XCTAssertEqual(refused.headers["content-length"], try fetch(n, token: phone.token + "x").headers["content-length"],
                       "the same 404 as the GET's")
        XCTAssertEqual(try fetch(n, token: phone.token).status, 200)
        XCTAssertEqual(try count("push_deliveries", "confirmed_at IS NOT NULL"), 1, "the GET confirms")
    }

    /// A whole revocation of a notification still pending takes effect for fetches at once and is
    /// never refused (revoking mid-broadcast is when it matters); its content stays for the push
    /// and is erased as soon as the notification becomes final (the `push_erase_revoked` trigger).
    /// A whole revocation of a final notification erases the stored content at once (the
    /// erasure's columns and the test mode request bodies), in its transaction; a per-user one
    /// keeps it for the others.
    func testAWholeRevocationErasesTheContentAtOnceWhenFinalAndWhenItBecomesFinalOtherwise() throws {
        let alice = try device("test_accept_alice", user: "alice")
        let bob = try device("test_accept_bob", user: "bob")

        let early = try send(users: ["alice", "bob"])
        let earlyID = try XCTUnwrap(PrefixedID.parse(early, as: .notification)).uuidString.lowercased()
        let pending = try call("POST", "/v1/push/notifications/\(early)/revoke", key: testKey)
        XCTAssertEqual(pending.status, 200, pending.text)
        XCTAssertEqual(pending.json["revoked"] as? Bool, true)
        XCTAssertEqual(try count("push_notifications", """
            id = '\(earlyID)' AND revoked_at IS NOT NULL AND content_erased_at IS NULL AND title IS NOT NULL
            """), 1, "pending: revoked for fetches, the content kept for its push")
        try deliver()
        XCTAssertEqual(try count("push_deliveries", "notification_id = '\(earlyID)' AND status = 'sent'"), 2,
                       "revoking never stops a push")
        XCTAssertEqual(try count("push_notifications", """
            id = '\(earlyID)' AND finished_at IS NOT NULL AND content_erased_at IS NOT NULL AND title IS NULL
            AND body IS NULL AND data IS NULL
            """), 1, "erased as soon as it became final")
        XCTAssertEqual(try count("push_deliveries", "notification_id = '\(earlyID)' AND payload IS NOT NULL"), 0,
                       "the test mode request bodies written after the revocation are erased with it")
        XCTAssertEqual(try fetch(early, token: alice.token).status, 404)
        XCTAssertEqual(try fetch(early, token: bob.token).status, 404)

        let n = try send(users: ["alice", "bob"])
        let nid = try XCTUnwrap(PrefixedID.parse(n, as: .notification)).uuidString.lowercased()
        try deliver()
        XCTAssertEqual(try count("push_notifications", "id = '\(nid)' AND content_erased_at IS NULL AND title IS NOT NULL"), 1,
                       "a notification not revoked keeps its content for its preview window")
        XCTAssertGreaterThan(try count("push_deliveries", "notification_id = '\(nid)' AND payload IS NOT NULL"), 0,
                             "test mode keeps the request bodies until erased")

        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey,
                                json: #"{"user_ids":["alice"]}"#).status, 200)
        XCTAssertEqual(try count("push_notifications", "id = '\(nid)' AND content_erased_at IS NULL AND title IS NOT NULL"), 1,
                       "a per-user revocation keeps the content")
        XCTAssertEqual(try fetch(n, token: bob.token).status, 200)

        let all = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey)
        XCTAssertEqual(all.status, 200, all.text)
        XCTAssertEqual(all.json["revoked"] as? Bool, true)
        XCTAssertEqual(try count("push_notifications", """
            id = '\(nid)' AND content_erased_at IS NOT NULL AND revoked_at IS NOT NULL AND title IS NULL AND body IS NULL
            AND data IS NULL
            """), 1)
        XCTAssertEqual(try count("push_deliveries", "notification_id = '\(nid)' AND payload IS NOT NULL"), 0)
        XCTAssertEqual(try fetch(n, token: bob.token).status, 404)
        XCTAssertEqual(try fetch(n, token: alice.token).status, 404)
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey).status, 200, "again: nothing left to erase")
    }

    /// At most 1,000 revoked users per notification in all (R-LIM-1): 1,000 over two calls are
    /// taken, the 1,001st is 422 VALIDATION_ERROR naming `user_ids` and changes nothing; 1,001 in
    /// one call likewise.
    func testPerUserRevocationsStopAtOneThousandUsersPerNotification() throws {
        _ = try device("test_accept_bound", user: "u0")
        let n = try send(users: ["u0"])
        try deliver()
        func ids(_ r: Range<Int>) -> String { "{\"user_ids\":[" + r.map { "\"u\($0)\"" }.joined(separator: ",") + "]}" }
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: ids(0..<600)).status, 200)
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: ids(600..<1000)).status, 200)
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: ids(0..<1000)).status, 200,
                       "the same 1,000 again add none")
        let over = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: ids(1000..<1001))
        XCTAssertEqual(over.status, 422, over.text)
        XCTAssertEqual(over.errorCode, "VALIDATION_ERROR")
        XCTAssertEqual(over.json["error"].flatMap { ($0 as? [String: Any])?["field"] as? String }, "user_ids", over.text)
        let nid = try XCTUnwrap(PrefixedID.parse(n, as: .notification)).uuidString.lowercased()
        XCTAssertEqual(try count("push_notifications", "id = '\(nid)' AND cardinality(revoked_user_ids) = 1000"), 1)
        let n2 = try send(users: ["u0"])
        try deliver()
        let oneCall = try call("POST", "/v1/push/notifications/\(n2)/revoke", key: testKey, json: ids(0..<1001))
        XCTAssertEqual(oneCall.status, 422, oneCall.text)
        XCTAssertTrue(oneCall.text.contains("user_ids"), oneCall.text)
    }

    /// A notification's answers (one, the list, the CLI's report) show its audience: `all` with
    /// the platforms it was narrowed to, or `users` with how many user ids it names.
    func testNotificationAnswersShowTheAudience() throws {
        _ = try device("test_accept_aud", user: "u1")
        let listed = try send(users: ["u1", "u2"])
        let r = try call("POST", "/v1/push/notifications", key: testKey,
                         json: "{\"app_id\":\"\(appID)\",\"audience\":\"all\",\"platforms\":[\"ios\",\"android\"],\"title\":\"Hi\"}")
        XCTAssertEqual(r.status, 201, r.text)
        let all = try XCTUnwrap(r.json["id"] as? String)
        XCTAssertEqual(r.json["audience"] as? String, "all", r.text)
        XCTAssertEqual(r.json["platforms"] as? [String], ["android", "ios"], r.text)
        XCTAssertTrue(r.json["user_count"] is NSNull, r.text)
        let one = try call("GET", "/v1/push/notifications/\(listed)", key: testKey)
        XCTAssertEqual(one.json["audience"] as? String, "users", one.text)
        XCTAssertEqual(one.json["user_count"] as? Int, 2, one.text)
        XCTAssertTrue(one.json["platforms"] is NSNull, one.text)
        let page = try call("GET", "/v1/push/notifications?app_id=\(appID)", key: testKey)
        let items = (page.json["data"] as? [[String: Any]]) ?? []
        XCTAssertEqual(Set(items.compactMap { $0["audience"] as? String }), ["all", "users"], page.text)

        let store = NotificationStore(connection: conn)
        let report = try XCTUnwrap(try store.report(id: try XCTUnwrap(PrefixedID.parse(all, as: .notification))))
        XCTAssertEqual(report.audience, "all")
        XCTAssertEqual(report.platforms, ["android", "ios"])
        let listedReport = try XCTUnwrap(try store.report(id: try XCTUnwrap(PrefixedID.parse(listed, as: .notification))))
        XCTAssertEqual(listedReport.audience, "users")
        XCTAssertEqual(listedReport.userIDs, ["u1", "u2"])
        XCTAssertNil(listedReport.platforms)
    }
}
