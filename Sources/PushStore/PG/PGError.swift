/// An error from the PostgreSQL layer, as a value: a stable `code` for programs and metrics, the
/// server's SQLSTATE when it sent one, and a human message.
///
/// `message` is the server's primary message (or libpq's connection message) and never holds row
/// values; `detail` may (a unique violation's detail names the duplicate key), so log `code`,
/// `sqlState`, `message` and `constraint`, never `detail`. This layer is the only reader of
/// `PQerrorMessage` / `PQresultErrorField`; everything above it sees only this type.
public struct PGError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes (`DB_…`), also usable as a bounded metric label.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code text, e.g. `DB_QUERY`.
        public let rawValue: String
        /// Wraps a code text (codes are listed as static members).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code text.
        public var description: String { rawValue }

        /// Connecting failed, or the connection was lost during a call.
        public static let connection = Code(rawValue: "DB_CONNECTION")
        /// The server rejected a statement (see `sqlState`).
        public static let query = Code(rawValue: "DB_QUERY")
        /// A result value could not be read as the asked type (NULL, bad text, no such row or column).
        public static let decode = Code(rawValue: "DB_DECODE")
        /// A parameter could not be sent (a string holding a NUL byte, which PostgreSQL text cannot carry).
        public static let encode = Code(rawValue: "DB_ENCODE")
        /// The layer was misused (a prepared-statement name reused for another SQL text, COPY results).
        public static let usage = Code(rawValue: "DB_USAGE")
        /// A migration could not be read or applied (bad file name, duplicate version, missing directory).
        public static let migration = Code(rawValue: "DB_MIGRATION")
        /// Configuration is missing, e.g. `PUSHFLEET_TEST_DATABASE_URL` for the tests.
        public static let config = Code(rawValue: "DB_CONFIG")
    }

    /// The stable code.
    public var code: Code
    /// Five-character SQLSTATE from the server (`PG_DIAG_SQLSTATE`), e.g. `23505`; nil for local errors.
    public var sqlState: String?
    /// Human message: the server's primary message, or libpq's / this layer's text. No row values.
    public var message: String
    /// The server's DETAIL line; may contain row values (keys, tokens): do not log it.
    public var detail: String?
    /// The constraint named by the server for integrity violations (`PG_DIAG_CONSTRAINT_NAME`).
    public var constraint: String?
    /// The column the server names (`PG_DIAG_COLUMN_NAME`): for the refusals of the SQL functions
    /// (`RAISE ... USING COLUMN`, sql/0006), the request field at fault (`user_ids`, `sound`, ...).
    public var column: String?
    /// True when libpq reported the connection as broken (`CONNECTION_BAD`) after the failing call.
    public var connectionBroken: Bool

    /// Makes an error value; `sqlState` and the rest are optional.
    public init(code: Code, message: String, sqlState: String? = nil, detail: String? = nil,
                constraint: String? = nil, column: String? = nil, connectionBroken: Bool = false) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
        self.column = column
        self.connectionBroken = connectionBroken
    }

    /// `CODE [SQLSTATE]: message` (no detail, see the type's note).
    public var description: String {
        if let s = sqlState { return "\(code.rawValue) [\(s)]: \(message)" }
        return "\(code.rawValue): \(message)"
    }

    // MARK: - Classification

    /// The connection is gone and must be `reset()`: libpq saw it break, SQLSTATE class 08
    /// (connection exception), or 57P01/57P02/57P03 (admin shutdown, crash shutdown, cannot connect now).
    public var isConnectionLost: Bool {
        if connectionBroken || code == .connection { return true }
        guard let s = sqlState else { return false }
        return s.hasPrefix("08") || s == "57P01" || s == "57P02" || s == "57P03"
    }

    /// `23505` unique_violation.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// `40001` serialization_failure (retry the whole transaction).
    public var isSerializationFailure: Bool { sqlState == "40001" }

    /// `25006` read_only_sql_transaction: the server is a standby (e.g. after a failover), so
    /// reconnect to reach the new primary.
    public var isReadOnly: Bool { sqlState == "25006" }

    /// Worth retrying after a pause (and, when `isConnectionLost` or `isReadOnly`, a reconnect):
    /// connection lost, `40001` serialization failure, `40P01` deadlock, `55P03` lock not
    /// available (lock_timeout), `57014` query canceled (statement_timeout), `25006` read only,
    /// `53300` too many connections, `53200` out of memory, `53100` disk full.
    public var isRetryableTransient: Bool {
        if isConnectionLost { return true }
        guard let s = sqlState else { return false }
        return ["40001", "40P01", "55P03", "57014", "25006", "53300", "53200", "53100"].contains(s)
    }
}
