import Foundation
import XCTest
@testable import PushStore
@testable import PushWorker

/// The operators' endpoint (docs/fleet.md): `/metrics`, `/healthz`, `/readyz` on libmicrohttpd,
/// scraped over real HTTP while a worker's loop (`run`) sends. `MetricsServerTests` runs on the
/// in-memory store; the scrape's scenario also runs on PostgreSQL (`PGQueueConformanceTests`), and
/// `/readyz` following a database's reachability and schema is in `ReadinessTests`.
extension WorkerTestCase {
    /// The series of deliveries the simulator sent.
    static var sentSeries: String { "pushfleet_deliveries_total{provider=\"simulator\",status=\"sent\",error_code=\"\"}" }

    /// Counters move by exactly what the run did: 3 notifications (one inline batch job each, as
    /// each audience fits one batch) of 6 devices: 3 claims, 18 sent deliveries (R-SEND-8).
    func conformScrapeShowsClaimsAndDeliveriesOfARun() throws {
        let metrics = WorkerMetrics()
        let server = try MetricsServer.start(address: MetricsAddress(loopbackOnly: true, port: 0), metrics: metrics)
        defer { server.stop() }
        XCTAssertNotEqual(server.port, 0)
        let before = try RawHTTP.request(port: server.port, "/metrics")
        XCTAssertEqual(before.status, 200)
        XCTAssertTrue(before.headers.contains("text/plain; version=0.0.4"), before.headers)
        XCTAssertEqual(RawHTTP.sample(before.body, "pushfleet_jobs_claimed_total"), 0)
        XCTAssertNil(RawHTTP.sample(before.body, Self.sentSeries))
        for kind in ["apns", "fcm", "webpush"] {  // pre-created so increase() sees the first event
            XCTAssertEqual(RawHTTP.sample(before.body, "pushfleet_credentials_invalid_total{kind=\"\(kind)\"}"), 0)
        }

        let app = try createApp()
        let users = try seedUsers(app, users: 3, devicesPerUser: 2)
        let ids = try (0..<3).map { i in try enqueue(app, users: users, title: "n\(i)") }
        let worker = try makeWorker(SimulatorOnlyRouter(), metrics: metrics)
        let done = worker.runOnItsOwnThread()
        XCTAssertTrue(try eventually(timeout: 30, interval: 0.05) { try world.openNotifications() == 0 }, "the worker did not finish")
        // The worker counts a claim's deliveries just after its record commits: wait for the count.
        var after = try RawHTTP.request(port: server.port, "/metrics")
        _ = try eventually(timeout: 10, interval: 0.05) {
            after = try RawHTTP.request(port: server.port, "/metrics")
            return RawHTTP.sample(after.body, Self.sentSeries) == 18
        }
        worker.requestStop()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(RawHTTP.sample(after.body, "pushfleet_jobs_claimed_total"), 3)
        XCTAssertEqual(RawHTTP.sample(after.body, Self.sentSeries), 18)
        XCTAssertEqual(RawHTTP.sample(after.body, "pushfleet_ready"), 1)
        XCTAssertEqual(try ids.map { try deliveries($0).values.filter { $0.status == "sent" }.count }.reduce(0, +), 18)
    }

    /// `users` users of `devicesPerUser` test devices each (android and iOS in turn, tokens the
    /// simulator accepts); returns the user ids.
    func seedUsers(_ app: UUID, users: Int, devicesPerUser: Int) throws -> [String] {
        try (0..<users).map { u in
            for d in 0..<devicesPerUser {
                try register(app, user: "user-\(u)", platform: d % 2 == 0 ? "android" : "ios", token: "tok-\(u)-\(d)")
            }
            return "user-\(u)"
        }
    }
}

