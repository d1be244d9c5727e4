/// Isolation levels for `PGConnection.transaction(isolation:_:)`.
public enum PGIsolation: String, Sendable {
    /// PostgreSQL's default.
    case readCommitted = "READ COMMITTED"
    /// Snapshot isolation; may fail with `40001` on write conflicts.
    case repeatableRead = "REPEATABLE READ"
    /// Serializable; may fail with `40001` (`PGError.isSerializationFailure`): retry the whole block.
    case serializable = "SERIALIZABLE"
}

extension PGConnection {
    /// Runs `body` inside a transaction: `BEGIN`, then `COMMIT` when it returns, `ROLLBACK` when
    /// it throws (the error is rethrown; a failing ROLLBACK is ignored since the session then is
    /// gone anyway).
    ///
    /// Called inside another `transaction`, it becomes a savepoint (`SAVEPOINT pf_sp_<depth>`)
    /// that is released on return and rolled back to on throw, leaving the outer transaction usable.
    /// - Parameters:
    ///   - isolation: for the outermost level only; nil keeps the server default.
    ///   - body: the work; receives this connection.
    /// - Throws: whatever `body` throws; `PGError` from BEGIN/COMMIT (e.g. `40001` at commit);
    ///   `DB_QUERY` with SQLSTATE `25P02` when `body` swallowed an error that aborted the
    ///   transaction (it is rolled back, nothing is committed); `DB_USAGE` for `isolation` on a
    ///   nested call.
    @discardableResult
    public func transaction<T>(isolation: PGIsolation? = nil, _ body: (PGConnection) throws -> T) throws -> T {
        if isInTransaction {
            guard isolation == nil else {
                throw PGError(code: .usage, message: "isolation level given for a nested transaction")
            }
            return try savepoint(body)
        }
        try exec(isolation.map { "BEGIN ISOLATION LEVEL " + $0.rawValue } ?? "BEGIN")
        do {
            let value = try body(self)
            if isAborted {
                throw PGError(code: .query, message: "transaction aborted by an error that was not rethrown; rolled back",
                              sqlState: "25P02")
            }
            try exec("COMMIT")
            return value
        } catch {
            if isInTransaction { _ = try? exec("ROLLBACK") }
            throw error
        }
    }

    private func savepoint<T>(_ body: (PGConnection) throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "pf_sp_\(savepointDepth)"
        try exec("SAVEPOINT " + name)
        do {
            let value = try body(self)
            if isAborted {
                throw PGError(code: .query, message: "savepoint aborted by an error that was not rethrown; rolled back",
                              sqlState: "25P02")
            }
            try exec("RELEASE SAVEPOINT " + name)
            return value
        } catch {
            _ = try? exec("ROLLBACK TO SAVEPOINT " + name)
            _ = try? exec("RELEASE SAVEPOINT " + name)
            throw error
        }
    }
}
