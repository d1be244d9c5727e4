import Foundation
import PushCore

/// Where the fleet shares its provider pauses (R-KIND-4): `PGPauseStore` on `push_provider_pauses`
/// in production, `MemoryPauseStore` for one process. Every change is a compare-and-set on the
/// pause's `version`; the rules that compute the new state are `PauseRules` (PushCore).
public protocol PauseStore: AnyObject {
    /// Every current pause.
    func pauses() throws -> [ProviderPause]
    /// Stores `pause` unless its scope is already paused. - Returns: the stored pause (this one, or
    /// the one another worker stored first) and whether this call stored it.
    func insert(_ pause: ProviderPause) throws -> (pause: ProviderPause, inserted: Bool)
    /// Replaces the pause whose version is `expected` by `pause` (whose version must be
    /// `expected + 1`). - Returns: the stored pause, or nil when the version moved (another worker
    /// changed or ended it).
    func update(_ pause: ProviderPause, expected: Int64) throws -> ProviderPause?
    /// Ends the pause of `scope` if its version is still `expected`. - Returns: true when this call ended it.
    func delete(scope: String, expected: Int64) throws -> Bool
}

/// Pauses in `push_provider_pauses` (sql/0014) through one connection, opened on first use and
/// again after it broke.
public final class PGPauseStore: PauseStore, @unchecked Sendable {
    private let open: () throws -> PGConnection
    private var connection: PGConnection?

    /// - Parameter openConnection: opens this store's own connection (never the worker's queue session).
    public init(openConnection: @escaping () throws -> PGConnection) {
        self.open = openConnection
    }

    private func conn() throws -> PGConnection {
        if let c = connection, c.isHealthy { return c }
        connection = nil
        let c = try open()
        connection = c
        return c
    }

    /// Runs `body` on the connection; a failure that broke it drops it (the next call reconnects).
    private func run<T>(_ body: (PGConnection) throws -> T) throws -> T {
        let c = try conn()
        do {
            return try body(c)
        } catch {
            if !c.isHealthy { connection = nil }
            throw error
        }
    }

    public func pauses() throws -> [ProviderPause] {
        try run { c in
            let r = try c.exec(PauseQueries.all)
            return try r.rows.compactMap { try Self.decode(r, $0) }
        }
    }

    public func insert(_ p: ProviderPause) throws -> (pause: ProviderPause, inserted: Bool) {
        try run { c in
            let r = try c.exec(PauseQueries.insert, [
                .text(p.scope), .text(p.cause.rawValue), .text(p.detail), .date(p.pausedAt), p.resumeAt.map { .date($0) },
                .double(p.probeInterval), .date(p.nextProbeAt),
            ])
            if r.rowCount == 1, let stored = try Self.decode(r, 0) { return (stored, try r.bool(0, "inserted")) }
            // Another worker's insert committed while this one waited on it: the statement's snapshot
            // did not see that row; a new statement does.
            let again = try c.exec(PauseQueries.one, [.text(p.scope)])
            guard again.rowCount == 1, let stored = try Self.decode(again, 0) else {
                throw PGError(code: .query, message: "push_provider_pauses: the scope is neither insertable nor stored")
            }
            return (stored, false)
        }
    }

    public func update(_ p: ProviderPause, expected: Int64) throws -> ProviderPause? {
        try run { c in
            let r = try c.exec(PauseQueries.update, [
                .text(p.scope), .text(p.cause.rawValue), .text(p.detail), p.resumeAt.map { .date($0) },
                .double(p.probeInterval), .date(p.nextProbeAt), p.probeOwner.map { .text($0) },
                p.probeLeaseUntil.map { .date($0) }, .int(p.probes), .date(p.pausedAt), .int64(expected),
            ])
            return r.rowCount == 1 ? try Self.decode(r, 0) : nil
        }
    }

    public func delete(scope: String, expected: Int64) throws -> Bool {
        try run { c in try c.exec(PauseQueries.delete, [.text(scope), .int64(expected)]).affectedRowCount == 1 }
    }

    /// One row as a pause; a row whose cause this build does not know reads as nil (skipped).
    static func decode(_ r: PGResult, _ i: Int) throws -> ProviderPause? {
        guard let cause = PauseCause(rawValue: try r.string(i, "cause")) else { return nil }
        return ProviderPause(scope: try r.string(i, "scope"), cause: cause, detail: try r.string(i, "detail"),
                             pausedAt: try r.date(i, "paused_at"), resumeAt: try r.decode(i, "resume_at", as: Date?.self),
                             probeInterval: try r.double(i, "probe_interval_s"), nextProbeAt: try r.date(i, "next_probe_at"),
                             probeOwner: try r.decode(i, "probe_owner", as: String?.self),
                             probeLeaseUntil: try r.decode(i, "probe_lease_until", as: Date?.self),
                             probes: try r.int(i, "probes"), version: try r.int64(i, "version"))
    }
}

/// Pauses shared by the workers of one process (tests, the in-memory world, a worker whose
/// sessions offer no database store): the same compare-and-set, under a lock.
public final class MemoryPauseStore: PauseStore, @unchecked Sendable {
    private let lock = NSLock()
    private var rows: [String: ProviderPause] = [:]

    public init() {}

    public func pauses() throws -> [ProviderPause] { lock.withLock { rows.values.sorted { $0.scope < $1.scope } } }

    public func insert(_ p: ProviderPause) throws -> (pause: ProviderPause, inserted: Bool) {
        lock.withLock {
            if let existing = rows[p.scope] { return (existing, false) }
            var stored = p
            stored.version = 1
            rows[p.scope] = stored
            return (stored, true)
        }
    }

    public func update(_ p: ProviderPause, expected: Int64) throws -> ProviderPause? {
        lock.withLock {
            guard let current = rows[p.scope], current.version == expected else { return nil }
            var stored = p
            stored.version = expected + 1
            rows[p.scope] = stored
            return stored
        }
    }

    public func delete(scope: String, expected: Int64) throws -> Bool {
        lock.withLock {
            guard rows[scope]?.version == expected else { return false }
            rows[scope] = nil
            return true
        }
    }
}
