import Foundation
import XCTest
import PushAPI
import PushCore
import PushStore
import PushTestSupport

/// The audit log (issue 15 part 5), usage by mode (part 4) and erasing a user (part 6) over the
/// API, with keys and OAuth tokens.
final class AuditAndUsageRoutesTests: AccessTokenTestCase {
    private func events(_ key: String, _ query: String = "") throws -> [[String: Any]] {
        let r = try call("GET", "/v1/push/audit\(query)", key: key)
        XCTAssertEqual(r.status, 200, r.text)
        return r.json["data"] as? [[String: Any]] ?? []
    }

    /// Key creation and revocation, credential changes and `require_encryption` changes are
    /// recorded with who (the key prefix, the token subject, the CLI login), what and when; a
    /// change of nothing records nothing; secrets never reach the log; another account sees none.
    func testChangesAreAuditedWithWhoWhatAndWhen() throws {
        let accounts = AccountStore(connection: conn)
        let made = try accounts.issueKey(accountID: account.id, mode: .live, permissions: try APIPermissions(parsing: "push:r"),
                                         actor: "cli:tester")
        XCTAssertNotNil(try accounts.revokeKey(id: made.record.id, actor: "cli:tester"))
        XCTAssertNotNil(try accounts.revokeKey(id: made.record.id, actor: "cli:tester"), "a second revocation is no event")
        // require_encryption through the API: a live key, then a live token; the same value again is no change.
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: liveKey, json: #"{"require_encryption":true}"#).status, 200)
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: liveKey, json: #"{"require_encryption":true}"#).status, 200)
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: liveKey, json: #"{"name":"renamed"}"#).status, 200)
        let liveToken = try token(scope: "push:apps", ["pushfleet_mode": "live"])
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: liveToken, json: #"{"require_encryption":false}"#).status, 200)
        // Credentials: stored and removed through the store the CLI and the worker use.
        let p8 = try FakeMaterial.text("apns_key.p8")
        let creds = CredentialStore(connection: conn, keys: webhookKeys)
        try creds.set(appID: app, kind: .apns, config: ["team_id": "TEAM123456", "key_id": "KEY1234567", "topic": "com.example.app"],
                      secret: Array(p8.utf8), actor: "cli:tester")
        XCTAssertTrue(try creds.remove(appID: app, kind: .apns, actor: "cli:tester"))

        let list = try events(testKey)
        let summary = list.map { "\($0["action"] as? String ?? "?") by \($0["actor"] as? String ?? "?")" }
        XCTAssertEqual(Array(summary.prefix(6)), [
            "credentials.removed by cli:tester", "credentials.set by cli:tester",
            "app.require_encryption_changed by oauth:service-backend",
            "app.require_encryption_changed by \(APIKeyFormat.displayPrefix(liveKey))",
            "api_key.revoked by cli:tester", "api_key.created by cli:tester",
        ])
        let change = list[3]
        XCTAssertEqual(change["details"] as? [String: Bool], ["from": false, "to": true])
        XCTAssertEqual(change["app_id"] as? String, appID)
        XCTAssertEqual(list[5]["target"] as? String, PrefixedID.format(.apiKey, made.record.id))
        XCTAssertNotNil(list[0]["created_at"] as? String)
        let stored = try conn.exec("SELECT string_agg(x::text, ',') FROM push_audit_events x").string(0, 0)
        XCTAssertFalse(stored.contains("PRIVATE KEY") || stored.contains(made.key), "no secret in the audit log")
        // Filtered by app; pages; push_apps r needed; another account sees nothing of it.
        XCTAssertEqual(try events(testKey, "?app_id=\(appID)").count, 4)
        let page = try call("GET", "/v1/push/audit?limit=2", key: testKey)
        XCTAssertEqual(page.json["has_more"] as? Bool, true)
        let last = try XCTUnwrap((page.json["data"] as? [[String: Any]])?.last?["id"] as? String)
        XCTAssertEqual(try events(testKey, "?starting_after=\(last)").first?["action"] as? String, "app.require_encryption_changed")
        XCTAssertEqual(try call("GET", "/v1/push/audit", key: try issue(.test, permissions: "push:rw")).status, 403)
        // The other account's list holds only its own key's creation (its setUp), none of ours.
        let theirs = try events(otherTestKey)
        XCTAssertEqual(theirs.map { $0["action"] as? String }, ["api_key.created"])
        XCTAssertFalse(theirs.contains { ($0["app_id"] as? String) == appID || ($0["target"] as? String) == PrefixedID.format(.apiKey, made.record.id) })
        XCTAssertEqual(try call("GET", "/v1/push/audit?app_id=\(appID)", key: otherTestKey).status, 404)
    }

