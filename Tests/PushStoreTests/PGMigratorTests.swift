import XCTest
@testable import PushStore

/// Migrations: ordered, recorded, idempotent, safe when replicas start together.
final class PGMigratorTests: PGTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = NSTemporaryDirectory() + "pf-migrations-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try write("0001_counter.up.sql", """
            CREATE TABLE applied_log (version int, note text);
            INSERT INTO applied_log VALUES (1, 'first; with a semicolon');
            """)
        try write("0001_counter.down.sql", "DROP TABLE applied_log;")
        try write("0002_jobs.up.sql", """
            CREATE TABLE jobs (id bigserial PRIMARY KEY);
            INSERT INTO applied_log VALUES (2, 'second');
            """)
        try write("0010_index.up.sql", """
            CREATE INDEX jobs_id ON jobs (id);
            INSERT INTO applied_log VALUES (10, 'tenth');
            """)
        try write("README.md", "not a migration")
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
        try super.tearDownWithError()
    }

    private func write(_ name: String, _ text: String) throws {
        try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    private func log(_ c: PGConnection) throws -> [Int] {
        let r = try c.exec("SELECT version FROM applied_log ORDER BY version")
        return try r.rows.map { try r.int($0, 0) }
    }

    func testAppliesUpFilesInVersionOrderAndRecordsEach() throws {
        let migrator = try Migrator(connection: conn, directory: directory)
        XCTAssertEqual(migrator.migrations.map(\.version), [1, 2, 10])
        XCTAssertEqual(migrator.migrations.map(\.name), ["counter", "jobs", "index"])
        XCTAssertEqual(try migrator.currentVersion(), 0, "fresh database has no schema_migrations")
        let report = try migrator.migrate()
        XCTAssertEqual(report, MigrationReport(applied: [1, 2, 10], databaseVersion: 10, latestKnownVersion: 10))
        XCTAssertEqual(try log(conn), [1, 2, 10])
        XCTAssertEqual(try migrator.currentVersion(), 10)
        let r = try conn.exec("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
        XCTAssertEqual(try r.rows.map { try r.string($0, "name") }, ["counter", "jobs", "index"])
        XCTAssertLessThan(abs(try r.date(0, "applied_at").timeIntervalSinceNow), 60)
    }

    func testRerunAppliesNothingAndNewFileIsAppliedAlone() throws {
        try Migrator(connection: conn, directory: directory).migrate()
        let again = try Migrator(connection: conn, directory: directory).migrate()
        XCTAssertEqual(again.applied, [])
        XCTAssertEqual(try log(conn), [1, 2, 10])
        try write("0011_more.up.sql", "INSERT INTO applied_log VALUES (11, 'eleventh');")
        XCTAssertEqual(try Migrator(connection: conn, directory: directory).migrate().applied, [11])
        XCTAssertEqual(try log(conn), [1, 2, 10, 11])
    }

    func testFailingFileIsRolledBackStopsTheRunAndNamesTheFile() throws {
        try write("0005_broken.up.sql", """
            INSERT INTO applied_log VALUES (5, 'must vanish');
            SELECT * FROM no_such_table;
            """)
        let migrator = try Migrator(connection: conn, directory: directory)
        let error = expectPGError { try migrator.migrate() }
        XCTAssertEqual(error?.code, .migration)
        XCTAssertEqual(error?.sqlState, "42P01")
        XCTAssertTrue(error?.message.contains("5_broken") ?? false)
        XCTAssertEqual(try log(conn), [1, 2], "0005 rolled back, 0010 never ran")
        XCTAssertEqual(try migrator.currentVersion(), 2)
        XCTAssertFalse(conn.isInTransaction)
        XCTAssertEqual(try conn.exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").int(0, 0), 0,
                       "advisory lock released after a failed run")
    }

    func testFourReplicasMigratingAtOnceApplyEachFileExactlyOnce() throws {
        let connections = try (0..<4).map { _ in try database.connect() }
        let reportsBox = PGLockedBox([MigrationReport?](repeating: nil, count: 4))
        let errorsBox = PGLockedBox([Error?](repeating: nil, count: 4))
        let group = DispatchGroup()
        for i in 0..<4 {
            group.enter()
            let connection = connections[i]
            let dir = directory!
            Thread {
                do {
                    let report = try Migrator(connection: connection, directory: dir).migrate()
                    reportsBox.update { $0[i] = report }
                } catch {
                    errorsBox.update { $0[i] = error }
                }
                group.leave()
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        let reports = reportsBox.value, errors = errorsBox.value
        XCTAssertTrue(errors.allSatisfy { $0 == nil }, "\(errors)")
        XCTAssertEqual(reports.compactMap { $0 }.flatMap(\.applied).sorted(), [1, 2, 10])
        XCTAssertTrue(reports.allSatisfy { $0?.databaseVersion == 10 })
        XCTAssertEqual(try log(conn), [1, 2, 10])
        XCTAssertEqual(try conn.exec("SELECT count(*) FROM schema_migrations").int(0, 0), 3)
    }

    func testDatabaseNewerThanKnownFilesIsReportedAndNothingApplied() throws {
        try Migrator(connection: conn, directory: directory).migrate()
        try conn.exec("INSERT INTO schema_migrations (version, name) VALUES (99, 'from_a_newer_release')")
        try write("0011_more.up.sql", "INSERT INTO applied_log VALUES (11, 'eleventh');")
        let report = try Migrator(connection: conn, directory: directory).migrate()
        XCTAssertTrue(report.databaseIsAhead)
        XCTAssertEqual(report.applied, [])
        XCTAssertEqual(report.databaseVersion, 99)
        XCTAssertEqual(report.latestKnownVersion, 11)
        XCTAssertEqual(try log(conn), [1, 2, 10])
    }

    func testMisnamedAndDuplicateFilesAreRefused() throws {
        XCTAssertNil(Migrator.parseFileName("0003-jobs.up.sql"))
        XCTAssertNil(Migrator.parseFileName("0000_zero.up.sql"))
        XCTAssertNil(Migrator.parseFileName("abc_x.up.sql"))
        XCTAssertNil(Migrator.parseFileName("0003_.up.sql"))
        XCTAssertEqual(Migrator.parseFileName("0003_jobs_2.up.sql")?.0, 3)
        try write("0002_other.up.sql", "SELECT 1;")
        XCTAssertEqual(expectPGError { _ = try Migrator.loadMigrations(directory: self.directory) }?.code, .migration)
        try FileManager.default.removeItem(atPath: directory + "/0002_other.up.sql")
        try write("7-bad.up.sql", "SELECT 1;")
        XCTAssertEqual(expectPGError { _ = try Migrator.loadMigrations(directory: self.directory) }?.code, .migration)
        XCTAssertEqual(expectPGError { _ = try Migrator.loadMigrations(directory: "/nonexistent-pf") }?.code, .migration)
    }

    func testSQLDirectoryIsFoundByEnvironmentThenWorkingDirectoryThenExecutableAncestors() throws {
        let root = directory!
        let app = root + "/app"
        try FileManager.default.createDirectory(atPath: app + "/sql", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: app + "/.build/debug", withIntermediateDirectories: true)
        try "SELECT 1;".write(toFile: app + "/sql/0001_a.up.sql", atomically: true, encoding: .utf8)
        let exe = app + "/.build/debug/pushfleet"
        XCTAssertEqual(MigrationDirectory.locate(environment: ["PUSHFLEET_SQL_DIR": "/x/sql"], currentDirectory: app,
                                                 executablePath: exe), "/x/sql")
        XCTAssertEqual(MigrationDirectory.locate(environment: [:], currentDirectory: app, executablePath: nil), app + "/sql")
        XCTAssertEqual(MigrationDirectory.locate(environment: [:], currentDirectory: "/", executablePath: exe), app + "/sql")
        XCTAssertNil(MigrationDirectory.locate(environment: [:], currentDirectory: "/", executablePath: "/usr/bin/true"))
        XCTAssertEqual(expectPGError {
            _ = try MigrationDirectory.require(environment: ["PUSHFLEET_SQL_DIR": "/nonexistent-pf"], currentDirectory: app,
                                               executablePath: nil)
        }?.code, .migration)
    }
}
