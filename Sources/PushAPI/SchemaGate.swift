import Foundation
import PushStore

/// Whether the database's schema serves this release, as the readiness probe last found it: while
/// the probe's verdict is `SCHEMA_TOO_OLD` (no `pushfleet migrate` yet, or one still missing), every
/// route that needs the database answers 503 `SERVICE_UNAVAILABLE` before touching it, instead of
/// running statements on tables and functions that are not there (a 500). Before the probe's
/// first verdict the gate is open; a statement that then meets a missing table or function is
/// mapped to the same 503 (`answer(_:)`).
final class SchemaGate: @unchecked Sendable {
    private let behind = AtomicFlag()

    /// The probe's latest finding: true while the schema lacks a migration this release needs.
    func set(behind value: Bool) { behind.set(value) }

    /// Whether the probe last found the schema behind.
    var isBehind: Bool { behind.current }

    /// The 503 answered while the schema is behind.
    static let refusal = APIError.unavailable("the database schema is not migrated for this release (run `pushfleet migrate`); retry shortly")

    /// Throws the 503 while the probe finds the schema behind. - Throws: `APIError` 503.
    func check() throws {
        if behind.current { throw Self.refusal }
    }

    /// PostgreSQL's undefined_table (42P01) and undefined_function (42883): the schema lacks what a
    /// statement of this release names, which is a migration not yet run, not a bug.
    static func isMissingSchema(_ e: PGError) -> Bool {
        e.sqlState == "42P01" || e.sqlState == "42883"
    }
}
