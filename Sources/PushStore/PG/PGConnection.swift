internal import CLibpq
import Glibc
import PushCore

/// One PostgreSQL session (owns a `PGconn*`, closed in `deinit`).
///
/// Every statement with parameters goes through `PQexecParams` / `PQexecPrepared`, in text
/// format but for `PGValue.jsonUTF8` (binary, the batch record's JSON bytes as they are): values
/// are never spliced into SQL (`execScript`, for migrations, takes none). Calls block the calling
/// thread until the server answers (bound them with `setStatementTimeout`); run them on a
/// dedicated thread, not on Swift's cooperative pool.
///
/// **Not thread-safe: one connection per thread.** A connection may move between threads, but
/// only one thread may use it at a time; it is deliberately not `Sendable`.
///
/// The session is set to `DateStyle = ISO, MDY`, `TimeZone = UTC`, `bytea_output = hex` and
/// UTF-8 client encoding, which the result getters rely on; `reset()` restores those, the
/// timeouts set through this type, and the channels `listen`ed to.
public final class PGConnection {
    /// The libpq handle; used only by this type's own extensions, never handed out.
    var handle: OpaquePointer
    /// Prepared statement name -> its SQL, for statements prepared on this session.
    private var preparedSQL: [String: String] = [:]
    /// `set_config` settings made through this type, re-applied by `reset()`.
    private var sessionSettings: [(name: String, value: String)] = []
    /// Channels listened to, re-listened by `reset()`.
    var listenedChannels: Set<String> = []
    /// Depth of nested `transaction` calls (savepoints).
    var savepointDepth = 0
    /// Server round trips made on this session so far: one per `exec`, `execPrepared`,
    /// `execScript` and first-use `PQprepare` (session setup included). `scripts/bench` reads the
    /// per-batch difference from the worker's `batch.record` log line.
    public private(set) var statementCount = 0

    private init(handle: OpaquePointer) { self.handle = handle }

    deinit { PQfinish(handle) }

