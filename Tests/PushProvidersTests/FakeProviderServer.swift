import Foundation
import XCTest

/// Why a fake provider could not be started.
struct FakeServerError: Error, CustomStringConvertible {
    let description: String
}

/// Throwaway CA, server certificate and signing keys made once per test process by
/// `scripts/fakes/mkcerts.py` (see that file for the list).
enum FakeMaterial {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let python = repoRoot.appendingPathComponent(".venv/bin/python").path
    static let fakesDir = repoRoot.appendingPathComponent("scripts/fakes").path

    /// Removed when the test process exits.
    nonisolated(unsafe) private static var createdDirectory: String?

    private static let made: Result<String, FakeServerError> = {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return .failure(FakeServerError(description:
                "missing \(python): run scripts/setup (creates .venv with h2 and cryptography) before these tests"))
        }
        let dir = NSTemporaryDirectory() + "pushfleet-fakes-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let status = run([python, fakesDir + "/mkcerts.py", dir])
        guard status == 0 else { return .failure(FakeServerError(description: "mkcerts.py failed (\(status))")) }
        createdDirectory = dir
        atexit { if let dir = FakeMaterial.createdDirectory { try? FileManager.default.removeItem(atPath: dir) } }
        return .success(dir)
    }()

    /// Directory holding ca.pem, server.pem/key, apns_key.p8/apns_pub.pem, sa_key.pem/sa_pub.pem.
    static func directory() throws -> String { try made.get() }

    static func file(_ name: String) throws -> String { try directory() + "/" + name }

    static func text(_ name: String) throws -> String { try String(contentsOfFile: file(name), encoding: .utf8) }

    private static func run(_ argv: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}

/// One fake provider (`fake_apns.py` / `fake_fcm.py`) running as a subprocess on 127.0.0.1.
final class FakeProviderServer {
    let port: Int
    let logPath: String
    private let process: Process

    private init(port: Int, logPath: String, process: Process) {
        self.port = port
        self.logPath = logPath
        self.process = process
    }

    deinit { stop() }

    /// `https://127.0.0.1:<port>`.
    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Starts `script` with the shared certificate and `arguments`, waiting (≤ 15 s) for its port.
    static func start(_ script: String, _ arguments: [String]) throws -> FakeProviderServer {
        let dir = try FakeMaterial.directory()
        let tag = "\(script)-\(UInt32.random(in: 0...UInt32.max))"
        let portFile = dir + "/\(tag).port", logPath = dir + "/\(tag).jsonl", errPath = dir + "/\(tag).err"
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())
        _ = FileManager.default.createFile(atPath: errPath, contents: Data())
        let p = Process()
        p.executableURL = URL(fileURLWithPath: FakeMaterial.python)
        p.arguments = [FakeMaterial.fakesDir + "/" + script, "--cert", dir + "/server.pem", "--key", dir + "/server.key",
                       "--port-file", portFile, "--log", logPath] + arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: errPath)
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return FakeProviderServer(port: port, logPath: logPath, process: p)
            }
            if !p.isRunning { break }
            usleep(50_000)
        }
        p.terminate()
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        throw FakeServerError(description: "\(script) did not start: \(err.suffix(800))")
    }

    /// Stops the subprocess (idempotent).
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Log lines of one `kind` (`push`, `connection`, `oauth`) as JSON objects, in order.
    func log(_ kind: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["kind"] as? String == kind }
    }
}
