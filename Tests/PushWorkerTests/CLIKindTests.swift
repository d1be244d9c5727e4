import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// R-KIND-1..3 through the command line: `send`'s kind options reach the acceptance service (a
/// background push with a title is refused before any database is reached), and `apps update`'s
/// placeholder loc keys reach the payload an encrypted iPhone gets.
final class CLIKindTests: PGWorkerTestCase {
    private let anyApp = "00000000-0000-4000-8000-000000000001"

    func testKindOptionsAreJudgedByTheAcceptanceService() throws {
        let cases: [([String], String, String)] = [
            (["--push-type", "background", "--title", "t"], "VALIDATION_ERROR", "title"),
            (["--push-type", "background", "--data", "{}", "--channel-id", "c"], "VALIDATION_ERROR", "channel_id"),
            (["--push-type", "silent"], "VALIDATION_ERROR", "push_type"),
            (["--title", "t", "--relevance-score", "1.5"], "VALIDATION_ERROR", "relevance_score"),
            (["--title", "t", "--interruption-level", "critical"], "VALIDATION_ERROR", "interruption_level"),
            (["--title", "t", "--critical-volume", "0.5"], "VALIDATION_ERROR", "critical_sound.name"),
            (["--title", "t", "--title-loc-arg", "a"], "VALIDATION_ERROR", "title_loc_args"),
            (["--title", "t", "--relevance-score", "high"], "USAGE", ""),
        ]
        for (extra, code, field) in cases {
            let r = try CLIRun.run(["send", "--app", anyApp, "--mode", "test", "--user", "u", "--json"] + extra)
            XCTAssertFalse(r.crashed)
            XCTAssertEqual(r.error?["code"] as? String, code, "\(extra): \(r.output)")
            if !field.isEmpty { XCTAssertEqual(r.error?["field"] as? String, field, r.output) }
        }
    }

    func testLocKeyPlaceholderAndBackgroundPushThroughTheCLI() throws {
        let app = try createApp()
        let updated = try CLIRun.run(["apps", "update", app.uuidString, "--placeholder-title-loc-key", "PUSH_TITLE",
                                      "--placeholder-body-loc-key", "PUSH_BODY", "--json"], database: database.conninfo)
        XCTAssertEqual(updated.answer?["placeholder_title_loc_key"] as? String, "PUSH_TITLE", updated.output)
        let phone = try register(app, user: "u", platform: "ios", key: try P256PrivateKey.generate())
        func send(_ extra: [String]) throws -> String {
            let r = try CLIRun.run(["send", "--app", app.uuidString, "--mode", "test", "--user", "u", "--json"] + extra,
                                   database: database.conninfo)
            return try XCTUnwrap(r.answer?["notification_id"] as? String, r.output)
        }
        let alert = try send(["--title", "Secret", "--title-loc-key", "FROM", "--title-loc-arg", "Bob",
                              "--interruption-level", "passive", "--category", "MSG"])
        let silent = try send(["--push-type", "background", "--data", #"{"sync":"1"}"#])
        try drain(try makeWorker())
        let alertBody = try XCTUnwrap(try deliveries(try XCTUnwrap(PrefixedID.parseLenient(alert, as: .notification)))[phone]?.payload)
        XCTAssertTrue(String(decoding: alertBody, as: UTF8.self).hasPrefix(
            #"{"aps":{"alert":{"title-loc-key":"PUSH_TITLE","loc-key":"PUSH_BODY"},"mutable-content":1,"interruption-level":"passive","category":"MSG"},"hk":"#))
        let silentBody = try XCTUnwrap(try deliveries(try XCTUnwrap(PrefixedID.parseLenient(silent, as: .notification)))[phone]?.payload)
        XCTAssertTrue(String(decoding: silentBody, as: UTF8.self).hasPrefix(#"{"aps":{"content-available":1},"hk":"#))
        // '' removes a loc key: the literal placeholder is back.
        let cleared = try CLIRun.run(["apps", "update", app.uuidString, "--placeholder-title-loc-key", "", "--json"],
                                     database: database.conninfo)
        XCTAssertNil(cleared.answer?["placeholder_title_loc_key"] as? String, cleared.output)
        XCTAssertEqual(cleared.answer?["placeholder_body_loc_key"] as? String, "PUSH_BODY")
    }
}