    /// Opens a session.
    /// - Parameters:
    ///   - conninfo: a libpq URI (`postgresql:///db?host=/sock&port=5432&user=u`) or key=value string.
    ///   - connectTimeoutSeconds: libpq `connect_timeout` unless `conninfo` sets its own (default 10 s).
    /// - Throws: `PGError` `DB_CONNECTION` with libpq's message when the server cannot be reached
    ///   or refuses the session; `DB_ENCODE` if `conninfo` holds a NUL byte.
    public static func connect(_ conninfo: String, connectTimeoutSeconds: Int = 10) throws -> PGConnection {
        try rejectNUL(conninfo, what: "conninfo")
        let keywords = ["connect_timeout", "fallback_application_name", "dbname", "client_encoding"]
        let values = [String(max(connectTimeoutSeconds, 2)), "pushfleet", conninfo, "UTF8"]
        let raw: OpaquePointer? = withCStrings(keywords + [nil]) { k in
            withCStrings(values + [nil]) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let raw else {
            throw PGError(code: .connection, message: "libpq could not allocate a connection", connectionBroken: true)
        }
        guard PQstatus(raw) == CONNECTION_OK else {
            let message = cleanMessage(PQerrorMessage(raw))
            PQfinish(raw)
            throw PGError(code: .connection, message: message, connectionBroken: true)
        }
        let connection = PGConnection(handle: raw)
        try connection.configureSession()
        return connection
    }

    // MARK: - Statements

    /// Runs one statement with `$1…$n` parameters (`PQexecParams`, text format).
    /// - Parameters:
    ///   - sql: exactly one SQL statement.
    ///   - params: values for `$1…$n`; nil is SQL NULL.
    /// - Returns: the result (rows, or an empty result for commands).
    /// - Throws: `PGError`: `DB_QUERY` with `sqlState` when the server rejects it, `DB_CONNECTION`
    ///   (`isConnectionLost`) when the session broke, `DB_ENCODE` for NUL bytes in text.
    @discardableResult
    public func exec(_ sql: String, _ params: [PGValue?] = []) throws -> PGResult {
        try Self.rejectNUL(sql, what: "SQL text")
        let wires = try params.map { try $0?.wire() }
        let types: [UInt32] = params.map { $0?.typeOID ?? 0 }
        statementCount += 1
        let result = Self.withParameters(wires) { values, lengths, formats in
            PQexecParams(handle, sql, Int32(params.count), types, values, lengths, formats, 0)
        }
        return try check(result)
    }

    /// Runs a named prepared statement, preparing it on first use on this session.
    ///
    /// Parameter types are fixed when the statement is prepared: scalars are inferred by the
    /// server from the SQL; an array takes its type from the first call's value, so cast arrays
    /// that may be NULL on that call (`$1::bigint[]`). Prepared statements are dropped by
    /// `reset()` and prepared again on next use.
    /// - Throws: as `exec`; `DB_USAGE` when `name` was already prepared with a different `sql`.
    @discardableResult
    public func execPrepared(name: String, sql: String, params: [PGValue?] = []) throws -> PGResult {
        try Self.rejectNUL(name, what: "statement name")
        try Self.rejectNUL(sql, what: "SQL text")
        let wires = try params.map { try $0?.wire() }
        if let known = preparedSQL[name] {
            guard known == sql else {
                throw PGError(code: .usage, message: "prepared statement \"\(name)\" already holds a different SQL text")
            }
        } else {
            let types: [UInt32] = params.map { $0?.typeOID ?? 0 }
            statementCount += 1
            _ = try check(PQprepare(handle, name, sql, Int32(params.count), types))
            preparedSQL[name] = sql
        }
        statementCount += 1
        let result = Self.withParameters(wires) { values, lengths, formats in
            PQexecPrepared(handle, name, Int32(params.count), values, lengths, formats, 0)
        }
        return try check(result)
    }

    /// Runs a script of several statements through the simple query protocol (`PQexec`), without
    /// parameters. Only for trusted constant SQL: migration files and test fixtures.
    /// - Returns: the last statement's result. - Throws: as `exec`; execution stops at the first error.
    @discardableResult
    public func execScript(_ sql: String) throws -> PGResult {
        try Self.rejectNUL(sql, what: "SQL text")
        statementCount += 1
        return try check(PQexec(handle, sql))
    }

    // MARK: - Session state

    /// True while libpq considers the session usable (`PQstatus == CONNECTION_OK`). No round trip:
    /// a server-side disconnect shows here only after a call failed on it.
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// True inside a transaction block (idle, active or failed).
    public var isInTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// True when the open transaction has failed and only ROLLBACK is accepted.
    var isAborted: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    /// The server process id of this session (`PQbackendPID`), e.g. for `pg_terminate_backend`.
    public var serverProcessID: Int32 { PQbackendPID(handle) }

    /// Closes and reopens the session with the same parameters (`PQreset`), then restores the
    /// session settings, timeouts and LISTENs; prepared statements are forgotten.
    /// - Throws: `DB_CONNECTION` when the server still cannot be reached.
    public func reset() throws {
        PQreset(handle)
        preparedSQL = [:]
        savepointDepth = 0
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PGError(code: .connection, message: Self.cleanMessage(PQerrorMessage(handle)), connectionBroken: true)
        }
        try configureSession()
        for setting in sessionSettings { try applySetting(setting.name, setting.value) }
        for channel in listenedChannels { try exec("LISTEN " + Self.quoteIdentifier(channel)) }
    }

    /// Sets `statement_timeout` for this session (0 disables it); kept across `reset()`.
    /// A statement running longer fails with SQLSTATE `57014`.
    public func setStatementTimeout(milliseconds: Int) throws {
        try rememberSetting("statement_timeout", String(max(0, milliseconds)))
    }

    /// Sets `lock_timeout` for this session (0 disables it); kept across `reset()`.
    /// A lock wait longer fails with SQLSTATE `55P03`.
    public func setLockTimeout(milliseconds: Int) throws {
        try rememberSetting("lock_timeout", String(max(0, milliseconds)))
    }

    // MARK: - Internals

    private func configureSession() throws {
        try execScript("SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET bytea_output = 'hex'")
    }

    private func rememberSetting(_ name: String, _ value: String) throws {
        try applySetting(name, value)
        sessionSettings.removeAll { $0.name == name }
        sessionSettings.append((name, value))
    }

    private func applySetting(_ name: String, _ value: String) throws {
        try exec("SELECT set_config($1, $2, false)", [.text(name), .text(value)])
    }

