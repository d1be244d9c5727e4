import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushStore
import PushTestSupport
@testable import PushWorker

/// Issue 19 end to end: events made by the product's own paths, dispatched over HTTP to a receiver
/// that verifies with the `standardwebhooks` package (R-HOOK-1), retried on schedule, 410
/// (R-HOOK-2), and the send-time address guard (R-HOOK-3).
final class WebhookDeliveryTests: WebhookDispatchTestCase {
    /// Runs a worker (test-mode simulator) until no job is left.
    private func drainJobs() throws {
        let config = WorkerConfig(owner: "jobs", claimLimit: 8, batchSize: 500, leaseSeconds: 30, pollInterval: 0.05,
                                  rescueInterval: 0.1, statsInterval: 3600, retryPolicy: WorkerTestCase.fastRetry)
        let worker = try Worker(config: config, databaseURL: database.conninfo, router: RecordingRouter(), log: Self.quietLog)
        worker.maintainer = nil
        let c = try database.connect()
        let end = Date().addingTimeInterval(30)
        while Date() < end {
            if try worker.runOnce(connection: c) > 0 { continue }
            if try c.exec("SELECT count(*)::int FROM push_jobs WHERE state IN ('available', 'running')").int(0, 0) == 0 { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTFail("jobs not drained")
    }

    private func register(_ app: UUID, user: String, token: String) throws {
        _ = try DeviceRegistry(connection: conn).register(appID: app, try DeviceRegistration.validate(
            mode: "test", platform: "android", token: token, userID: user, apnsEnvironment: nil, encryptionPublicKey: .none,
            platforms: ProviderTable.standard.addressing))
    }

    /// Every delivered event verifies with `standardwebhooks`, a changed body or timestamp does not,
    /// the webhook-id is the event's for that endpoint, and no token or content travels. After a
    /// rotation both secrets verify during the overlap.
    func testEveryDeliveredSignatureVerifiesWithStandardWebhooksAndTamperingIsRefused() throws {
        try startReceiver()
        let tls = try startReceiver(tls: true)
        let app = try createApp()
        let test = try endpoints.create(appID: app, mode: .test, url: try hookURL("test"), eventTypes: nil)
        let live = try endpoints.create(appID: app, mode: .live, url: try hookURL("live", on: tls), eventTypes: nil)
        try setSecrets("test", [test.secret])
        try setSecrets("live", [live.secret])
        // R-PRV-1/2 through the simulator, R-DEV-5 through registration, R-APP-1 through the app store.
        for token in ["test_unregistered", "test_invalid_token", "test_app_mismatch"] { try register(app, user: "bob", token: token) }
        for i in 0...20 { try register(app, user: "carol", token: "carol-\(i)") }
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: ["bob"])
        q.title = "Your code is 123456"
        _ = try NotificationStore(connection: conn).enqueue(q)
        try drainJobs()
        _ = try AppStore(connection: conn).appUpdate(id: app, requireEncryption: true)
        _ = try AppStore(connection: conn).appUpdate(id: app, requireEncryption: false)
        try conn.exec("""
            INSERT INTO push_events (app_id, type, payload)
            VALUES ($1, 'push_app.credentials_invalid', jsonb_build_object('kind', 'apns', 'reason', 'InvalidProviderToken'))
            """, [.uuid(app)])

        try startDispatcher()
        XCTAssertTrue(try waitUntil(30) { try received().count >= 6 }, "6 events: \(diagnosis())")
        let all = try received()
        XCTAssertEqual(all.count, 6)
        for r in all {
            XCTAssertEqual(r.verified, [true], "standardwebhooks accepts the signature of \(r.type ?? "?")")
            XCTAssertEqual(r.tamperedBodyRefused, true, "an altered body is refused")
            XCTAssertEqual(r.tamperedTimestampRefused, true, "an altered timestamp is refused")
            XCTAssertEqual(Double(r.timestamp), r.receivedAt, accuracy: 5, "webhook-timestamp is the attempt's time")
            let event = try XCTUnwrap(r.eventID.flatMap { PrefixedID.parse($0, as: .event) })
            let endpoint = r.name == "test" ? test.endpoint.id : live.endpoint.id
            XCTAssertEqual(r.webhookID, try WebhookSignature.messageID(eventID: event, endpointID: endpoint))
            XCTAssertEqual(r.data["app_id"] as? String, PrefixedID.format(.app, app))
            XCTAssertNil(r.data["token"])
        }
        let log = try receivers.map { try String(contentsOfFile: $0.logPath, encoding: .utf8) }.joined()
        for secret in ["test_unregistered", "test_invalid_token", "carol-0", "123456"] {
            XCTAssertFalse(log.contains(secret), "\(secret) left the service")
        }
        XCTAssertEqual(Set(try received("test").compactMap { $0.data["reason"] as? String }),
                       ["UNREGISTERED", "INVALID_TOKEN", "APP_MISMATCH", "DEVICE_LIMIT"])
        XCTAssertEqual(Set(try received("live").compactMap(\.type)), ["push_app.encryption_disabled", "push_app.credentials_invalid"],
                       "R-MODE-1: live events to the live endpoint only")

        // Rotation: the new secret and the previous one both sign for 24 h.
        let rotated = try XCTUnwrap(try endpoints.rotateSecret(id: test.endpoint.id))
        try setSecrets("test", [rotated.secret, test.secret])
        try insertEvents(2, app: app)
        XCTAssertTrue(try waitUntil(30) { try received("test").count >= 6 }, "2 more after the rotation: \(diagnosis())")
        for r in try received("test").suffix(2) {
            XCTAssertEqual(r.verified, [true, true], "a receiver holding either secret accepts it")
            XCTAssertEqual(r.tamperedBodyRefused, true)
        }
    }

    /// 500 three times then 200: delivered on the fourth attempt, the same webhook-id every time,
    /// attempts spaced per the schedule (compressed: 0.3, 0.6, 1.2 s with the jitter at its top).
    func testThreeFailuresThenDeliveredOnTheFourthAttemptWithTheSameIDOnSchedule() throws {
        try startReceiver()
        let app = try createApp()
        let e = try endpoints.create(appID: app, mode: .test, url: try hookURL("flaky"), eventTypes: nil)
        try setSecrets("flaky", [e.secret])
        try setPlan("flaky", "500,500,500,200")
        try insertEvents(1, app: app)
        try startDispatcher(retry: Self.fastRetry(base: 0.3), jitter: { 0.999_999 })
        XCTAssertTrue(try waitUntil(30) { try int("SELECT count(*)::int FROM push_outbox WHERE state = 'done'") == 1 }, diagnosis())
        let got = try received("flaky")
        XCTAssertEqual(got.count, 4)
        XCTAssertEqual(Set(got.map(\.webhookID)).count, 1, "one webhook-id across retries")
        XCTAssertTrue(got.allSatisfy { $0.verified == [true] })
        let gaps = zip(got.dropFirst(), got).map { $0.receivedAt - $1.receivedAt }
        for (gap, nominal) in zip(gaps, [0.3, 0.6, 1.2]) {
            XCTAssertGreaterThanOrEqual(gap, nominal - 0.02, "not before the schedule")
            XCTAssertLessThan(gap, nominal + 0.35, "nor much after it (poll 50 ms)")
        }
        let attempts = try endpoints.attempts(endpointID: e.endpoint.id)
        XCTAssertEqual(attempts.map(\.statusCode), [200, 500, 500, 500], "newest first")
        XCTAssertEqual(attempts.map(\.result), ["delivered", "retry", "retry", "retry"])
        XCTAssertEqual(attempts.map(\.attempt), [4, 3, 2, 1])
        XCTAssertEqual(Set(attempts.map(\.webhookID)), [got[0].webhookID])
        XCTAssertNil(try endpoints.get(id: e.endpoint.id)?.failingSince, "the success cleared the failing clock")
    }

    /// 410 disables the endpoint at once; its other deliveries fail without a request.
    func testGoneDisablesTheEndpointAndNoMoreAttemptsAreMade() throws {
        try startReceiver()
        let app = try createApp()
        let e = try endpoints.create(appID: app, mode: .test, url: try hookURL("gone"), eventTypes: nil)
        try setSecrets("gone", [e.secret])
        try setPlan("gone", "410")
        try insertEvents(5, app: app)
        let metrics = WebhookMetrics()
        try startDispatcher(perEndpoint: 1, metrics: metrics)
        XCTAssertTrue(try waitUntil(30) { try endpoints.get(id: e.endpoint.id)?.enabled == false }, diagnosis())
        XCTAssertTrue(try waitUntil(5) { try int("SELECT count(*)::int FROM push_outbox WHERE state = 'failed'") == 5 })
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try received("gone").count, 1, "one request, then nothing")
        let after = try XCTUnwrap(try endpoints.get(id: e.endpoint.id))
        XCTAssertEqual(after.disabledReason, "ENDPOINT_GONE")
        XCTAssertEqual(after.pending, 0)
        XCTAssertEqual(metrics.disabledTotal.value(["ENDPOINT_GONE"]), 1)
        XCTAssertTrue(metrics.render().contains("pushfleet_webhook_endpoints_disabled_total{reason=\"ENDPOINT_GONE\"} 1"))
        XCTAssertTrue(waitUntil(3) { metrics.render().contains("pushfleet_webhook_endpoints_disabled{reason=\"ENDPOINT_GONE\"} 1") },
                      "the database gauge shows it")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_events WHERE delivered_at IS NULL"), 0, "events finished")
    }

