import Foundation
import XCTest
import PushAPI
import PushCore
import PushStore

/// The credential routes of issue 20 under the access rules of issue 15: a key or token limited
/// to some apps gets the unknown app's 404 on another app's sets (R-API-1), with nothing stored or
/// removed; a set stored or removed through the API is audited with the request's actor (the key's
/// display prefix, `oauth:` and the token's subject), in the change's transaction.
final class AppScopedCredentialRoutesTests: AccessTokenTestCase {
    var sibling: UUID!
    var siblingID: String { PrefixedID.format(.app, sibling) }

    static let twilio = #"{"account_sid":"AC\#(String(repeating: "0f", count: 16))","auth_token":"0123456789abcdef0123456789abcdef","from":"+15005550006"}"#

    override func setUpWithError() throws {
        try super.setUpWithError()
        sibling = try AppStore(connection: conn).appCreate(name: "sibling app", accountID: account.id).id
    }

    func path(_ app: String, _ kind: String? = nil) -> String {
        "/v1/push/apps/\(app)/credentials" + (kind.map { "/\($0)" } ?? "")
    }

    /// A live key and a live token, both limited to the test's app, on the sibling app's sets:
    /// list, store (each kind's body) and remove answer exactly what an unknown app answers, and
    /// nothing changes; the account-wide live key sees the sibling's set; within its app the
    /// scoped key stores a set.
    func testAScopedKeyOrTokenGetsTheUnknownAppsAnswerOnAnotherAppsCredentials() throws {
        XCTAssertEqual(try call("PUT", path(siblingID, "twilio"), key: liveKey, json: Self.twilio).status, 200)
        let scopedKey = try AccountStore(connection: conn).issueKey(
            accountID: account.id, mode: .live, permissions: try APIPermissions(parsing: APITestCase.allPermissions),
            rateLimitPerSecond: 100_000, appIDs: [app]).key
        let scopedToken = try token(scope: "push:apps", ["pushfleet_mode": "live", "pushfleet_apps": [appID]])
        let unknownApp = PrefixedID.format(.app, UUID())
        let requests: [(String, String?, String?)] = [
            ("GET", nil, nil), ("PUT", "twilio", Self.twilio), ("PUT", "webpush", #"{"subject":"mailto:ops@example.com"}"#),
            ("PUT", "apns", #"{"team_id":"TEAM123456"}"#), ("DELETE", "twilio", nil),
        ]
        let before = try fingerprint()
        for credential in [scopedKey, scopedToken] {
            for (method, kind, body) in requests {
                let real = try call(method, path(siblingID, kind), key: credential, json: body)
                let unknown = try call(method, path(unknownApp, kind), key: credential, json: body)
                XCTAssertEqual(real.status, 404, "\(method) \(path(siblingID, kind)): \(real.text)")
                XCTAssertEqual(real.text, unknown.text, "\(method) \(kind ?? "list") differs from an unknown app's answer")
            }
        }
        XCTAssertEqual(try fingerprint(), before, "a scoped credential changed another app's sets")
        let listed = try call("GET", path(siblingID), key: liveKey)
        XCTAssertEqual((listed.json["data"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }, ["twilio"],
                       "the 404 is the scope's: the account's live key sees the sibling's set")
        let mine = try call("PUT", path(appID, "webpush"), key: scopedKey, json: #"{"subject":"mailto:ops@example.com"}"#)
        XCTAssertEqual(mine.status, 200, mine.text)
        XCTAssertEqual(try call("GET", path(appID), key: scopedToken).status, 200)
    }

    /// `credentials.set` and `credentials.removed` through the API name the request's actor and
    /// the kind (never a secret); a removal that finds no set records nothing.
    func testCredentialChangesThroughTheAPIAreAuditedWithTheirActor() throws {
        let liveToken = try token(scope: "push:apps", ["pushfleet_mode": "live"])
        XCTAssertEqual(try call("PUT", path(appID, "twilio"), key: liveKey, json: Self.twilio).status, 200)
        XCTAssertEqual(try call("PUT", path(appID, "webpush"), key: liveToken, json: #"{"subject":"mailto:ops@example.com"}"#).status, 200)
        XCTAssertEqual(try call("DELETE", path(appID, "twilio"), key: liveToken).status, 200)
        XCTAssertEqual(try call("DELETE", path(appID, "twilio"), key: liveKey).status, 404, "no set left: no event")
        let r = try call("GET", "/v1/push/audit?app_id=\(appID)", key: liveKey)
        XCTAssertEqual(r.status, 200, r.text)
        let events = (r.json["data"] as? [[String: Any]] ?? []).filter { ($0["action"] as? String)?.hasPrefix("credentials.") == true }
        XCTAssertEqual(events.map { "\($0["action"] as? String ?? "?") \(($0["details"] as? [String: String])?["kind"] ?? "?") by \($0["actor"] as? String ?? "?")" }, [
            "credentials.removed twilio by oauth:service-backend",
            "credentials.set webpush by oauth:service-backend",
            "credentials.set twilio by \(APIKeyFormat.displayPrefix(liveKey))",
        ])
        XCTAssertEqual(Set(events.compactMap { $0["target"] as? String }), [appID])
        let stored = try conn.exec("SELECT string_agg(x::text, ',') FROM push_audit_events x").string(0, 0)
        XCTAssertFalse(stored.contains("0123456789abcdef0123456789abcdef") || stored.contains("PRIVATE KEY"), "no secret in the audit log")
    }
}
