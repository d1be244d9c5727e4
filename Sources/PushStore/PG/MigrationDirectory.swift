import Foundation

/// Finds the directory holding the `NNNN_name.up.sql` migration files.
public enum MigrationDirectory {
    /// Environment variable naming the directory explicitly.
    public static let environmentVariable = "PUSHFLEET_SQL_DIR"

    /// The migration directory, by precedence:
    /// 1. `$PUSHFLEET_SQL_DIR` when set and non-empty (returned as given, even if missing, so a
    ///    wrong setting is reported rather than silently bypassed);
    /// 2. `<currentDirectory>/sql` when it holds at least one `.up.sql` file;
    /// 3. the first `sql/` holding an `.up.sql` file found walking up from the executable's
    ///    directory (e.g. `/app/bin/pushfleet` finds `/app/sql`).
    /// Returns nil when none is found. Pure apart from reading the file system.
    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment,
                              currentDirectory: String = FileManager.default.currentDirectoryPath,
                              executablePath: String? = executablePath()) -> String? {
        if let explicit = environment[environmentVariable], !explicit.isEmpty { return explicit }
        let local = (currentDirectory as NSString).appendingPathComponent("sql")
        if holdsMigrations(local) { return local }
        guard let executablePath else { return nil }
        var dir = ((executablePath as NSString).resolvingSymlinksInPath as NSString).deletingLastPathComponent
        while !dir.isEmpty {
            let candidate = (dir as NSString).appendingPathComponent("sql")
            if holdsMigrations(candidate) { return candidate }
            let parent = (dir as NSString).deletingLastPathComponent
            if parent == dir { break }
            dir = parent
        }
        return nil
    }

    /// As `locate`, but throwing.
    /// - Throws: `DB_MIGRATION` saying where it looked when nothing is found, or when
    ///   `$PUSHFLEET_SQL_DIR` names something that is not a directory.
    public static func require(environment: [String: String] = ProcessInfo.processInfo.environment,
                               currentDirectory: String = FileManager.default.currentDirectoryPath,
                               executablePath: String? = executablePath()) throws -> String {
        guard let dir = locate(environment: environment, currentDirectory: currentDirectory,
                               executablePath: executablePath) else {
            throw PGError(code: .migration, message: "no migration directory: set \(environmentVariable), or run from "
                          + "the directory holding sql/, or install sql/ beside the executable's directory")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw PGError(code: .migration, message: "\(environmentVariable) is not a directory: \(dir)")
        }
        return dir
    }

    /// This process's executable (`/proc/self/exe`), or nil when it cannot be read.
    public static func executablePath() -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    private static func holdsMigrations(_ dir: String) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return false }
        return names.contains { $0.hasSuffix(".up.sql") }
    }
}