    /// Turns a libpq result into a `PGResult` or a thrown `PGError` (freeing it in that case).
    private func check(_ result: OpaquePointer?) throws -> PGResult {
        guard let result else {
            throw PGError(code: .connection, message: Self.cleanMessage(PQerrorMessage(handle)),
                          connectionBroken: PQstatus(handle) != CONNECTION_OK)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            return PGResult(owning: result)
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            PQclear(result)
            throw PGError(code: .usage, message: "COPY is not supported by PGConnection")
        default:
            let error = makeError(result)
            PQclear(result)
            throw error
        }
    }

    private func makeError(_ result: OpaquePointer) -> PGError {
        func field(_ code: Character) -> String? {
            guard let ascii = code.asciiValue, let p = PQresultErrorField(result, Int32(ascii)) else { return nil }
            return String(cString: p)
        }
        let broken = PQstatus(handle) != CONNECTION_OK
        let sqlState = field("C")
        let message = field("M") ?? Self.cleanMessage(PQresultErrorMessage(result) ?? PQerrorMessage(handle))
        return PGError(code: broken && sqlState == nil ? .connection : .query, message: message,
                       sqlState: sqlState, detail: field("D"), constraint: field("n"), column: field("c"),
                       connectionBroken: broken)
    }

    static func cleanMessage(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "unknown libpq error" }
        let text = String(cString: p).split(whereSeparator: { $0 == "\n" || $0 == "\t" })
            .map { $0.trimmingSpaces() }.filter { !$0.isEmpty }.joined(separator: " ")
        return text.isEmpty ? "unknown libpq error" : text
    }

    static func rejectNUL(_ s: String, what: String) throws {
        if s.containsUTF8Byte(0) { throw PGError(code: .encode, message: "\(what) contains a NUL byte") }
    }

    /// `"name"` with embedded quotes doubled: a safe SQL identifier for any text.
    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingAll("\"", with: "\"\"") + "\""
    }

    /// Calls `body` with libpq's `paramValues`, `paramLengths` and `paramFormats` for `wires`, all
    /// valid only during the call: text values as NUL-terminated pointers (`withCStrings`), binary
    /// ones (`PGValue.jsonUTF8`) as pointers to their own bytes with their lengths and format 1.
    /// Lengths and formats are nil (all text) when no value is binary, as libpq allows.
    static func withParameters<R>(_ wires: [PGWireValue?],
                                  _ body: ([UnsafePointer<CChar>?], [Int32]?, [Int32]?) -> R) -> R {
        var binary: [Int: [UInt8]] = [:]
        var texts: [String?] = []
        texts.reserveCapacity(wires.count)
        for (i, w) in wires.enumerated() {
            switch w {
            case .text(let s): texts.append(s)
            case .binary(let b): texts.append(nil); binary[i] = b
            case nil: texts.append(nil)
            }
        }
        guard !binary.isEmpty else { return withCStrings(texts) { body($0, nil, nil) } }
        let lengths = wires.indices.map { Int32(clamping: binary[$0]?.count ?? 0) }
        let formats = wires.indices.map { binary[$0] == nil ? Int32(0) : 1 }
        return withCStrings(texts) { pointers in
            var values = pointers
            func next(_ k: Dictionary<Int, [UInt8]>.Index) -> R {
                guard k != binary.endIndex else { return body(values, lengths, formats) }
                let (i, bytes) = binary[k]
                return bytes.withUnsafeBufferPointer { p in
                    // Never empty (`PGValue.wire()` sends no bytes as text), so the base address exists.
                    values[i] = UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self)
                    return next(binary.index(after: k))
                }
            }
            return next(binary.startIndex)
        }
    }

    /// Calls `body` with a C array of NUL-terminated pointers to `strings` (nil stays NULL), valid
    /// only during the call. Each pointer comes from `String.withCString`, nested one call per
    /// string, which for a native string is its own storage (kept NUL-terminated), not a copy: a
    /// `push_record` parameter is the whole batch as one JSON text (about 0.5 MB for 500 encrypted
    /// deliveries), which a `strdup` per parameter held twice at the batch's peak (massif,
    /// docs/bench.md "Paired full runs").
    static func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(strings.count)
        func next(_ i: Int) -> R {
            guard i < strings.count else { return body(pointers) }
            guard let s = strings[i] else {
                pointers.append(nil)
                return next(i + 1)
            }
            return s.withCString { p in
                pointers.append(p)
                return next(i + 1)
            }
        }
        return next(0)
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for ch in self { if ch == target { out += replacement } else { out.append(ch) } }
        return out
    }
}
