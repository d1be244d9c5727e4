import Foundation
import PushTestSupport
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// One run of the built CLI, with its arguments as raw bytes when needed (through `/bin/sh`,
/// since a Swift `String` cannot hold invalid UTF-8), its exit and whether it crashed.
enum CLIRun {
    struct Result {
        var status: Int32
        var crashed: Bool
        var output: String
        /// The `{"error": {...}}` object of a `--json` refusal.
        var error: [String: Any]? {
            for line in output.split(separator: "\n") {
                if let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                   let e = o["error"] as? [String: Any] { return e }
            }
            return nil
        }
        /// The JSON answer on success.
        var answer: [String: Any]? {
            output.split(separator: "\n").lazy.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["error"] == nil }
        }
    }

    static func run(_ arguments: [String], database: String = "postgresql:///nowhere?host=/nonexistent",
                    shellWords: String = "") throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        // "$@" keeps each argument whole; `shellWords` is appended raw (printf escapes for bytes).
        p.arguments = ["-c", "exec \"$0\" \"$@\" \(shellWords)", LiveWebPushCLI.executable] + arguments
        p.environment = ["DATABASE_URL": database, "PATH": "/usr/bin:/bin"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, crashed: p.terminationReason == .uncaughtSignal,
                      output: String(decoding: data, as: UTF8.self))
    }
}

/// Issue 13 through the command line: no input crashes a command, every bad field is
/// VALIDATION_ERROR naming it (before any database is reached), the size rule's boundary holds
/// for every payload kind through the CLI and through `push_enqueue`, replays and reused keys,
/// and JSON types and ids.
final class CLIAcceptanceTests: PGWorkerTestCase {
    private let app = "00000000-0000-4000-8000-000000000001"

    private func send(_ extra: [String], database: String? = nil, shellWords: String = "") throws -> CLIRun.Result {
        try CLIRun.run(["send", "--app", app, "--mode", "test", "--user", "u", "--json"] + extra,
                       database: database ?? "postgresql:///nowhere?host=/nonexistent", shellWords: shellWords)
    }

    func testFarAndNonFiniteSendTimesNeverCrash() throws {
        for (value, code) in [("+1e300s", "VALIDATION_ERROR"), ("+1e12h", "VALIDATION_ERROR"), ("+infs", "USAGE"),
                              ("+nanm", "USAGE"), ("+1e400s", "USAGE"), ("+1e306h", "USAGE"), ("9999-12-31T23:59:59Z", "VALIDATION_ERROR"),
                              ("99999-01-01T00:00:00Z", "USAGE")] {   // RFC 3339's year has four digits
            let r = try send(["--title", "t", "--send-at", value])
            XCTAssertFalse(r.crashed, "\(value) crashed: \(r.output)")
            XCTAssertEqual(r.error?["code"] as? String, code, "\(value): \(r.output)")
            if code == "VALIDATION_ERROR" { XCTAssertEqual(r.error?["field"] as? String, "send_at") }
        }
    }