final class MetricsServerTests: WorkerTestCase {
    func testMetricsAddressParsesHostPortAndOff() throws {
        XCTAssertEqual(try MetricsAddress.parse("0.0.0.0:9464"), MetricsAddress(loopbackOnly: false, port: 9464))
        XCTAssertEqual(try MetricsAddress.parse("127.0.0.1:0"), MetricsAddress(loopbackOnly: true, port: 0))
        XCTAssertEqual(try MetricsAddress.parse("localhost:8080"), MetricsAddress(loopbackOnly: true, port: 8080))
        XCTAssertNil(try MetricsAddress.parse("off"))
        for bad in ["9464", "10.0.0.1:9464", "0.0.0.0:70000", "0.0.0.0:x"] {
            XCTAssertThrowsError(try MetricsAddress.parse(bad), bad) { e in
                XCTAssertEqual((e as? MetricsServerError)?.code, "METRICS_ADDR")
            }
        }
    }

    func testScrapeShowsClaimsAndDeliveriesOfARun() throws { try conformScrapeShowsClaimsAndDeliveriesOfARun() }

    /// A client that connects and sends nothing, and one that sends garbage, neither block other
    /// scrapes nor the worker; wrong methods get 405, unknown paths 404, HEAD no body.
    func testSlowAndGarbageClientsDoNotStopTheWorker() throws {
        let metrics = WorkerMetrics()
        let server = try MetricsServer.start(address: MetricsAddress(loopbackOnly: true, port: 0), metrics: metrics,
                                             connectionLimit: 8, timeoutSeconds: 2)
        defer { server.stop() }
        let silent = try RawHTTP.connect(port: server.port)  // slow client: never sends a byte
        defer { close(silent) }
        let garbage = try RawHTTP.exchange(port: server.port, raw: "\u{01}\u{02}NOT HTTP AT ALL\r\n\r\n")
        XCTAssertFalse(garbage.hasPrefix("HTTP/1.1 200"), garbage)

        let app = try createApp()
        let users = try seedUsers(app, users: 2, devicesPerUser: 2)
        _ = try enqueue(app, users: users)
        _ = try enqueue(app, users: users)
        let worker = try makeWorker(SimulatorOnlyRouter(), metrics: metrics)
        let done = worker.runOnItsOwnThread()
        XCTAssertTrue(try eventually(timeout: 30, interval: 0.05) { try world.openNotifications() == 0 }, "the worker stalled")
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/healthz").status, 200)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/metrics", method: "POST").status, 405)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/nope").status, 404)
        let head = try RawHTTP.request(port: server.port, "/metrics", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, "")
        var scrape = try RawHTTP.request(port: server.port, "/metrics")
        _ = try eventually(timeout: 10, interval: 0.05) {   // counted just after the last record commits
            scrape = try RawHTTP.request(port: server.port, "/metrics")
            return RawHTTP.sample(scrape.body, Self.sentSeries) == 8
        }
        XCTAssertEqual(RawHTTP.sample(scrape.body, Self.sentSeries), 8)
        worker.requestStop()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        // The silent client is closed by MHD's connection timeout (2 s), not by us.
        var byte: UInt8 = 0
        let n = recv(silent, &byte, 1, 0)
        XCTAssertLessThanOrEqual(n, 0, "the idle connection should have been closed by the server")
    }

    /// One client address holding connections open (up to its limit and beyond) cannot lock another
    /// address's probe out: kubelet and Prometheus keep their answers while a noisy client waits.
    func testOneClientHoldingIdleConnectionsDoesNotLockOutAnotherAddress() throws {
        let server = try MetricsServer.start(address: MetricsAddress(loopbackOnly: true, port: 0), metrics: WorkerMetrics(),
                                             connectionLimit: 8, perClientLimit: 4, timeoutSeconds: 10)
        defer { server.stop() }
        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        for _ in 0..<40 {   // from 127.0.0.1; the kernel accepts them, MHD keeps 4 and drops the rest
            if let fd = try? RawHTTP.connect(port: server.port) { idle.append(fd) }
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/healthz", source: 0x7F00_0002).status, 200,
                       "a probe from 127.0.0.2 is answered")
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/readyz", source: 0x7F00_0003).status, 503)
    }
}
