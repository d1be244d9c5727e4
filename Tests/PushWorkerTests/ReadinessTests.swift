import Foundation
import XCTest
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Database faults: a read-only server makes the worker not ready (it claims nothing), and it
/// recovers when writes are allowed again; a killed session is reconnected with backoff; the
/// operators' `/readyz` follows the database's reachability and schema version.
final class ReadinessTests: FleetDBTestCase {
    func testVerdictNeedsRecentSchemaAndWritableServer() {
        let need = ReadinessGate.requiredSchemaVersion
        XCTAssertEqual(ReadinessGate.verdict(DatabaseHealth(schemaVersion: need, readOnly: false), requiredVersion: need), .ready)
        XCTAssertEqual(ReadinessGate.verdict(DatabaseHealth(schemaVersion: need + 1, readOnly: false), requiredVersion: need), .ready)
        XCTAssertEqual(ReadinessGate.verdict(DatabaseHealth(schemaVersion: need - 1, readOnly: false), requiredVersion: need),
                       .schemaTooOld(found: need - 1, needed: need, missing: []))
        XCTAssertEqual(ReadinessGate.verdict(DatabaseHealth(schemaVersion: need, readOnly: true), requiredVersion: need), .readOnly)
        // The highest version is there but one below it is not (a branch's migration landed late).
        XCTAssertEqual(ReadinessGate.verdict(DatabaseHealth(schemaVersion: need, readOnly: false, missingVersions: [8]),
                                             requiredVersion: need), .schemaTooOld(found: need, needed: need, missing: [8]))
    }

    /// The build's list of migrations is the `sql/` directory's, so a new migration cannot be
    /// forgotten by the gate, and its last is `requiredSchemaVersion`.
    func testRequiredMigrationsAreTheSQLDirectorys() throws {
        let files = try Migrator.loadMigrations(directory: RepoPaths.sqlDirectory).map(\.version)
        XCTAssertEqual(ReadinessGate.requiredMigrations, files)
        XCTAssertEqual(ReadinessGate.requiredMigrations.last, ReadinessGate.requiredSchemaVersion)
    }

    func testHealthProbeReadsSchemaVersionMissingVersionsAndReadOnly() throws {
        let required = ReadinessGate.requiredMigrations
        XCTAssertEqual(try HealthStore(connection: conn).healthProbe(required: required),
                       DatabaseHealth(schemaVersion: ReadinessGate.requiredSchemaVersion, readOnly: false))
        // A database migrated by the previous release, then given 0008 by nobody (its highest
        // version is unchanged), probed by a build that also needs a version no file has yet.
        let next = (required.last ?? 0) + 1
        try conn.exec("BEGIN")
        try conn.exec("DELETE FROM schema_migrations WHERE version = 8")
        let gap = try HealthStore(connection: conn).healthProbe(required: required + [next])
        try conn.exec("ROLLBACK")
        XCTAssertEqual(gap, DatabaseHealth(schemaVersion: ReadinessGate.requiredSchemaVersion, readOnly: false,
                                           missingVersions: [8, next]))
        try conn.exec("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        XCTAssertEqual(try HealthStore(connection: conn).healthProbe().readOnly, true)
    }

    /// Read-only for this database's new sessions (ALTER DATABASE, so other tests on the shared
    /// server are untouched), the worker's sessions killed: not ready, nothing claimed; writes back:
    /// ready again and the queued notification is delivered.
    func testReadOnlyDatabaseMakesWorkerNotReadyThenItRecovers() throws {
        let (app, users) = try seedApp(users: 1, devicesPerUser: 2)
        let metrics = WorkerMetrics()
        let worker = try Worker(config: Self.fastConfig(), databaseURL: database.conninfo, router: SimulatorOnlyRouter(),
                                metrics: metrics)
        let done = start(worker)
        defer {
            worker.requestStop()
            _ = done.wait(timeout: .now() + 10)
        }
        XCTAssertTrue(waitUntil(timeout: 10) { metrics.ready.current == 1 })

        try conn.exec("ALTER DATABASE \(database.name) SET default_transaction_read_only = on")
        try conn.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                      [.text(database.name)])
        XCTAssertTrue(waitUntil(timeout: 10) { metrics.ready.current == 0 }, "read-only server must make the worker not ready")
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(metrics.ready.current, 0)
        let claimedBefore = metrics.jobsClaimed.current
        // `conn` opened before ALTER DATABASE, so it may still write.
        let id = try enqueue(app: app, users: users)
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(metrics.jobsClaimed.current, claimedBefore, "a not-ready worker claims nothing")

        try conn.exec("ALTER DATABASE \(database.name) RESET default_transaction_read_only")
        XCTAssertTrue(waitUntil(timeout: 15) { metrics.ready.current == 1 }, "the worker must recover")
        XCTAssertTrue(try waitUntil(timeout: 15) { try unfinishedNotifications() == 0 })
        let status = try conn.exec("SELECT status FROM push_notifications WHERE id = $1", [.uuid(id)]).string(0, "status")
        XCTAssertEqual(status, "sent")
        XCTAssertGreaterThan(metrics.dbErrors.current, 0)
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
}

/// A role lacking INSERT, UPDATE on `push_platforms` (sql/0024): the worker's gate says so
/// (`worker.not_ready reason=PLATFORMS_NOT_SERVED` with the database's refusal, once), never logs
/// `worker.ready` before the platforms are written, and keeps retrying; once granted, it is ready
/// and logs `worker.ready` once.
final class PlatformsPrivilegeReadinessTests: FleetDBTestCase {
    func testMissingPrivilegeIsNamedOnceThenGrantMakesReady() throws {
        let role = try PlatformsRestrictedRole(database: database, admin: conn)
        defer { try? role.drop() }
        let captured = CapturedLog()
        let metrics = WorkerMetrics()
        let worker = try Worker(config: Self.fastConfig(), databaseURL: role.conninfo, router: SimulatorOnlyRouter(),
                                metrics: metrics, log: captured.log(.info))
        let done = start(worker)
        defer {
            worker.requestStop()
            _ = done.wait(timeout: .now() + 10)
        }
        XCTAssertTrue(waitUntil(timeout: 10) { !captured.events("worker.not_ready").isEmpty })
        // Several retries (backoff 0.2 s doubling to 5 s) within 3 s.
        Thread.sleep(forTimeInterval: 3)
        XCTAssertEqual(metrics.ready.current, 0)
        XCTAssertEqual(captured.events("worker.ready").count, 0, "not ready before the platforms are written")
        let notReady = captured.events("worker.not_ready")
        XCTAssertEqual(notReady.count, 1, "one line per change of state: \(notReady)")
        XCTAssertEqual(notReady.first?["reason"] as? String, "PLATFORMS_NOT_SERVED")
        let error = notReady.first?["error"] as? String ?? ""
        XCTAssertTrue(error.contains("42501") && error.contains("push_platforms"), error)
        XCTAssertEqual(captured.events("worker.db_error").count, 0, "the refusal is a verdict, not a lost database")

        try role.grantPlatforms()
        XCTAssertTrue(waitUntil(timeout: 15) { metrics.ready.current == 1 }, "ready once granted")
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(captured.events("worker.ready").count, 1)
    }
}
