import Foundation
import XCTest

/// Why a fake provider could not be started.
struct LiveFakeError: Error, CustomStringConvertible {
    let description: String
}

/// Throwaway CA, server certificate and signing keys made once per test process by
/// `scripts/fakes/mkcerts.py` (ca.pem, server.pem/key, apns_key.p8/apns_pub.pem, sa_key.pem/sa_pub.pem).
enum LiveFakeMaterial {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let fakesDir = repoRoot.appendingPathComponent("scripts/fakes").path
    /// The repo's `.venv` (made by scripts/setup), else `PUSHFLEET_FAKES_PYTHON`, else `python3` from PATH
    /// (it needs h2 and cryptography).
    static let python: [String] = {
        let venv = repoRoot.appendingPathComponent(".venv/bin/python").path
        if FileManager.default.isExecutableFile(atPath: venv) { return [venv] }
        if let p = ProcessInfo.processInfo.environment["PUSHFLEET_FAKES_PYTHON"] { return [p] }
        return ["/usr/bin/env", "python3"]
    }()

    nonisolated(unsafe) private static var createdDirectory: String?

    private static let made: Result<String, LiveFakeError> = {
        let dir = NSTemporaryDirectory() + "pushfleet-live-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python[0])
        p.arguments = Array(python.dropFirst()) + [fakesDir + "/mkcerts.py", dir]
        do { try p.run() } catch { return .failure(LiveFakeError(description: "cannot run \(python): \(error)")) }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return .failure(LiveFakeError(description: "mkcerts.py failed")) }
        createdDirectory = dir
        atexit { if let dir = LiveFakeMaterial.createdDirectory { try? FileManager.default.removeItem(atPath: dir) } }
        return .success(dir)
    }()

    static func directory() throws -> String { try made.get() }
    static func file(_ name: String) throws -> String { try directory() + "/" + name }
    static func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: file(name)))) }
    static func text(_ name: String) throws -> String { try String(contentsOfFile: file(name), encoding: .utf8) }

    /// A service-account JSON file for the fake FCM (client `fcm@pushfleet-test.iam`, project `pushfleet-test`).
    static func serviceAccountJSON(tokenURI: String) throws -> [UInt8] {
        let object: [String: Any] = [
            "type": "service_account", "project_id": LiveFakes.fcmProject, "client_email": LiveFakes.fcmClient,
            "private_key_id": "kid-1", "private_key": try text("sa_key.pem"), "token_uri": tokenURI,
        ]
        return Array(try JSONSerialization.data(withJSONObject: object))
    }
}

/// One fake provider (`fake_apns.py` / `fake_fcm.py`) as a subprocess on 127.0.0.1.
final class LiveFakeServer {
    let port: Int
    let logPath: String
    private let process: Process

    private init(port: Int, logPath: String, process: Process) {
        self.port = port
        self.logPath = logPath
        self.process = process
    }

    deinit { stop() }

    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Starts `script` with the shared certificate, waiting (≤ 15 s) for its port.
    static func start(_ script: String, _ arguments: [String]) throws -> LiveFakeServer {
        let dir = try LiveFakeMaterial.directory()
        let tag = "\(script)-\(UInt32.random(in: 0...UInt32.max))"
        let portFile = dir + "/\(tag).port", logPath = dir + "/\(tag).jsonl", errPath = dir + "/\(tag).err"
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())
        _ = FileManager.default.createFile(atPath: errPath, contents: Data())
        let p = Process()
        p.executableURL = URL(fileURLWithPath: LiveFakeMaterial.python[0])
        p.arguments = Array(LiveFakeMaterial.python.dropFirst()) + [LiveFakeMaterial.fakesDir + "/" + script, "--cert", dir + "/server.pem", "--key", dir + "/server.key",
                       "--port-file", portFile, "--log", logPath] + arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: errPath)
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return LiveFakeServer(port: port, logPath: logPath, process: p)
            }
            if !p.isRunning { break }
            usleep(50_000)
        }
        p.terminate()
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        throw LiveFakeError(description: "\(script) did not start: \(err.suffix(800))")
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Log lines of one `kind` (`push`, `hang`, `connection`, `oauth`), in order.
    func log(_ kind: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["kind"] as? String == kind }
    }
}

/// The three fakes a live test talks to: APNs production, APNs sandbox (same key and topic), FCM.
final class LiveFakes {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"
    static let fcmProject = "pushfleet-test"
    static let fcmClient = "fcm@pushfleet-test.iam.gserviceaccount.com"

    let apns: LiveFakeServer
    let sandbox: LiveFakeServer
    let fcm: LiveFakeServer

    init() throws {
        let apnsArgs = ["--public-key", try LiveFakeMaterial.file("apns_pub.pem"), "--team-id", Self.teamID,
                        "--key-id", Self.keyID, "--topic", Self.topic]
        apns = try LiveFakeServer.start("fake_apns.py", apnsArgs)
        sandbox = try LiveFakeServer.start("fake_apns.py", apnsArgs)
        fcm = try LiveFakeServer.start("fake_fcm.py", ["--sa-public-key", try LiveFakeMaterial.file("sa_pub.pem"),
                                                       "--client-email", Self.fcmClient, "--project-id", Self.fcmProject])
    }

    func stop() {
        apns.stop()
        sandbox.stop()
        fcm.stop()
    }
}
