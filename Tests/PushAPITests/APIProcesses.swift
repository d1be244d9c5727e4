import Foundation
import XCTest

/// The `pushfleet` executable the tests were built with, run as the fleet runs it: `pushfleet api`
/// started on ports the kernel picks (its log kept in a file), and one-shot commands
/// (`pushfleet worker --until-drained`, `pushfleet notifications show`) with their output.
enum APIProcesses {
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent().appendingPathComponent("pushfleet").path
    }

    /// A running `pushfleet api`, its API and management ports, and the file its log goes to.
    struct Server {
        var process: Process
        var port: UInt16
        var managementPort: UInt16
        var logPath: String

        /// What the server logged so far.
        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// SIGTERM, then waits for the exit (at most 15 s); removes nothing.
        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            let deadline = Date().addingTimeInterval(15)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        }
    }

    /// Starts `pushfleet api --addr 127.0.0.1:0 --management-addr 127.0.0.1:0` on `databaseURL`
    /// with `environment` added. - Throws: when it has not logged `api.start` within 15 s.
    static func startAPI(databaseURL: String, environment: [String: String] = [:]) throws -> Server {
        let log = NSTemporaryDirectory() + "pushfleet-api-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = ["api", "--addr", "127.0.0.1:0", "--management-addr", "127.0.0.1:0"]
        p.environment = ["DATABASE_URL": databaseURL, "PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: log)
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains("\"event\":\"api.start\"") {
                let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return Server(process: p, port: UInt16(try XCTUnwrap(o["port"] as? Int)),
                              managementPort: UInt16(try XCTUnwrap(o["management_port"] as? Int)), logPath: log)
            }
            if !p.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        p.terminate()
        throw RawHTTP.Failure(description: "pushfleet api did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Runs `pushfleet ARGUMENTS` to its end: its exit status (-1 when it had to be stopped after
    /// `timeout` seconds), standard output and standard error.
    static func run(_ arguments: [String], environment: [String: String],
                    timeout: Double = 120) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        let out = NSTemporaryDirectory() + "pushfleet-run-\(UUID().uuidString.prefix(8))"
        _ = FileManager.default.createFile(atPath: out + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: out + ".err", contents: nil)
        defer { for s in [".out", ".err"] { try? FileManager.default.removeItem(atPath: out + s) } }
        p.standardOutput = FileHandle(forWritingAtPath: out + ".out")
        p.standardError = FileHandle(forWritingAtPath: out + ".err")
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let timedOut = p.isRunning
        if timedOut { p.terminate(); p.waitUntilExit() }
        let read = { (s: String) in (try? String(contentsOfFile: out + s, encoding: .utf8)) ?? "" }
        return (timedOut ? -1 : p.terminationStatus, read(".out"), read(".err") + (timedOut ? "\n(killed after \(timeout) s)" : ""))
    }
}