    /// A credential sees its own mode's usage only (acceptance charges of a test and a live send).
    func testUsageShowsTheCredentialsModeOnly() throws {
        try register(token: "usage_test")
        XCTAssertEqual(try call("PUT", "/v1/push/devices", key: liveKey, json: deviceJSON(token: "usage_live")).status, 200)
        for key in [testKey, liveKey, testKey] {
            let r = try call("POST", "/v1/push/notifications", key: key, json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"u"}"#)
            XCTAssertEqual(r.status, 201, r.text)
        }
        func rows(_ key: String) throws -> [[String: Any]] {
            let r = try call("GET", "/v1/push/usage?app_id=\(appID)", key: key)
            XCTAssertEqual(r.status, 200, r.text)
            return r.json["data"] as? [[String: Any]] ?? []
        }
        let test = try rows(testKey), live = try rows(liveKey)
        XCTAssertEqual(test.map { $0["mode"] as? String }, ["test"])
        XCTAssertEqual(test.first?["net"] as? Int, 2)
        XCTAssertEqual(live.map { $0["mode"] as? String }, ["live"])
        XCTAssertEqual(live.first?["charged"] as? Int, 1)
        XCTAssertEqual(try rows(try token(scope: "push:apps")).first?["net"] as? Int, 2, "a test token sees test usage")
        XCTAssertEqual(try call("GET", "/v1/push/usage?from=2026-13-01", key: testKey).errorField, "from")
        XCTAssertEqual(try call("GET", "/v1/push/usage?app_id=\(otherAppID)", key: testKey).status, 404)
        // The cursor (UsageStore pages; the walk over several pages is UsageAndErasureTests'):
        // after the only row nothing is left; a cursor that is not one, or of the other mode, is 404.
        let whole = try call("GET", "/v1/push/usage?app_id=\(appID)", key: testKey)
        XCTAssertTrue(whole.json["next_starting_after"] is NSNull, whole.text)
        let day = try XCTUnwrap(test.first?["day"] as? String)
        let after = try call("GET", "/v1/push/usage?app_id=\(appID)&starting_after=\(day).\(appID).test", key: testKey)
        XCTAssertEqual(after.status, 200, after.text)
        XCTAssertEqual((after.json["data"] as? [Any])?.count, 0, after.text)
        let before = try call("GET", "/v1/push/usage?app_id=\(appID)&starting_after=2000-01-01.\(appID).test", key: testKey)
        XCTAssertEqual((before.json["data"] as? [[String: Any]])?.count, 1, before.text)
        for bad in ["\(day).\(appID).live", "nonsense", "\(day).\(appID)"] {
            let r = try call("GET", "/v1/push/usage?starting_after=\(bad)", key: testKey)
            XCTAssertEqual(r.status, 404, bad)
            XCTAssertEqual(r.errorField, "starting_after", bad)
        }
    }

    /// DELETE /v1/push/users/{id}: push_devices d and push w; idempotent; the user's devices end inactive.
    func testErasingAUserThroughTheAPI() throws {
        try register(token: "erase_a", user: "user one")
        try register(token: "erase_b", user: "user one")
        let path = "/v1/push/users/user%20one?app_id=\(appID)"
        XCTAssertEqual(try call("DELETE", path, key: try issue(.test, permissions: "push_devices:wd")).status, 403)
        XCTAssertEqual(try call("DELETE", path, key: try issue(.test, permissions: "push:rw")).status, 403)
        // A body is refused (400), not ignored: nothing is erased; so on every route that reads none.
        let bodied = try call("DELETE", path, key: testKey, json: #"{"app_id":"\#(appID)"}"#)
        XCTAssertEqual(bodied.status, 400, bodied.text)
        XCTAssertEqual(bodied.errorCode, "INVALID_REQUEST")
        XCTAssertEqual(try count("push_devices", "user_id = 'user one' AND active"), 2, "a refused erasure erased")
        XCTAssertEqual(try call("GET", "/v1/push/usage", key: testKey, json: "{}").status, 400)
        let first = try call("DELETE", path, key: testKey)
        XCTAssertEqual(first.status, 200, first.text)
        XCTAssertEqual(first.json["devices_deactivated"] as? Int, 2)
        XCTAssertEqual(first.json["user_id"] as? String, "user one")
        let again = try call("DELETE", path, key: testKey)
        XCTAssertEqual(again.json["devices_deactivated"] as? Int, 0, again.text)
        XCTAssertEqual(try count("push_devices", "user_id = 'user one' AND active"), 0)
        XCTAssertEqual(try call("DELETE", "/v1/push/users/x?app_id=\(otherAppID)", key: testKey).status, 404)
        XCTAssertEqual(try call("DELETE", "/v1/push/users/x", key: testKey).errorField, "app_id")
        XCTAssertEqual(try call("DELETE", path, key: try token(scope: "push:devices push:send")).status, 200)
    }
}
