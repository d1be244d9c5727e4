import Foundation
import PushStore

/// Test support: a login role on a test database holding every privilege on its tables,
/// sequences and functions except INSERT and UPDATE on `push_platforms` (sql/0024), the role an
/// operator forgot to grant: `grantPlatforms()` mends it, `drop()` removes it (roles are
/// cluster-wide). The throwaway server trusts local connections, so no password is needed.
public final class PlatformsRestrictedRole {
    /// The role's name, `pf_role_` + 12 lower-case hex digits.
    public let name: String
    /// The database's conninfo with `user` set to the role (libpq takes a repeated keyword's last value).
    public let conninfo: String
    private let admin: PGConnection

    /// Creates the role on `database` (migrated), through `admin` (a superuser session on it).
    public init(database: PGTestDatabase, admin: PGConnection) throws {
        name = "pf_role_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        self.admin = admin
        conninfo = database.conninfo + " user='\(name)'"
        try admin.exec("CREATE ROLE \(name) LOGIN")
        try admin.exec("GRANT ALL ON ALL TABLES IN SCHEMA public TO \(name)")
        try admin.exec("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO \(name)")
        try admin.exec("GRANT ALL ON ALL FUNCTIONS IN SCHEMA public TO \(name)")
        try admin.exec("REVOKE INSERT, UPDATE ON push_platforms FROM \(name)")
    }

    /// Grants what was missing: INSERT, UPDATE on `push_platforms`.
    public func grantPlatforms() throws {
        try admin.exec("GRANT INSERT, UPDATE ON push_platforms TO \(name)")
    }

    /// Ends the role's sessions, drops its privileges on the database and the role.
    public func drop() throws {
        try admin.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", [.text(name)])
        try admin.exec("DROP OWNED BY \(name)")
        try admin.exec("DROP ROLE IF EXISTS \(name)")
    }
}
