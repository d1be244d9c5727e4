import Foundation
import XCTest
import PushCore
import PushStore
import PushTestSupport
@testable import PushWorker

/// R-HOOK-2 "one endpoint's failures never delay another's", and issue 19 part 6 (bounded storage)
/// under a steady stream.
final class WebhookFairnessTests: WebhookDispatchTestCase {
    /// An endpoint that never answers, holding 10,000 due events, beside a healthy one: the healthy
    /// one's events arrive within seconds, and the hanging one never has more than its bound in flight.
    func testAHangingEndpointWithTenThousandDueEventsDoesNotDelayAHealthyOne() throws {
        try startReceiver()
        let slowApp = try createApp("slow"), fastApp = try createApp("fast")
        let hanging = try endpoints.create(appID: slowApp, mode: .test, url: try hookURL("hang"), eventTypes: nil)
        let healthy = try endpoints.create(appID: fastApp, mode: .test, url: try hookURL("ok"), eventTypes: nil)
        try setSecrets("hang", [hanging.secret])
        try setSecrets("ok", [healthy.secret])
        try setPlan("hang", "hang")
        try insertEvents(10_000, app: slowApp)
        try startDispatcher(perEndpoint: 4)
        XCTAssertTrue(try waitUntil(10) { try received("hang").count >= 4 }, "the hanging endpoint holds its 4 slots")
        let sent = Date()
        try insertEvents(50, app: fastApp)
        XCTAssertTrue(try waitUntil(5) { try received("ok").count >= 50 }, "the healthy endpoint's events arrive")
        let last = try XCTUnwrap(try received("ok").map(\.receivedAt).max())
        let seconds = last - sent.timeIntervalSince1970
        XCTAssertLessThan(seconds, 3, "all 50 within seconds (took \(seconds) s)")
        XCTAssertTrue(try received("ok").allSatisfy { $0.verified == [true] })
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_outbox WHERE state = 'running' AND fair_key = $1",
                               [.uuid(hanging.endpoint.id)]), 4, "never more than its bound")
        XCTAssertEqual(try received("hang").count, 4, "and no more requests to it meanwhile")
        XCTAssertGreaterThan(try int("SELECT count(*)::int FROM push_outbox WHERE state = 'available' AND fair_key = $1",
                                     [.uuid(hanging.endpoint.id)]), 9_900)
    }

    /// 100,000 events streamed as fast as the dispatcher delivers them (a chunk of 2,000 whenever
    /// fewer than 6,000 are undelivered), with retention deleting every finished event at once:
    /// `push_events`, `push_outbox` and the attempt log stay near what is in flight (without the
    /// deletions they would reach 100,000 rows), and end empty.
    func testAHundredThousandEventsWithRetentionLeaveTheTablesBounded() throws {
        let counting = try CountingHTTPReceiver()
        defer { counting.stop() }
        let app = try createApp()
        _ = try endpoints.create(appID: app, mode: .test, url: "http://127.0.0.1:\(counting.port)/hooks/bulk", eventTypes: nil)
        try startDispatcher(perEndpoint: 64)
        var retention = Maintainer.Config()
        retention.eventRetention = 0
        retention.batchLimit = 5_000
        let maintainer = Maintainer(config: retention)
        let maintenance = try database.connect()
        let total = 100_000, chunk = 2_000
        var inserted = 0, maxEvents = 0, maxRows = 0, maxAttempts = 0
        let started = Date()
        while inserted < total {
            _ = try maintainer.runOnce(connection: maintenance)
            maxEvents = max(maxEvents, try int("SELECT count(*)::int FROM push_events"))
            maxRows = max(maxRows, try int("SELECT count(*)::int FROM push_outbox"))
            maxAttempts = max(maxAttempts, try int("SELECT count(*)::int FROM push_webhook_attempts"))
            if try int("SELECT count(*)::int FROM push_events WHERE delivered_at IS NULL") < 6_000 {
                try insertEvents(chunk, app: app)
                inserted += chunk
            } else {
                Thread.sleep(forTimeInterval: 0.05)
            }
            XCTAssertLessThan(Date().timeIntervalSince(started), 300, "the stream stalled")
            if Date().timeIntervalSince(started) > 300 { return }
        }
        XCTAssertTrue(try waitUntil(60) {
            _ = try maintainer.runOnce(connection: maintenance)
            return try int("SELECT count(*)::int FROM push_events") == 0
        }, "drained and deleted")
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(counting.distinctWebhookIDs, total, "every event delivered")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_outbox"), 0)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_webhook_attempts"), 0)
        // Finished rows never pile up: in flight (< 6,000 + a chunk) plus what one maintenance pass lags.
        for (table, peak) in [("push_events", maxEvents), ("push_outbox", maxRows), ("push_webhook_attempts", maxAttempts)] {
            XCTAssertLessThanOrEqual(peak, 15_000, "\(table) peaked at \(peak) rows")
        }
        print("webhook-bulk: \(total) events delivered in \(String(format: "%.1f", seconds)) s; peak rows: events \(maxEvents), outbox \(maxRows), attempts \(maxAttempts); requests \(counting.requestCount)")
    }
}
