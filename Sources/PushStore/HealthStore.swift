import Foundation

/// What the readiness probe found on one session.
public struct DatabaseHealth: Sendable, Equatable {
    /// Highest version in `schema_migrations` (0: none applied, or no table).
    public var schemaVersion: Int
    /// The session refuses writes (`default_transaction_read_only`, or a standby).
    public var readOnly: Bool
    /// The versions asked about (`healthProbe(required:)`) that `schema_migrations` does not record,
    /// ascending. Migrations of parallel branches land out of order (0008 after 0011), so the
    /// highest version alone does not show that every one this build uses was applied.
    public var missingVersions: [Int]

    /// Makes a value.
    public init(schemaVersion: Int, readOnly: Bool, missingVersions: [Int] = []) {
        self.schemaVersion = schemaVersion
        self.readOnly = readOnly
        self.missingVersions = missingVersions
    }
}

/// The worker's readiness probe over one connection (SQL in `HealthQueries`).
public final class HealthStore {
    /// The connection this store runs on.
    public let connection: PGConnection

    /// Wraps an open connection.
    public init(connection: PGConnection) { self.connection = connection }

    /// Reads the schema version, which of `required` are not applied, and whether writes are
    /// refused: one or two round trips, no write.
    /// - Throws: `PGError` when the session is broken or the server refuses the reads.
    public func healthProbe(required: [Int] = []) throws -> DatabaseHealth {
        let r = try connection.exec(HealthQueries.session)
        let readOnly = try r.bool(0, "read_only") || r.bool(0, "in_recovery")
        guard try r.bool(0, "has_migrations") else {
            return DatabaseHealth(schemaVersion: 0, readOnly: readOnly, missingVersions: required.sorted())
        }
        let v = try connection.exec(HealthQueries.schemaVersion, [.int64Array(required.map { Int64($0) })])
        let missing = try v.string(0, "missing").split(separator: ",").compactMap { Int($0) }
        return DatabaseHealth(schemaVersion: try v.int(0, "version"), readOnly: readOnly, missingVersions: missing)
    }
}
