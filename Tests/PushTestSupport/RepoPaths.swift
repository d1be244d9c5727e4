import Foundation

/// Where the test helpers find the repository's files, from this file's own path
/// (`<repo>/Tests/PushTestSupport/RepoPaths.swift`), so tests run from any working directory.
public enum RepoPaths {
    /// The repository root (the folder holding `Package.swift`).
    public static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `<repo>/sql`: the numbered `*.up.sql` migrations (`Migrator.loadMigrations(directory:)`).
    public static let sqlDirectory: String = root.appendingPathComponent("sql").path

    /// `<repo>/scripts/fakes`: the Python fake providers (`fake_apns.py`, `fake_fcm.py`,
    /// `fake_webpush.py`) and `mkcerts.py`.
    public static let fakesDirectory: String = root.appendingPathComponent("scripts/fakes").path

    /// The Python that runs the fakes (it needs `h2` and `cryptography`), as an argv prefix:
    /// `PUSHFLEET_FAKES_PYTHON` when set (the override), else the repository's `.venv/bin/python`
    /// (made by `scripts/setup`) when it exists, else `python3` from `PATH`.
    public static func fakesPython(
        environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        if let python = environment["PUSHFLEET_FAKES_PYTHON"], !python.isEmpty { return [python] }
        let venv = root.appendingPathComponent(".venv/bin/python").path
        if FileManager.default.isExecutableFile(atPath: venv) { return [venv] }
        return ["/usr/bin/env", "python3"]
    }
}