    /// R-HOOK-3 at send time: a name that resolves to loopback or a private address is refused
    /// before any connection (no request reaches the receiver), and so is a loopback URL stored
    /// while loopback was allowed, once the worker does not allow it.
    func testLoopbackAndPrivateAddressesAreRefusedAtSendTime() throws {
        try startReceiver()
        let port = receiver!.port
        let app = try createApp()
        let strict = WebhookEndpointStore(connection: conn, keys: keys, allowLoopback: false)
        let sneaky = try strict.create(appID: app, mode: .test, url: "https://hooks.example.com:\(port)/hooks/sneaky", eventTypes: nil)
        let inside = try strict.create(appID: app, mode: .test, url: "https://intranet.example.com:\(port)/hooks/inside", eventTypes: nil)
        let literal = try endpoints.create(appID: app, mode: .test, url: try hookURL("literal"), eventTypes: nil)
        for (name, e) in [("sneaky", sneaky), ("inside", inside), ("literal", literal)] { try setSecrets(name, [e.secret]) }
        try insertEvents(1, app: app)
        let resolver = StubWebPushResolver(["hooks.example.com": ["127.0.0.1"], "intranet.example.com": ["10.0.0.5"]])
        try startDispatcher(allowLoopback: false, resolver: resolver)
        XCTAssertTrue(try waitUntil(30) { try int("SELECT count(*)::int FROM push_webhook_attempts") >= 3 }, diagnosis())
        XCTAssertEqual(try received().count, 0, "no connection was made")
        for e in [sneaky, inside, literal] {
            let a = try XCTUnwrap(try endpoints.attempts(endpointID: e.endpoint.id).first)
            XCTAssertEqual(a.error, "ENDPOINT_FORBIDDEN")
            XCTAssertEqual(a.result, "retry", "retried later: DNS may change")
            XCTAssertNil(a.statusCode)
        }
        XCTAssertTrue(try endpoints.attempts(endpointID: sneaky.endpoint.id)[0].response?.contains("127.0.0.1") ?? false)
        XCTAssertTrue(try endpoints.attempts(endpointID: inside.endpoint.id)[0].response?.contains("10.0.0.5") ?? false)
        XCTAssertEqual(Set(resolver.lookups), ["hooks.example.com", "intranet.example.com"], "names are resolved at send time")
    }
}
