import Foundation

/// A bounded pool of PostgreSQL sessions for a request-serving process (the HTTP API).
///
/// At most `maxConnections` sessions exist at once; a caller waits for one at most until its
/// deadline (then `DB_POOL_TIMEOUT`). Sessions open lazily with a short connect timeout; while
/// the server cannot be reached, callers fail at once (`DB_CONNECTION`) for `failFastSeconds`
/// after each failed attempt instead of each waiting out a connect, so an outage answers in
/// milliseconds and recovery needs no restart: the next attempt after the window reconnects. A
/// session that broke (or whose server went away while it sat idle, `idleSessionLooksUsable`)
/// is dropped, never handed out again. Thread-safe.
public final class PGPool: @unchecked Sendable {
    /// How the pool connects and bounds its sessions.
    public struct Config: Sendable {
        /// libpq URI or key=value string.
        public var conninfo: String
        /// Most sessions open at once.
        public var maxConnections: Int
        /// libpq `connect_timeout` (seconds, at least 2 as libpq rounds it).
        public var connectTimeoutSeconds: Int = 2
        /// `statement_timeout` of every session (ms; 0: none).
        public var statementTimeoutMilliseconds: Int = 5_000
        /// `lock_timeout` of every session (ms; 0: none).
        public var lockTimeoutMilliseconds: Int = 2_000
        /// After a failed connect, how long callers fail at once without trying again.
        public var failFastSeconds: Double = 0.25

        /// A configuration with the defaults above.
        public init(conninfo: String, maxConnections: Int) {
            self.conninfo = conninfo
            self.maxConnections = max(1, maxConnections)
        }
    }

    /// What the pool holds now (for metrics).
    public struct Stats: Sendable, Equatable {
        /// Sessions open (idle or in use).
        public var open: Int
        /// Sessions handed out.
        public var inUse: Int
        /// Callers waiting for a session.
        public var waiting: Int
        /// The bound.
        public var max: Int
    }

    /// The configuration.
    public let config: Config
    private let condition = NSCondition()
    private var idle: [PGConnection] = []
    private var open = 0
    private var inUse = 0
    private var waiting = 0
    private var failedUntil = Date.distantPast
    private var lastFailure: PGError?
    private var closed = false

    /// A pool; nothing is opened until the first `withConnection`.
    public init(config: Config) { self.config = config }

    /// Runs `body` with a session, handed back afterwards (dropped if it broke).
    /// - Throws: `PGError` `DB_POOL_TIMEOUT` when none came free before `deadline`;
    ///   `DB_CONNECTION` when the server cannot be reached; whatever `body` throws.
    public func withConnection<T>(deadline: Date, _ body: (PGConnection) throws -> T) throws -> T {
        let connection = try checkout(deadline: deadline)
        let result = Result { try body(connection) }
        var lost = false
        if case .failure(let error as PGError) = result { lost = error.isConnectionLost }
        checkin(connection, broken: lost || !connection.isHealthy || connection.isInTransaction)
        return try result.get()
    }

    /// The counts now.
    public var stats: Stats {
        condition.lock()
        defer { condition.unlock() }
        return Stats(open: open, inUse: inUse, waiting: waiting, max: config.maxConnections)
    }

    /// Closes the idle sessions and refuses new checkouts (sessions in use close when handed back).
    public func close() {
        condition.lock()
        closed = true
        let drop = idle
        idle.removeAll()
        open -= drop.count
        condition.broadcast()
        condition.unlock()
        _ = drop
    }

    // MARK: - Internals

    private func checkout(deadline: Date) throws -> PGConnection {
        condition.lock()
        while true {
            if closed {
                condition.unlock()
                throw PGError(code: .connection, message: "the connection pool is closed")
            }
            while let candidate = idle.popLast() {
                if candidate.idleSessionLooksUsable() {
                    inUse += 1
                    condition.unlock()
                    return candidate
                }
                open -= 1   // dropped: its server went away while it was idle
            }
            if open < config.maxConnections {
                if Date() < failedUntil, let failure = lastFailure {
                    condition.unlock()
                    throw failure
                }
                open += 1
                inUse += 1
                condition.unlock()
                return try connect()
            }
            waiting += 1
            let woke = condition.wait(until: deadline)
            waiting -= 1
            if !woke && idle.isEmpty && open >= config.maxConnections {
                condition.unlock()
                throw PGError(code: Self.timeoutCode,
                              message: "no database session came free in time (\(config.maxConnections) in use)")
            }
        }
    }

    /// `DB_POOL_TIMEOUT`: every session stayed in use until the caller's deadline.
    public static let timeoutCode = PGError.Code(rawValue: "DB_POOL_TIMEOUT")

    private func connect() throws -> PGConnection {
        do {
            let c = try PGConnection.connect(config.conninfo, connectTimeoutSeconds: config.connectTimeoutSeconds)
            if config.statementTimeoutMilliseconds > 0 { try c.setStatementTimeout(milliseconds: config.statementTimeoutMilliseconds) }
            if config.lockTimeoutMilliseconds > 0 { try c.setLockTimeout(milliseconds: config.lockTimeoutMilliseconds) }
            return c
        } catch let error as PGError {
            condition.lock()
            open -= 1
            inUse -= 1
            failedUntil = Date().addingTimeInterval(config.failFastSeconds)
            lastFailure = error
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func checkin(_ connection: PGConnection, broken: Bool) {
        condition.lock()
        inUse -= 1
        if broken || closed {
            open -= 1
        } else {
            idle.append(connection)
        }
        condition.signal()
        condition.unlock()
    }
}