    func testOutOfRangeNumbersAndTextsAreValidationErrorsNamingTheField() throws {
        let cases: [([String], String)] = [
            (["--title", "t", "--badge", "2147483648"], "badge"),
            (["--title", "t", "--badge", "-1"], "badge"),
            (["--title", "t", "--ttl", "2147483648"], "ttl"),
            (["--title", "t", "--idempotency-key", String(repeating: "k", count: 256)], "idempotency_key"),
            (["--title", "t", "--sound", String(repeating: "s", count: 65)], "sound"),
            (["--title", "t", "--collapse-key", "a\nb"], "collapse_key"),
            (["--title", "t", "--data", #"{"a":"SECRET"#], "data"),
            (["--title", "t", "--data", #"["SECRET"]"#], "data"),
            (["--title", "t", "--priority", "urgent"], "priority"),
        ]
        for (extra, field) in cases {
            let r = try send(extra)
            XCTAssertFalse(r.crashed)
            XCTAssertEqual(r.status, 1, r.output)
            XCTAssertEqual(r.error?["code"] as? String, "VALIDATION_ERROR", "\(extra): \(r.output)")
            XCTAssertEqual(r.error?["field"] as? String, field, r.output)
            XCTAssertFalse(r.output.contains("SECRET"), "content quoted: \(r.output)")
        }
        let name = try CLIRun.run(["apps", "create", "--name", String(repeating: "n", count: 201), "--json"])
        XCTAssertEqual(name.error?["field"] as? String, "name", name.output)
    }

    /// `--json` errors are the API's error object (`APIError.body`): `field` is always there (null
    /// when no field is at fault), `bytes_to_cut` where the size rule refused (held by the size test).
    func testJSONErrorsAreTheAPIsErrorObject() throws {
        let usage = try send(["--title", "t", "--send-at", "+infs"])
        XCTAssertEqual(usage.error?["code"] as? String, "USAGE", usage.output)
        let noSuchDay = try send(["--title", "t", "--send-at", "2027-02-30T00:00:00Z"])   // RFC3339.parse: not March 2
        XCTAssertEqual(noSuchDay.error?["code"] as? String, "USAGE", noSuchDay.output)
        XCTAssertTrue(usage.error?["field"] is NSNull, "field is null, not absent: \(usage.output)")
        XCTAssertTrue(usage.output.hasPrefix(#"{"error":{"code":"USAGE","message":""#), usage.output)
        XCTAssertTrue(usage.output.contains(#","field":null}}"#), usage.output)
        let field = try send(["--title", "t", "--badge", "-1"])
        XCTAssertEqual(field.error?["field"] as? String, "badge", field.output)
        XCTAssertNil(field.error?["bytes_to_cut"], field.output)
    }

    /// A user id that is not valid UTF-8 is refused, not turned into U+FFFD (where `a\xff` and
    /// `a\xfe` would become the same user).
    func testAnArgumentThatIsNotUTF8IsRefused() throws {
        let r = try CLIRun.run(["send", "--app", app, "--mode", "test", "--title", "t", "--json", "--user"],
                               shellWords: "\"$(printf 'a\\377')\"")
        XCTAssertFalse(r.crashed)
        XCTAssertEqual(r.status, 1, r.output)
        XCTAssertEqual(r.error?["code"] as? String, "VALIDATION_ERROR", r.output)
        XCTAssertTrue((r.error?["message"] as? String)?.contains("--user: not valid UTF-8") == true, r.output)
    }

    /// R-SEND-7 at the boundary of every payload kind, through the CLI (the acceptance service)
    /// and through `push_enqueue` directly: the largest content that fits is accepted by both; one
    /// byte more is refused by the CLI with 1 byte to cut, and by the SQL function only for the
    /// kind whose measure is the smallest (FCM plaintext: no other kind can carry it).
    func testTheSizeBoundaryOfEveryPayloadKindThroughTheCLIAndTheSQLFunction() throws {
        let app = try createApp()
        let store = NotificationStore(connection: conn)
        let kinds: [(user: String, platform: String, key: P256PrivateKey?, sqlRefusesOneMore: Bool)] = [
            ("plain-ios", "ios", nil, false), ("plain-android", "android", nil, true),
            ("enc-ios", "ios", try P256PrivateKey.generate(), false), ("enc-android", "android", try P256PrivateKey.generate(), false),
            ("web", "web", nil, false),
        ]
        for k in kinds {
            _ = k.platform == "web" ? try registerWeb(app, user: k.user) : try register(app, user: k.user, platform: k.platform, key: k.key)
            let device = DeviceSnapshot(platform: Platform(rawValue: k.platform), token: "t", apnsEnvironment: k.platform == "ios" ? .sandbox : nil,
                                        publicKey: k.key?.publicKey.raw, kid: k.key?.publicKey.kid)
            let planner = DeliveryPlanner(content: NotificationContent(title: "x"), placeholders: AppPlaceholders(),
                                          requireEncryption: false, mode: .test)
            let check = try XCTUnwrap(planner.sizeCheck(for: device))
            let n = 1 + check.maxContentLength - check.contentLength
            let cli = { (length: Int) in
                try CLIRun.run(["send", "--app", app.uuidString, "--mode", "test", "--user", k.user, "--json",
                                "--title", String(repeating: "x", count: length)], database: self.database.conninfo)
            }
            let fits = try cli(n)
            XCTAssertEqual(fits.status, 0, "\(k.user) at \(n): \(fits.output)")
            XCTAssertEqual(fits.answer?["created"] as? Bool, true)
            let over = try cli(n + 1)
            XCTAssertEqual(over.error?["code"] as? String, "PUSH_PAYLOAD_TOO_LARGE", "\(k.user): \(over.output)")
            XCTAssertEqual(over.error?["bytes_to_cut"] as? Int, 1, over.output)

            for (length, refused) in [(n, false), (n + 1, k.sqlRefusesOneMore)] {
                var q = EnqueueRequest(appID: app, mode: "test", userIDs: [k.user])
                q.title = String(repeating: "x", count: length)
                do {
                    _ = try store.enqueue(q)
                    XCTAssertFalse(refused, "\(k.user): push_enqueue accepted \(length) bytes no kind can carry")
                } catch let e as PGError {
                    XCTAssertTrue(refused, "\(k.user): push_enqueue refused \(length) bytes that fit: \(e)")
                    XCTAssertEqual(StoreErrors.domainError(e)?.code, .pushPayloadTooLarge)
                    XCTAssertTrue(e.message.contains("cut at least 1 bytes"), e.message)
                }
            }
        }
        // The issue's numbers: title "Your code", data {"order":"42"}, a 4,080-byte body make
        // exactly 4,096 bytes of FCM plaintext.
        let base = ["send", "--app", app.uuidString, "--mode", "test", "--user", "plain-android", "--json",
                    "--title", "Your code", "--data", #"{"order":"42"}"#, "--body"]
        XCTAssertEqual(try CLIRun.run(base + [String(repeating: "b", count: 4080)], database: database.conninfo).status, 0)
        let over = try CLIRun.run(base + [String(repeating: "b", count: 4081)], database: database.conninfo)
        XCTAssertEqual(over.error?["bytes_to_cut"] as? Int, 1, over.output)
    }

    /// `send --json` answers `created` as a boolean; the same request again is a replay
    /// (`created` false, the first id); the key with other content is IDEMPOTENCY_KEY_REUSED.
    func testReplaysAndReusedKeysThroughTheCLI() throws {
        let app = try createApp()
        try register(app, user: "u")
        let args = ["send", "--app", app.uuidString, "--mode", "test", "--user", "u", "--title", "t", "--json",
                    "--idempotency-key", "k1"]
        let first = try CLIRun.run(args + ["--send-at", "+60s"], database: database.conninfo)
        XCTAssertEqual(first.answer?["created"] as? Bool, true, first.output)
        XCTAssertEqual(first.answer?["replayed"] as? Bool, false)
        let again = try CLIRun.run(args + ["--send-at", "+61s"], database: database.conninfo)
        XCTAssertEqual(again.answer?["created"] as? Bool, false, again.output)
        XCTAssertEqual(again.answer?["notification_id"] as? String, first.answer?["notification_id"] as? String)
        let other = try CLIRun.run(args + ["--body", "b"], database: database.conninfo)
        XCTAssertEqual(other.status, 1)
        XCTAssertEqual(other.error?["code"] as? String, "IDEMPOTENCY_KEY_REUSED", other.output)
        XCTAssertEqual(other.error?["field"] as? String, "idempotency_key")
    }

    /// `send --audience users` (the word `notifications show` uses for a user list) is the user list,
    /// the same as leaving it out: sent, and replayed by the same command without it; without
    /// `--user` it is the usage refusal a send without users gets; `--platform` without `--audience
    /// all` is refused naming `platforms`, saying it narrows only that audience.
    func testSendAudienceUsersIsTheUserList() throws {
        let app = try createApp()
        try register(app, user: "u")
        let base = ["send", "--app", app.uuidString, "--mode", "test", "--title", "t", "--json"]
        let args = base + ["--user", "u", "--idempotency-key", "k-users"]
        let first = try CLIRun.run(args + ["--audience", "users"], database: database.conninfo)
        XCTAssertEqual(first.answer?["created"] as? Bool, true, first.output)
        let again = try CLIRun.run(args, database: database.conninfo)
        XCTAssertEqual(again.answer?["created"] as? Bool, false, again.output)
        XCTAssertEqual(again.answer?["notification_id"] as? String, first.answer?["notification_id"] as? String)
        let noUsers = try CLIRun.run(base + ["--audience", "users"], database: database.conninfo)
        XCTAssertEqual(noUsers.status, 64, noUsers.output)
        XCTAssertTrue(noUsers.output.contains("--user is required"), noUsers.output)
        for extra in [["--platform", "ios"], ["--user", "u", "--platform", "ios"]] {
            let narrowed = try CLIRun.run(base + extra, database: database.conninfo)
            XCTAssertEqual(narrowed.error?["field"] as? String, "platforms", narrowed.output)
            XCTAssertTrue((narrowed.error?["message"] as? String)?.contains("narrows only a whole-app audience") == true,
                          narrowed.output)
        }
    }

    /// `notifications show --json` names the notification, its app and its devices by prefixed id
    /// (R-API-4: the CLI's output uses them, as the API does) and rewrites nothing else: an
    /// upper-case UUID-shaped title stays as sent in the stored payload bytes it shows.
    func testNotificationsShowNormalisesIdsOnly() throws {
        let app = try createApp()
        let device = try register(app, user: "u", platform: "ios")
        let shaped = "ABCDEF01-2345-4789-ABCD-EF0123456789"
        let sent = try CLIRun.run(["send", "--app", app.uuidString.uppercased(), "--mode", "test", "--user", "u",
                                   "--title", shaped, "--json"], database: database.conninfo)
        let id = try XCTUnwrap(sent.answer?["notification_id"] as? String, sent.output)
        XCTAssertEqual(PrefixedID.parse(id, as: .notification).map { PrefixedID.format(.notification, $0) }, id, sent.output)
        try drain(try makeWorker())
        let shown = try CLIRun.run(["notifications", "show", id, "--json"], database: database.conninfo)
        let report = try XCTUnwrap(shown.answer, shown.output)
        XCTAssertEqual(report["id"] as? String, id)
        XCTAssertEqual(report["app_id"] as? String, PrefixedID.format(.app, app))
        let delivery = try XCTUnwrap((report["deliveries"] as? [[String: Any]])?.first)
        XCTAssertEqual(delivery["device_id"] as? String, PrefixedID.format(.device, device))
        // The dashed form the CLI also accepts names the same notification.
        let dashed = try CLIRun.run(["notifications", "show", try XCTUnwrap(PrefixedID.parse(id, as: .notification)).uuidString,
                                     "--json"], database: database.conninfo)
        XCTAssertEqual(dashed.answer?["id"] as? String, id, dashed.output)
        XCTAssertTrue((delivery["payload"] as? String)?.contains(shaped) == true, "the payload is shown as stored: \(shown.output)")
    }

    /// `notifications revoke ID --user U` revokes for that user only (the fresh-user trial of issue
    /// 24 found the option refused as unknown, leaving only the revocation for every device).
    func testNotificationsRevokeForOneUserThroughTheCLI() throws {
        let app = try createApp()
        _ = try register(app, user: "u1", platform: "ios")
        _ = try register(app, user: "u2", platform: "ios")
        let sent = try CLIRun.run(["send", "--app", app.uuidString, "--mode", "test", "--user", "u1", "--user", "u2",
                                   "--title", "t", "--json"], database: database.conninfo)
        let id = try XCTUnwrap(sent.answer?["notification_id"] as? String, sent.output)
        try drain(try makeWorker())
        let revoked = try CLIRun.run(["notifications", "revoke", id, "--user", "u1"], database: database.conninfo)
        XCTAssertEqual(revoked.status, 0, revoked.output)
        XCTAssertTrue(revoked.output.contains("the devices of 1 user(s)"), revoked.output)
        let shown = try CLIRun.run(["notifications", "show", id], database: database.conninfo)
        XCTAssertTrue(shown.output.contains("revoked for 1 user(s)"), shown.output)
        // --json spells the audience as the API does (a snake-case strategy made `user_i_ds`).
        let json = try CLIRun.run(["notifications", "show", id, "--json"], database: database.conninfo)
        let report = try XCTUnwrap(json.answer, json.output)
        XCTAssertEqual(report["user_ids"] as? [String], ["u1", "u2"], json.output)
        XCTAssertEqual(report["revoked_user_ids"] as? [String], ["u1"], json.output)
        XCTAssertFalse(json.output.contains("i_ds"), json.output)
    }

    /// An unknown notification is NOT_FOUND (not a validation error), named by its prefixed id (R-API-4).
    func testCancellingAnUnknownNotificationIsNotFound() throws {
        let id = UUID()
        let r = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["notifications", "cancel", id.uuidString.lowercased()],
                                       environment: ["DATABASE_URL": database.conninfo])
        XCTAssertEqual(r.status, 1, r.output)
        XCTAssertTrue(r.output.contains("NOT_FOUND: no notification \(PrefixedID.format(.notification, id))"), r.output)
    }
}
