import Foundation
import PushTestSupport
import PushCore
import XCTest

/// Bad command-line input gets a clear error with its stable code before any database is touched:
/// `pushfleet worker` refuses a bad setting (USAGE, exit 64) instead of ignoring it or quietly
/// changing it (issue 4, operators); `jobs list`, `devices register` and `send` refuse
/// contradictory or out-of-range input.
final class CLIInputTests: XCTestCase {
    private static let nowhere = ["DATABASE_URL": "postgresql:///nowhere?host=/nonexistent"]

    private func run(_ arguments: [String], env: [String: String] = [:]) throws -> (status: Int32, output: String) {
        try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["worker"] + arguments,
                               environment: env.merging(["DATABASE_URL": "postgresql:///nowhere?host=/nonexistent"]) { a, _ in a })
    }

    func testBadTimingAndSizeOptionsAreRefusedWithUsage() throws {
        let cases: [([String], [String: String], String)] = [
            (["--lease-seconds", "abc"], [:], "--lease-seconds must be a number of seconds"),
            (["--lease-seconds", "-1"], [:], "--lease-seconds must be a number of seconds"),
            (["--poll-interval", "xyz"], [:], "--poll-interval must be a number of seconds"),
            (["--poll-interval", "nan"], [:], "--poll-interval must be a number of seconds"),
            (["--claim-limit", "0"], [:], "--claim-limit must be from 1"),
            (["--batch-size", "-5"], [:], "--batch-size must be from 1"),
            ([], ["PUSHFLEET_CONCURRENCY": "lots"], "PUSHFLEET_CONCURRENCY must be a whole number"),
            ([], ["PUSHFLEET_DRAIN_SECONDS": "-3"], "PUSHFLEET_DRAIN_SECONDS must be a number of seconds"),
            ([], ["PUSHFLEET_RETENTION_DELIVERIES": "30d"], "PUSHFLEET_RETENTION_DELIVERIES must be a number of seconds"),
            ([], ["PUSHFLEET_RETENTION_CONTENT": "forever"], "PUSHFLEET_RETENTION_CONTENT must be a number of seconds (0 or more) or keep"),
        ]
        for (arguments, env, message) in cases {
            let r = try run(arguments, env: env)
            XCTAssertEqual(r.status, 64, "\(arguments) \(env): \(r.output)")
            XCTAssertTrue(r.output.contains("USAGE") && r.output.contains(message), "\(arguments) \(env): \(r.output)")
        }
    }

    func testJobsListRefusesAnUnknownStateOrLimit() throws {
        for arguments in [["--state", "bogus"], ["--state", "discarded", "--limit", "0"]] {
            let r = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["jobs", "list"] + arguments,
                                           environment: ["DATABASE_URL": "postgresql:///nowhere?host=/nonexistent"])
            XCTAssertEqual(r.status, 64, r.output)
            XCTAssertTrue(r.output.contains("USAGE"), r.output)
        }
    }

    func testContradictoryKeyOptionsAndAnEmptyUserAreRefused() throws {
        let app = "00000000-0000-4000-8000-000000000001"
        let register = try LiveWebPushCLI.run(LiveWebPushCLI.executable,
            ["devices", "register", "--app", app, "--mode", "test", "--platform", "ios", "--token", "tok", "--user", "u",
             "--remove-key", "--encryption-public-key", "AAAA"], environment: Self.nowhere)
        XCTAssertEqual(register.status, 64, register.output)
        XCTAssertTrue(register.output.contains("contradict"), register.output)
        let send = try LiveWebPushCLI.run(LiveWebPushCLI.executable,
            ["send", "--app", app, "--mode", "test", "--user", "", "--title", "t"], environment: Self.nowhere)
        XCTAssertEqual(send.status, 1, send.output)
        XCTAssertTrue(send.output.contains("VALIDATION_ERROR: user_ids: element 1 of 1 is not a user id of 1 to 255 characters"),
                      send.output)
        // --device only narrows --user (R-SEND-1): without one, the refusal says so.
        let device = try LiveWebPushCLI.run(LiveWebPushCLI.executable,
            ["send", "--app", app, "--mode", "test", "--device", "pdev_00000000000040008000000000000002", "--title", "t"], environment: Self.nowhere)
        XCTAssertEqual(device.status, 64, device.output)
        XCTAssertTrue(device.output.contains("--user is required with --device, which narrows the users to some of their devices"), device.output)
    }

    func testErrorsAreOneJSONObjectUnderJSONAndVersionAnswers() throws {
        let r = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["jobs", "list", "--state", "bogus", "--json"],
                                       environment: Self.nowhere)
        XCTAssertEqual(r.status, 64)
        let object = try JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: [String: Any]]
        XCTAssertEqual(object?["error"]?["code"] as? String, "USAGE", r.output)
        XCTAssertTrue((object?["error"]?["message"] as? String)?.contains("--state must be one of") == true, r.output)
        XCTAssertTrue(object?["error"]?["field"] is NSNull, "the API's error object: field null, not absent: \(r.output)")
        let version = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["--version"], environment: Self.nowhere)
        XCTAssertEqual(version.status, 0, version.output)
        XCTAssertTrue(version.output.contains("schema version"), version.output)
    }
}
