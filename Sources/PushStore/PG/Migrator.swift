import Foundation

/// One schema migration: the file `NNNN_name.up.sql` (version `NNNN`, any number of digits).
public struct Migration: Sendable, Equatable {
    /// The version, from the file name's leading digits (> 0).
    public let version: Int
    /// The name part, e.g. `jobs` for `0002_jobs.up.sql`.
    public let name: String
    /// The SQL script (may hold several statements; runs inside one transaction).
    public let sql: String

    /// Makes a migration value (for tests; files come through `Migrator.loadMigrations`).
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// What one `Migrator.migrate()` run did.
public struct MigrationReport: Sendable, Equatable {
    /// Versions applied by this run, in order (empty when already up to date).
    public var applied: [Int]
    /// Highest version recorded in the database after the run (0: none).
    public var databaseVersion: Int
    /// Highest version among the known files (0: none).
    public var latestKnownVersion: Int

    /// The database holds a version newer than any known file (a newer release migrated it):
    /// nothing was applied, and the caller decides whether it may run against that schema.
    public var databaseIsAhead: Bool { databaseVersion > latestKnownVersion }
}

/// Applies `sql/NNNN_name.up.sql` files in version order, recording each in
/// `schema_migrations(version int primary key, name text, applied_at timestamptz)`.
///
/// A run holds the session advisory lock `advisoryLockKey` throughout, so replicas starting at
/// once apply each file exactly once (the others wait, then find nothing to do). Each file runs
/// in its own transaction with its record, so a failing file leaves no trace and stops the run.
/// Files must not contain their own `BEGIN`/`COMMIT` nor statements that refuse a transaction
/// (`CREATE INDEX CONCURRENTLY`). Re-running applies nothing. When the database records a
/// version newer than every known file, nothing is applied and the report says so
/// (`databaseIsAhead`). Call it outside a transaction.
public final class Migrator {
    /// Key of the `pg_advisory_lock` held during a run ("pushflt1" as ASCII).
    public static let advisoryLockKey: Int64 = 0x7075_7368_666c_7431
    /// The table recording applied versions.
    public static let tableName = "schema_migrations"

    private let connection: PGConnection
    /// The known migrations, sorted by version.
    public let migrations: [Migration]

    /// A migrator for `migrations` (sorted here) on `connection`.
    /// - Throws: `DB_MIGRATION` when two migrations share a version or a version is not positive.
    public init(connection: PGConnection, migrations: [Migration]) throws {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.version == b.version {
            throw PGError(code: .migration, message: "two migrations have version \(a.version): \(a.name), \(b.name)")
        }
        if let bad = sorted.first(where: { $0.version <= 0 }) {
            throw PGError(code: .migration, message: "migration version must be positive: \(bad.version)_\(bad.name)")
        }
        self.connection = connection
        self.migrations = sorted
    }

    /// A migrator for the `*.up.sql` files of `directory` (see `loadMigrations`).
    public convenience init(connection: PGConnection, directory: String) throws {
        try self.init(connection: connection, migrations: Self.loadMigrations(directory: directory))
    }

    /// Applies every known migration not yet recorded, in version order, under the advisory lock.
    /// - Returns: what was applied and the versions on both sides.
    /// - Throws: `DB_MIGRATION` (with the server's `sqlState`) naming the file that failed;
    ///   `PGError` from the connection otherwise.
    @discardableResult
    public func migrate() throws -> MigrationReport {
        try connection.exec("SELECT pg_advisory_lock($1)", [.int64(Self.advisoryLockKey)])
        defer { _ = try? connection.exec("SELECT pg_advisory_unlock($1)", [.int64(Self.advisoryLockKey)]) }
        try connection.exec("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version int PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now())
            """)
        let recorded = try recordedVersions()
        var report = MigrationReport(applied: [], databaseVersion: recorded.max() ?? 0,
                                     latestKnownVersion: migrations.last?.version ?? 0)
        if report.databaseIsAhead { return report }
        for migration in migrations where !recorded.contains(migration.version) {
            do {
                try connection.transaction { c in
                    try c.execScript(migration.sql)
                    try c.exec("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                               [.int(migration.version), .text(migration.name)])
                }
            } catch let error as PGError {
                var wrapped = error
                wrapped.code = .migration
                wrapped.message = "migration \(migration.version)_\(migration.name) failed: \(error.message)"
                throw wrapped
            }
            report.applied.append(migration.version)
            report.databaseVersion = max(report.databaseVersion, migration.version)
        }
        return report
    }

    /// Highest version recorded in the database; 0 when none (or no `schema_migrations` table).
    /// - Throws: `PGError` from the connection.
    public func currentVersion() throws -> Int {
        let exists = try connection.exec("SELECT to_regclass('schema_migrations') IS NOT NULL")
        guard try exists.bool(0, 0) else { return 0 }
        return try connection.exec("SELECT coalesce(max(version), 0) FROM schema_migrations").int(0, 0)
    }

    private func recordedVersions() throws -> Set<Int> {
        let result = try connection.exec("SELECT version FROM schema_migrations")
        return Set(try result.rows.map { try result.int($0, 0) })
    }

    // MARK: - Files

    /// Reads the migrations of `directory`: every file named `<digits>_<name>.up.sql` (`name` of
    /// letters, digits, `_`); `.down.sql` and other files are ignored.
    /// - Throws: `DB_MIGRATION` for an unreadable directory or file, an `.up.sql` file whose name
    ///   does not follow the pattern, or a duplicate version.
    public static func loadMigrations(directory: String) throws -> [Migration] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw PGError(code: .migration, message: "cannot list migration directory \(directory)")
        }
        var out = [Migration]()
        for file in names.sorted() where file.hasSuffix(".up.sql") {
            guard let (version, name) = parseFileName(file) else {
                throw PGError(code: .migration, message: "migration file name is not NNNN_name.up.sql: \(file)")
            }
            let path = (directory as NSString).appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: path), let sql = String(data: data, encoding: .utf8) else {
                throw PGError(code: .migration, message: "cannot read migration file \(path) as UTF-8")
            }
            if let other = out.first(where: { $0.version == version }) {
                throw PGError(code: .migration, message: "two migration files have version \(version): \(other.name), \(name)")
            }
            out.append(Migration(version: version, name: name, sql: sql))
        }
        return out.sorted { $0.version < $1.version }
    }

    /// `0003_jobs_index.up.sql` -> (3, "jobs_index"); nil when the name does not follow the pattern.
    static func parseFileName(_ file: String) -> (Int, String)? {
        let stem = file.dropLast(".up.sql".count)
        guard let underscore = stem.firstIndex(of: "_") else { return nil }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let version = Int(digits), version > 0, !name.isEmpty,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else { return nil }
        return (version, String(name))
    }
}
