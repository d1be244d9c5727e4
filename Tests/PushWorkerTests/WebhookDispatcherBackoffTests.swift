import Foundation
import XCTest
import PushCrypto
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// The webhook dispatcher on a database `pushfleet migrate` has not run on (fresh-user trial): the
/// session connects but every claim fails (`push_webhook_claim` does not exist). It backs off as
/// after a failed connect, 0.2 s doubling to 5 s (the SMS dispatcher's pace), instead of logging
/// `webhook.db_error` every round.
final class WebhookDispatcherBackoffTests: XCTestCase {
    func testFailingStatementsOnAnUnmigratedDatabaseBackOff() throws {
        let database = try PGTestDatabase.create()
        defer { try? database.drop() }
        let captured = CapturedLog()
        var c = WebhookDispatcherConfig(owner: "backoff")
        c.pollInterval = 0.05
        let keys = try CredentialKeys(current: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let d = try WebhookDispatcher(config: c, databaseURL: database.conninfo, keys: keys, metrics: WebhookMetrics(),
                                      log: captured.log(.warn))
        d.start()
        Thread.sleep(forTimeInterval: 3.2)
        d.stop(timeout: 5)
        let errors = captured.events("webhook.db_error")
        XCTAssertGreaterThanOrEqual(errors.count, 2, "the unmigrated database's failures are logged")
        // 0.2 + 0.4 + 0.8 + 1.6 s of pauses fit in 3.2 s: five lines at most (every 0.2 s: 16).
        XCTAssertLessThanOrEqual(errors.count, 5, "\(errors.count) lines in 3.2 s")
        let waits = errors.compactMap { $0["retry_in_s"] as? Double }
        XCTAssertEqual(waits.count, errors.count)
        XCTAssertEqual(waits, Array([0.2, 0.4, 0.8, 1.6, 3.2, 5].prefix(waits.count)), "each failure doubles the pause")
    }
}
