import Foundation
import XCTest
import PushCore
import PushCrypto
import PushStore
import PushTestSupport
@testable import PushWorker

/// Issue 19 part 4 at the wire and over days: the 10 s deadline, redirects never followed, at most
/// a few KiB of an answer read (R-HOOK-2), and the 5-day rule that disables an endpoint failing
/// every attempt, shown in `webhooks list`, in the metrics, and undone by `enable` + `resend`.
final class WebhookEndpointHealthTests: WebhookDispatchTestCase {
    /// One retry an hour: each endpoint gets exactly one attempt during the test.
    private static let hourly = WebhookRetryPolicy(baseDelay: 3600, maxDelay: 3600, window: 3 * 86_400)

    private func cli(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["webhooks"] + arguments,
                               environment: ["DATABASE_URL": database.conninfo])
    }

    /// A hanging endpoint times out at 10 s (TIMEOUT, retried); a 307 is an answer, not followed
    /// (its target never sees a request); an endless 200 answer is cut after 4 KiB: delivered in
    /// well under the deadline, its connection closed by the dispatcher (reading on and dropping
    /// would hold the slot until the 10 s deadline and end as TIMEOUT).
    func testTimeoutRedirectAndEndlessAnswerAreBounded() throws {
        try startReceiver()
        let app = try createApp()
        for name in ["slow", "moved", "endless"] {
            let e = try endpoints.create(appID: app, mode: .test, url: try hookURL(name), eventTypes: nil)
            try setSecrets(name, [e.secret])
        }
        try setPlan("slow", "hang")
        try setPlan("moved", "redirect")
        try setPlan("endless", "endless")
        // R-HOOK-3: live mode is https only, loopback allowed or not; a stored http URL (made before
        // a policy change) is refused at send time.
        let plain = try endpoints.create(appID: app, mode: .test, url: try hookURL("plainlive"), eventTypes: nil)
        try setSecrets("plainlive", [plain.secret])
        try conn.exec("UPDATE push_webhook_endpoints SET mode = 'live' WHERE id = $1", [.uuid(plain.endpoint.id)])
        try insertEvents(1, app: app)
        try insertEvents(1, app: app, mode: .live)
        let started = Date()
        try startDispatcher(retry: Self.hourly)
        XCTAssertTrue(try waitUntil(5) { try received("endless#stream").count == 1 },
                      "the dispatcher closed the endless answer's connection early: \(diagnosis())")
        XCTAssertTrue(try waitUntil(20) { try int("SELECT count(*)::int FROM push_webhook_attempts") == 4 }, diagnosis())
        func attempt(_ name: String) throws -> WebhookAttemptInfo {
            let e = try XCTUnwrap(try endpoints.list(appID: app).first { $0.url.hasSuffix("/\(name)") })
            return try XCTUnwrap(try endpoints.attempts(endpointID: e.id).first)
        }

        let endless = try attempt("endless")
        XCTAssertEqual(endless.result, "delivered", "a 2xx counts even when the answer is cut")
        XCTAssertEqual(endless.statusCode, 200)
        XCTAssertLessThan(try XCTUnwrap(endless.durationMillis), 5_000, "cut after 4 KiB, not read until the deadline")
        let excerpt = try XCTUnwrap(endless.response)
        XCTAssertEqual(excerpt, String(repeating: "x", count: 256), "the attempt log keeps the first 256 characters")

        let moved = try attempt("moved")
        XCTAssertEqual(moved.statusCode, 307)
        XCTAssertEqual(moved.result, "retry", "a redirect is a failed attempt")
        XCTAssertEqual(try received("moved-redirected").count, 0, "the redirect was not followed")
        XCTAssertEqual(try received("moved").count, 1)

        let live = try attempt("plainlive")
        XCTAssertEqual(live.error, WebhookFailure.endpointForbidden)
        XCTAssertTrue(live.response?.contains("https") ?? false, live.response ?? "-")
        XCTAssertEqual(try received("plainlive").count, 0, "no connection was made")

        let slow = try attempt("slow")
        XCTAssertEqual(slow.error, WebhookFailure.timeout)
        XCTAssertEqual(slow.result, "retry")
        XCTAssertNil(slow.statusCode)
        let ms = try XCTUnwrap(slow.durationMillis)
        XCTAssertGreaterThanOrEqual(ms, 9_900, "the deadline is 10 s")
        XCTAssertLessThan(ms, 12_000, "and not much more")
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
    }

    /// An endpoint whose failures started more than 5 days ago is disabled (FAILING) by its next
    /// failed attempt, its other deliveries fail, and it shows in `webhooks list` and in the
    /// metrics; one failing for 4 days stays enabled and its oldest pending event's age is a
    /// gauge. `enable` starts the 5-day clock again, and `resend` delivers with the same webhook-id.
    func testAnEndpointFailingForFiveDaysIsDisabledShownAndCanBeEnabledAndResent() throws {
        try startReceiver()
        let app = try createApp()
        let dying = try endpoints.create(appID: app, mode: .test, url: try hookURL("dying"), eventTypes: nil)
        let young = try endpoints.create(appID: app, mode: .test, url: try hookURL("young"), eventTypes: nil)
        try setSecrets("dying", [dying.secret])
        try setSecrets("young", [young.secret])
        try setPlan("dying", "500,500,200")
        try setPlan("young", "503")
        try conn.exec("UPDATE push_webhook_endpoints SET failing_since = now() - $2::float8 * interval '1 second' WHERE id = $1",
                      [.uuid(dying.endpoint.id), .double(5 * 86_400 + 3600)])
        try conn.exec("UPDATE push_webhook_endpoints SET failing_since = now() - $2::float8 * interval '1 second' WHERE id = $1",
                      [.uuid(young.endpoint.id), .double(4 * 86_400)])
        try insertEvents(3, app: app)
        try conn.exec("UPDATE push_outbox SET created_at = now() - interval '1 hour'")
        let metrics = WebhookMetrics()
        try startDispatcher(perEndpoint: 1, retry: Self.hourly, metrics: metrics)

        XCTAssertTrue(try waitUntil(20) { try endpoints.get(id: dying.endpoint.id)?.enabled == false }, diagnosis())
        XCTAssertTrue(try waitUntil(5) {
            try int("SELECT count(*)::int FROM push_outbox WHERE state = 'failed' AND fair_key = $1", [.uuid(dying.endpoint.id)]) == 3
        }, "its pending deliveries fail with it: \(diagnosis())")
        XCTAssertEqual(try endpoints.get(id: dying.endpoint.id)?.disabledReason, "FAILING")
        XCTAssertEqual(try received("dying").count, 1, "one more failed attempt, then none")
        let last = try XCTUnwrap(try endpoints.attempts(endpointID: dying.endpoint.id).first)
        XCTAssertEqual(last.statusCode, 500)
        XCTAssertEqual(last.result, "failed")
        XCTAssertTrue(last.error?.contains("ENDPOINT_FAILING") ?? false, last.error ?? "-")

        XCTAssertTrue(try waitUntil(10) { try endpoints.attempts(endpointID: young.endpoint.id).count == 3 }, diagnosis())
        let youngNow = try XCTUnwrap(try endpoints.get(id: young.endpoint.id))
        XCTAssertTrue(youngNow.enabled, "4 days of failures: still enabled")
        XCTAssertEqual(youngNow.pending, 3, "its events wait for their retry in an hour")
        XCTAssertEqual(try received("young").count, 3)

        let list = try cli(["list", "--app", app.uuidString])
        XCTAssertEqual(list.status, 0, list.output)
        let lines = list.output.split(separator: "\n")
        XCTAssertTrue(lines.contains { $0.hasPrefix(PrefixedID.format(.webhookEndpoint, dying.endpoint.id)) && $0.contains("DISABLED(FAILING") },
                      list.output)
        XCTAssertTrue(lines.contains { $0.hasPrefix(PrefixedID.format(.webhookEndpoint, young.endpoint.id)) && $0.contains("enabled")
                          && $0.contains("failing_since=") }, list.output)
        let attempts = try cli(["attempts", "--endpoint", dying.endpoint.id.uuidString])
        XCTAssertTrue(attempts.output.contains("failed  500  ENDPOINT_FAILING"), attempts.output)
        XCTAssertTrue(attempts.output.contains("webhook-id=\(last.webhookID)"), attempts.output)
        XCTAssertTrue(attempts.output.contains("endpoint=\(PrefixedID.format(.webhookEndpoint, dying.endpoint.id))"), attempts.output)

        XCTAssertEqual(metrics.disabledTotal.value(["FAILING"]), 1)
        let youngAge = "pushfleet_webhook_oldest_pending_age_seconds{endpoint=\"\(young.endpoint.id.uuidString.lowercased())\"} "
        func age(_ text: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(youngAge) }.flatMap { Double($0.dropFirst(youngAge.count)) }
        }
        XCTAssertTrue(waitUntil(3) {
            metrics.render().contains("pushfleet_webhook_endpoints_disabled{reason=\"FAILING\"} 1") && age(metrics.render()) != nil
        }, metrics.render())
        let text = metrics.render()
        XCTAssertEqual(try XCTUnwrap(age(text)), 3600, accuracy: 60, "the oldest undelivered event is an hour old")
        XCTAssertFalse(text.contains("oldest_pending_age_seconds{endpoint=\"\(dying.endpoint.id.uuidString.lowercased())\""),
                       "nothing pending for the disabled one")
        XCTAssertTrue(text.contains("pushfleet_webhook_attempts_total{type=\"push_device.deactivated\",result=\"failed\"} 1"), text)
        XCTAssertTrue(text.contains("pushfleet_webhook_attempts_total{type=\"push_device.deactivated\",result=\"retry\"} 3"), text)
        XCTAssertTrue(text.contains("pushfleet_webhook_deliveries_total{type=\"push_device.deactivated\",result=\"failed\"} 1"), text)

        // enable clears the clock; resend queues the failed delivery again, with its webhook-id.
        XCTAssertEqual(try cli(["enable", dying.endpoint.id.uuidString]).status, 0)
        XCTAssertNil(try endpoints.get(id: dying.endpoint.id)?.failingSince)
        let event = try XCTUnwrap(try received("dying").first?.eventID)
        let resent = try cli(["resend", event, "--endpoint", PrefixedID.format(.webhookEndpoint, dying.endpoint.id)])
        XCTAssertEqual(resent.status, 0, resent.output)
        XCTAssertTrue(resent.output.contains("queued 1 delivery"), resent.output)
        XCTAssertTrue(try waitUntil(10) { try endpoints.attempts(endpointID: dying.endpoint.id).count == 2 }, diagnosis())
        XCTAssertEqual(try received("dying").count, 2)
        XCTAssertEqual(try endpoints.get(id: dying.endpoint.id)?.enabled, true, "a failure after enable is a fresh clock")
        try conn.exec("UPDATE push_outbox SET run_at = now() WHERE fair_key = $1 AND state = 'available'", [.uuid(dying.endpoint.id)])
        XCTAssertTrue(try waitUntil(10) { try received("dying").count >= 3 }, diagnosis())
        let got = try received("dying")
        XCTAssertEqual(Set(got.map(\.webhookID)).count, 1, "the same webhook-id before and after the resend")
        XCTAssertTrue(try waitUntil(5) { try endpoints.attempts(endpointID: dying.endpoint.id).first?.result == "delivered" })
    }
}
