import Foundation

/// Runs the built `pushfleet` binary (next to the test bundle, which holds every test target on
/// Linux): the CLI tests of PushWorkerTests and PushStoreTests.
public enum LiveWebPushCLI {
    public static var executable: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        return bundle.appendingPathComponent("pushfleet").path
    }

    /// Exit status and combined output (stdout and stderr) of one run.
    public static func run(_ exe: String, _ arguments: [String], environment: [String: String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = arguments
        p.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
