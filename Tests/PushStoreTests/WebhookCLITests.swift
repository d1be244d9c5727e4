import Foundation
import XCTest
import PushCore
import PushCrypto
import PushStore
import PushTestSupport

/// `pushfleet webhooks ...` (issue 19 part 1): the secret printed once as `secret`, never by reads;
/// bad input refused with its code before any database is reached; unknown ids NOT_FOUND.
final class WebhookCLITests: XCTestCase {
    private static let nowhere = ["DATABASE_URL": "postgresql:///nowhere?host=/nonexistent"]

    private func cli(_ arguments: [String], _ env: [String: String]) throws -> (status: Int32, output: String) {
        try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["webhooks"] + arguments, environment: env)
    }

    func testBadInputIsRefusedBeforeAnyDatabase() throws {
        let app = "00000000-0000-4000-8000-000000000001"
        let cases: [([String], Int32, String)] = [
            (["create", "--app", app, "--mode", "live", "--url", "http://hooks.example.com/x"], 1, "VALIDATION_ERROR: url: scheme must be https"),
            (["create", "--app", app, "--mode", "test", "--url", "https://10.0.0.1/x"], 1, "VALIDATION_ERROR: url: address is private"),
            (["create", "--app", app, "--mode", "test", "--url", "https://h.example.com/", "--events", "push_device.created"], 1,
             "VALIDATION_ERROR: events: unknown event type"),
            (["create", "--app", app, "--mode", "staging", "--url", "https://h.example.com/"], 1, "mode: must be test or live"),
            (["create", "--mode", "test", "--url", "https://h.example.com/"], 64, "--app is required"),
            (["show", "pwh_nothex"], 64, "give the endpoint id"),
            (["resend", "pevt_123"], 64, "give the event id"),
            (["attempts"], 64, "give --endpoint, --event or --app"),
            (["attempts", "--app", app, "--limit", "0"], 64, "--limit must be from 1"),
            (["update", "00000000-0000-4000-8000-000000000002"], 64, "give --url and/or --events"),
            (["frobnicate"], 64, "webhooks frobnicate: unknown"),
        ]
        for (arguments, status, message) in cases {
            let r = try cli(arguments, Self.nowhere)
            XCTAssertEqual(r.status, status, "\(arguments): \(r.output)")
            XCTAssertTrue(r.output.contains(message), "\(arguments): \(r.output)")
            XCTAssertFalse(r.output.contains("DB_CONNECTION"), "refused before connecting: \(r.output)")
        }
    }

    func testTheSecretIsPrintedOnceAtCreationAndRotation() throws {
        let fresh = try MigratedTestDatabase.create()
        defer { try? fresh.database.drop() }
        let app = try AppStore(connection: fresh.connection).appCreate(name: "cli").id
        let key = Base64URL.encode(try SecretBox.generateKey())
        let env = ["DATABASE_URL": fresh.database.conninfo, CredentialKeys.currentVariable: key]
        let created = try cli(["create", "--app", app.uuidString, "--mode", "test", "--url", "https://hooks.example.com/a",
                               "--events", "push_device.deactivated,push_notification.finished", "--json"], env)
        XCTAssertEqual(created.status, 0, created.output)
        let made = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(created.output.utf8)) as? [String: Any])
        let secret = try XCTUnwrap(made["secret"] as? String)
        XCTAssertNoThrow(try WebhookSecret(text: secret))
        XCTAssertEqual(made["event_types"] as? [String], ["push_device.deactivated", "push_notification.finished"])
        let id = try XCTUnwrap(made["id"] as? String)
        XCTAssertEqual(id, id.lowercased(), "ids are lower case")
        let uuid = try XCTUnwrap(PrefixedID.parse(id, as: .webhookEndpoint), "the endpoint is named by its API id, pwh_...: \(id)")
        XCTAssertEqual(made["app_id"] as? String, app.uuidString.lowercased())
        for read in [["list", "--app", app.uuidString, "--json"], ["show", id, "--json"], ["list", "--app", app.uuidString]] {
            let r = try cli(read, env)
            XCTAssertEqual(r.status, 0, r.output)
            XCTAssertFalse(r.output.contains("whsec_"), "\(read): a read never shows a secret")
            XCTAssertTrue(r.output.contains(id), r.output)
        }
        let noKey = try cli(["rotate-secret", id], ["DATABASE_URL": fresh.database.conninfo])
        XCTAssertEqual(noKey.status, 1, noKey.output)
        XCTAssertTrue(noKey.output.contains(CredentialKeys.currentVariable), noKey.output)
        // The bare UUID is still taken as input.
        let rotated = try cli(["rotate-secret", uuid.uuidString.lowercased()], env)
        XCTAssertEqual(rotated.status, 0, rotated.output)
        let newSecret = try XCTUnwrap(rotated.output.components(separatedBy: "secret (shown once): ").last?
            .trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertTrue(newSecret.hasPrefix("whsec_"))
        XCTAssertNotEqual(newSecret, secret)
        let missing = try cli(["resend", "pevt_0f8fad5bd9cb469fa16570867728950e"], env)
        XCTAssertEqual(missing.status, 1, missing.output)
        XCTAssertTrue(missing.output.contains("NOT_FOUND"), missing.output)
        let disabled = try cli(["disable", id], env)
        XCTAssertTrue(disabled.output.contains("DISABLED(MANUAL"), disabled.output)
        let gone = try cli(["delete", id], env)
        XCTAssertEqual(gone.status, 0, gone.output)
        XCTAssertEqual(try cli(["show", id], env).status, 1, "deleted")
    }
}
