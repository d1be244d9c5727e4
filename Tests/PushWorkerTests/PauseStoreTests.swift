import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// R-KIND-4's shared state in `push_provider_pauses` (sql/0014): the first insert of a scope wins,
/// every change is a compare-and-set on the version (a stale writer changes nothing), and
/// `pushfleet stats` lists the pauses with their cause.
final class PauseStoreTests: PGWorkerTestCase {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    private func store() -> PGPauseStore {
        let url = database.conninfo
        return PGPauseStore { try PGConnection.connect(url) }
    }

    func testFirstInsertWinsAndCompareAndSetRefusesAStaleVersionR_KIND_4() throws {
        let a = store(), b = store()
        let t = OutageThresholds.default
        let p = PauseRules.start(scope: "host https://api.push.apple.com", cause: .connectionFailures, detail: "not sent refused",
                                 retryAfter: nil, now: t0, thresholds: t)
        let first = try a.insert(p)
        XCTAssertTrue(first.inserted)
        XCTAssertEqual(first.pause, p)
        var other = p
        other.cause = .failureRatio
        let second = try b.insert(other)
        XCTAssertFalse(second.inserted)
        XCTAssertEqual(second.pause.cause, .connectionFailures, "the stored pause stands")

        let taken = PauseRules.takeProbe(p, owner: "w1", now: t0.addingTimeInterval(1), thresholds: t)
        XCTAssertEqual(try a.update(taken, expected: p.version), taken)
        // b still holds version 1: its probe is refused, and so is its delete.
        XCTAssertNil(try b.update(PauseRules.takeProbe(p, owner: "w2", now: t0.addingTimeInterval(1), thresholds: t),
                                  expected: p.version))
        XCTAssertFalse(try b.delete(scope: p.scope, expected: p.version))
        XCTAssertEqual(try b.pauses().first?.probeOwner, "w1")
        XCTAssertEqual(try b.pauses().first?.probeLeaseUntil, t0.addingTimeInterval(31))
        XCTAssertTrue(try a.delete(scope: p.scope, expected: taken.version))
        XCTAssertTrue(try b.pauses().isEmpty)
    }

    func testStatsListsPausedScopesWithTheirCauseR_KIND_4() throws {
        let s = store()
        let now = Date()
        _ = try s.insert(PauseRules.start(scope: "fcm-project acme", cause: .quotaExceeded, detail: "response 429 QUOTA_EXCEEDED",
                                          retryAfter: 30, now: now, thresholds: .default))
        _ = try s.insert(PauseRules.start(scope: "host https://api.push.apple.com", cause: .connectionFailures,
                                          detail: "not sent refused", retryAfter: nil, now: now, thresholds: .default))
        // One job whose time has not come (as a held one's has not): available, not due.
        let app = try createApp(name: "held")
        try register(app, user: "u")
        _ = try enqueue(app, users: ["u"]) { $0.sendAt = Date().addingTimeInterval(3_600) }
        let json = try CLIRun.run(["stats", "--json"], database: database.conninfo)
        XCTAssertEqual(json.status, 0, json.output)
        let answer = try XCTUnwrap(json.answer, json.output)
        XCTAssertNotNil(answer["available"], "the queue's fields stay where they were")
        let paused = try XCTUnwrap(answer["paused"] as? [[String: Any]])
        XCTAssertEqual(paused.map { $0["scope"] as? String }, ["fcm-project acme", "host https://api.push.apple.com"])
        XCTAssertEqual(paused.map { $0["cause"] as? String }, ["quota_exceeded", "connection_failures"])
        XCTAssertNotNil(paused[0]["resume_at"] as? String)
        XCTAssertNotNil(paused[1]["next_probe_at"] as? String)
        let text = try CLIRun.run(["stats"], database: database.conninfo)
        XCTAssertTrue(text.output.contains("paused host https://api.push.apple.com  cause connection_failures"), text.output)
        XCTAssertTrue(text.output.contains("paused fcm-project acme  cause quota_exceeded"), text.output)
        // Held jobs are not due: the line says where they are (it showed "due 0" and nothing else).
        XCTAssertTrue(text.output.contains("due 0  not_due 1  running"), text.output)
        XCTAssertTrue(text.output.contains("held: deliveries to the paused scopes wait among the 1 jobs not yet due"), text.output)
        XCTAssertEqual(answer["not_due"] as? Int, 1, json.output)
    }
}
