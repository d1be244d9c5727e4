import Foundation
import XCTest
import PushTestSupport
import PushCore
@testable import PushStore

/// `pushfleet audit`, `usage` and `users erase` under `--json` print the API's objects (issue 15
/// parts 4 to 6: a script reads one shape from the CLI and from the API): counts as numbers, the
/// audit `details` as an object, times RFC 3339 with milliseconds; and the CLI's audit actor names
/// the operator even where `USER` and `LOGNAME` are unset (a container, a Kubernetes Job).
final class AccessCLIJSONTests: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!
    var appID: UUID!
    var account: UUID!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        appID = try AppStore(connection: conn).appCreate(name: "cli-json").id
        account = try conn.exec("SELECT account_id FROM push_apps WHERE id = $1", [.uuid(appID)]).uuid(0, "account_id")
    }

    override func tearDownWithError() throws {
        conn = nil
        try database?.drop()
        try super.tearDownWithError()
    }

    /// Runs the CLI with exactly `env` (plus PATH) and the database.
    private func cli(_ arguments: [String], env: [String: String] = ["USER": "tester"]) throws -> (status: Int32, output: String) {
        try LiveWebPushCLI.run(LiveWebPushCLI.executable, arguments, environment: env.merging(["DATABASE_URL": database.conninfo]) { a, _ in a })
    }

    private func json(_ output: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(output.utf8), options: [.fragmentsAllowed])
    }

    /// Without USER and LOGNAME the actor is the uid's passwd name (it was `cli:unknown`).
    func testTheCLIActorIsTheUidsNameWithoutUSERorLOGNAME() throws {
        let made = try cli(["api-keys", "create", "--account", account.uuidString, "--mode", "test", "--permissions", "push:r", "--json"], env: [:])
        XCTAssertEqual(made.status, 0, made.output)
        let actor = try conn.exec("SELECT actor FROM push_audit_events WHERE action = 'api_key.created'").string(0, "actor")
        let name = try XCTUnwrap(AuditStore.effectiveUserName(), "the test runs as a user with a passwd entry")
        XCTAssertEqual(actor, "cli:" + name)
        XCTAssertEqual(AuditStore.cliActor([:], passwdName: { "deploy" }), "cli:deploy")
        XCTAssertEqual(AuditStore.cliActor(["USER": "", "LOGNAME": "ops"], passwdName: { "deploy" }), "cli:ops")
        XCTAssertEqual(AuditStore.cliActor([:], passwdName: { nil }), "cli:uid:\(geteuid())")
    }

    func testAuditUsageAndErasureJSONAreTheAPIsObjects() throws {
        let made = try cli(["api-keys", "create", "--account", account.uuidString, "--mode", "live", "--permissions", "push:r", "--json"])
        XCTAssertEqual(made.status, 0, made.output)
        let audit = try cli(["audit", "--account", account.uuidString, "--json"])
        XCTAssertEqual(audit.status, 0, audit.output)
        let event = try XCTUnwrap((try json(audit.output) as? [[String: Any]])?.first, audit.output)
        XCTAssertEqual(event["object"] as? String, "audit_event")
        XCTAssertEqual(event["actor"] as? String, "cli:tester")
        let details = try XCTUnwrap(event["details"] as? [String: Any], "details is an object, as the API answers: \(audit.output)")
        XCTAssertEqual(details["mode"] as? String, "live")
        let stored = try conn.exec("SELECT created_at FROM push_audit_events").date(0, "created_at")
        XCTAssertEqual(event["created_at"] as? String, RFC3339.utcMilliseconds(stored), "milliseconds, as the API's")
        XCTAssertNotNil((event["created_at"] as? String)?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression))

        let app = PrefixedID.format(.app, appID)
        let device = try cli(["devices", "register", "--app", app, "--mode", "test", "--platform", "android", "--token", "test_cli_json",
                              "--user", "user_é", "--json"])
        XCTAssertEqual(device.status, 0, device.output)
        let sent = try cli(["send", "--app", app, "--mode", "test", "--user", "someone_else", "--title", "t", "--json"])
        XCTAssertEqual(sent.status, 0, sent.output)
        let notification = try XCTUnwrap((try json(sent.output) as? [String: Any])?["notification_id"] as? String, sent.output)
        let shown = try cli(["notifications", "show", notification, "--json"])
        XCTAssertEqual(shown.status, 0, shown.output)
        let report = try XCTUnwrap(try json(shown.output) as? [String: Any], shown.output)
        for member in ["sms", "send_at", "finished_at", "started_at", "error_code"] {
            XCTAssertTrue(report[member] is NSNull, "\(member) is null, as the API writes it: \(shown.output)")
        }
        XCTAssertNotNil((report["accepted_at"] as? String)?.range(of: #"\.\d{3}Z$"#, options: .regularExpression), shown.output)
        let erased = try cli(["users", "erase", "--app", app, "--mode", "test", "user_é", "--json"])
        XCTAssertEqual(erased.status, 0, erased.output)
        let body = try XCTUnwrap(try json(erased.output) as? [String: Any], erased.output)
        XCTAssertEqual(body["object"] as? String, "push_user_erasure")
        XCTAssertEqual(body["user_id"] as? String, "user_é")
        XCTAssertEqual(body["mode"] as? String, "test")
        XCTAssertEqual(body["app_id"] as? String, PrefixedID.format(.app, appID))
        XCTAssertEqual(body["devices_deactivated"] as? Int, 1, "a number, not \"1\": \(erased.output)")
        XCTAssertEqual(body["notifications_erased"] as? Int, 0, erased.output)

        _ = try conn.exec("""
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT id, '00000000-0000-0000-0000-000000000000', 'sms', app_id, mode, 'queued' FROM push_notifications
            """)
        let usage = try cli(["usage", "--account", account.uuidString, "--json"])
        XCTAssertEqual(usage.status, 0, usage.output)
        let row = try XCTUnwrap((try json(usage.output) as? [[String: Any]])?.first, usage.output)
        XCTAssertEqual(row["object"] as? String, "usage")
        XCTAssertEqual(row["charged"] as? Int, 0, usage.output)
        XCTAssertEqual(row["sms"] as? Int, 1, "the SMS taken is in the report: \(usage.output)")
    }

    /// `usage --app` and `audit --app` for another account's app say NOT_FOUND, as the API's 404
    /// (R-API-1): the check is the stores' (`AccountStore.requireOwnedApp`), not a client's; they
    /// answered an empty report before.
    func testUsageAndAuditOfAnotherAccountsAppAreNotFoundLikeTheAPI() throws {
        let other = try AccountStore(connection: conn).createAccount(name: "other")
        let theirs = PrefixedID.format(.app, try AppStore(connection: conn).appCreate(name: "theirs", accountID: other.id).id)
        for command in ["usage", "audit"] {
            let r = try cli([command, "--account", account.uuidString, "--app", theirs, "--json"])
            XCTAssertEqual(r.status, 1, "\(command): \(r.output)")
            XCTAssertTrue(r.output.contains(#""code":"NOT_FOUND""#) && r.output.contains(#""field":"app_id""#), "\(command): \(r.output)")
            let mine = try cli([command, "--account", account.uuidString, "--app", PrefixedID.format(.app, appID), "--json"])
            XCTAssertEqual(mine.status, 0, "\(command) of the account's own app: \(mine.output)")
        }
    }

    /// `notifications show --json`'s `sms` has every member of the API's, absent ones null.
    func testTheSMSReportWritesEveryMemberWithItsNulls() throws {
        let sms = SMSReport(status: "pending", provider: nil, providerMessageID: nil, errorCode: nil, providerErrorCode: nil,
                            errorDetail: nil, attempts: 0, segments: nil, encoding: nil, request: nil,
                            queuedAt: Date(timeIntervalSince1970: 0), sentAt: nil, finishedAt: nil, erased: false)
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: try encoder.encode(sms)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["status", "provider", "provider_message_id", "error_code", "provider_error_code", "error_detail",
                                          "attempts", "segments", "encoding", "request", "queued_at", "sent_at", "finished_at", "erased"])
        XCTAssertTrue(object["provider_error_code"] is NSNull)
    }
}
