import Foundation
import XCTest

/// Issue 4 (operators): `pushfleet worker` refuses a bad setting with a USAGE error (exit 64)
/// instead of ignoring it or quietly changing it; no database is touched before the check.
final class WorkerOptionsCLITests: XCTestCase {
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
}
