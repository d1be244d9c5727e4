import Foundation
import XCTest
@testable import PushStore
@testable import PushWorker

/// The operators' endpoint (docs/fleet.md): `/metrics`, `/healthz`, `/readyz` on libmicrohttpd,
/// scraped over real HTTP while a worker runs.
final class MetricsServerTests: FleetDBTestCase {
    private static let sentSeries = "pushfleet_deliveries_total{provider=\"simulator\",status=\"sent\",error_code=\"\"}"

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

    /// Counters move by exactly what the run did: 3 notifications (one inline batch job each, as
    /// each audience fits one batch) of 6 devices: 3 claims, 18 sent deliveries (R-SEND-8).
    func testScrapeShowsClaimsAndDeliveriesOfARun() throws {
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

        let (app, users) = try seedApp(users: 3, devicesPerUser: 2)
        for i in 0..<3 { try enqueue(app: app, users: users, title: "n\(i)") }
        let worker = try Worker(config: Self.fastConfig(), databaseURL: database.conninfo, router: SimulatorOnlyRouter(),
                                metrics: metrics)
        let done = start(worker)
        XCTAssertTrue(try waitUntil(timeout: 30) { try unfinishedNotifications() == 0 }, "the worker did not finish")
        // The worker counts a claim's deliveries just after its record commits: wait for the count.
        var after = try RawHTTP.request(port: server.port, "/metrics")
        _ = try waitUntil(timeout: 10) {
            after = try RawHTTP.request(port: server.port, "/metrics")
            return RawHTTP.sample(after.body, Self.sentSeries) == 18
        }
        worker.requestStop()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(RawHTTP.sample(after.body, "pushfleet_jobs_claimed_total"), 3)
        XCTAssertEqual(RawHTTP.sample(after.body, Self.sentSeries), 18)
        XCTAssertEqual(RawHTTP.sample(after.body, "pushfleet_ready"), 1)
        let sentRows = try conn.exec("SELECT count(*) AS n FROM push_deliveries WHERE status = 'sent'").int(0, "n")
        XCTAssertEqual(sentRows, 18)
    }

    /// `/readyz` is 503 while the database does not exist, still 503 while its schema is older
    /// than `ReadinessGate.requiredSchemaVersion`, and 200 once migrated; `/healthz` is 200 throughout.
    func testReadyzFollowsDatabaseReachabilityAndSchemaVersion() throws {
        let name = "pf_test_late_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(8)
        let url = database.conninfo.replacingOccurrences(of: "dbname='\(database.name)'", with: "dbname='\(name)'")
        XCTAssertNotEqual(url, database.conninfo)
        let metrics = WorkerMetrics()
        let server = try MetricsServer.start(address: MetricsAddress(loopbackOnly: true, port: 0), metrics: metrics)
        defer { server.stop() }
        let worker = try Worker(config: Self.fastConfig(), databaseURL: url, router: SimulatorOnlyRouter(), metrics: metrics)
        let done = start(worker)
        defer {
            worker.requestStop()
            _ = done.wait(timeout: .now() + 10)
            _ = try? conn.exec("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/readyz").status, 503)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/healthz").status, 200)
        XCTAssertGreaterThan(metrics.dbErrors.current, 0)

        try conn.exec("CREATE DATABASE \(name) TEMPLATE template0")
        let late = try PGConnection.connect(url)
        try late.exec("CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
        try late.exec("INSERT INTO schema_migrations (version, name) VALUES (1, 'schema')")
        Thread.sleep(forTimeInterval: 2.5)  // the worker reconnects (backoff) and finds version 1 < 3
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/readyz").status, 503)
        try late.exec("DROP TABLE schema_migrations")
        try Migrator(connection: late, migrations: Migrator.loadMigrations(directory: Self.sqlDirectory)).migrate()
        XCTAssertTrue(try waitUntil(timeout: 20) { try RawHTTP.request(port: server.port, "/readyz").status == 200 })
        XCTAssertEqual(metrics.ready.current, 1)
    }

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

        let (app, users) = try seedApp(users: 2, devicesPerUser: 2)
        try enqueue(app: app, users: users)
        try enqueue(app: app, users: users)
        let worker = try Worker(config: Self.fastConfig(), databaseURL: database.conninfo, router: SimulatorOnlyRouter(),
                                metrics: metrics)
        let done = start(worker)
        XCTAssertTrue(try waitUntil(timeout: 30) { try unfinishedNotifications() == 0 }, "the worker stalled")
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/healthz").status, 200)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/metrics", method: "POST").status, 405)
        XCTAssertEqual(try RawHTTP.request(port: server.port, "/nope").status, 404)
        let head = try RawHTTP.request(port: server.port, "/metrics", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, "")
        let scrape = try RawHTTP.request(port: server.port, "/metrics")
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
