import Foundation
import PushStore

/// A fresh throwaway database (`PGTestDatabase.create()`, server from `PUSHFLEET_TEST_DATABASE_URL`)
/// with every migration of `<repo>/sql` applied, and one open session on it. The caller drops it
/// (`database.drop()`) in its tear-down.
public struct MigratedTestDatabase {
    /// The database (drop it when done).
    public let database: PGTestDatabase
    /// The session the migrations ran on.
    public let connection: PGConnection
    /// What the migrator applied.
    public let report: MigrationReport

    /// Creates the database and migrates it with `RepoPaths.sqlDirectory`; drops it again if the
    /// migration fails.
    /// - Throws: `PGError` (no server variable, connection, migration failures).
    public static func create() throws -> MigratedTestDatabase {
        let database = try PGTestDatabase.create()
        do {
            let connection = try database.connect()
            let report = try Migrator(connection: connection,
                                      migrations: try Migrator.loadMigrations(directory: RepoPaths.sqlDirectory)).migrate()
            return MigratedTestDatabase(database: database, connection: connection, report: report)
        } catch {
            try? database.drop()
            throw error
        }
    }
}
