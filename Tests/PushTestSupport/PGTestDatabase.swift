import CLibpq
import Foundation
import PushStore

/// Test support (used by the test targets, not by the product): a fresh, uniquely named
/// database on the throwaway server whose URI `scripts/test` exports as
/// `PUSHFLEET_TEST_DATABASE_URL` (started by `scripts/pg`).
///
/// `create()` runs `CREATE DATABASE pf_test_<12 hex>`; `drop()` removes it with
/// `DROP DATABASE … WITH (FORCE)`, ending sessions still open on it. Call `drop()` in the test's
/// tear-down; a database left behind disappears with the throwaway cluster.
public final class PGTestDatabase {
    /// The environment variable holding the base URI.
    public static let environmentVariable = "PUSHFLEET_TEST_DATABASE_URL"

    /// The database name, `pf_test_` + 12 lower-case hex digits.
    public let name: String
    /// Connection string for the new database: the base parameters with `dbname` replaced
    /// (key='value' form, usable wherever libpq conninfo is).
    public let conninfo: String
    private let baseConninfo: String

    private init(name: String, conninfo: String, baseConninfo: String) {
        self.name = name
        self.conninfo = conninfo
        self.baseConninfo = baseConninfo
    }

    /// Creates a fresh empty database.
    /// - Throws: `DB_CONFIG` when `PUSHFLEET_TEST_DATABASE_URL` is missing (tests must fail, not
    ///   skip: run them through `scripts/test`); `PGError` from the server otherwise.
    public static func create(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PGTestDatabase {
        guard let base = environment[environmentVariable], !base.isEmpty else {
            throw PGError(code: .config, message: "\(environmentVariable) is not set: run the tests through scripts/test, "
                          + "which starts a throwaway PostgreSQL with scripts/pg and exports its URI")
        }
        let name = "pf_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let admin = try PGConnection.connect(base)
        try admin.exec("CREATE DATABASE " + Self.quoteIdentifier(name) + " TEMPLATE template0")
        return PGTestDatabase(name: name, conninfo: try replacingDatabase(in: base, with: name), baseConninfo: base)
    }

    /// A new session on this database. - Throws: `DB_CONNECTION`.
    public func connect() throws -> PGConnection {
        try PGConnection.connect(conninfo)
    }

    /// Drops the database, ending any session still on it. Idempotent.
    /// - Throws: `PGError` from the server.
    public func drop() throws {
        let admin = try PGConnection.connect(baseConninfo)
        try admin.exec("DROP DATABASE IF EXISTS " + Self.quoteIdentifier(name) + " WITH (FORCE)")
    }

    /// `conninfo` (URI or key=value) with its database replaced by `database`, as a key=value
    /// string (values single-quoted, `\` and `'` escaped).
    /// - Throws: `DB_CONFIG` when libpq cannot parse `conninfo`.
    public static func replacingDatabase(in conninfo: String, with database: String) throws -> String {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0) } ?? "unparsable conninfo"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PGError(code: .config, message: "cannot parse \(environmentVariable): "
                          + message.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        defer { PQconninfoFree(options) }
        var parts = [String]()
        var i = 0
        while let keyword = options[i].keyword {
            let key = String(cString: keyword)
            if key != "dbname", let value = options[i].val {
                parts.append(key + "=" + quote(String(cString: value)))
            }
            i += 1
        }
        parts.append("dbname=" + quote(database))
        return parts.joined(separator: " ")
    }

    private static func quote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// `name` as a double-quoted SQL identifier.
    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
