import Foundation

/// One Python fake (`scripts/fakes/<script>`) running as a subprocess on 127.0.0.1: started with
/// `--port-file` and `--log` appended to the caller's arguments, ready once it wrote its port.
/// Its stdout is discarded, its stderr kept for the start error; its log is JSON lines (JSONL),
/// one object per request or event. Stopped (SIGTERM, then waited for) on `stop()` or `deinit`.
public final class FakeProcess {
    /// The script's file name (e.g. `fake_apns.py`).
    public let script: String
    /// The TCP port the fake listens on (127.0.0.1).
    public let port: Int
    /// The fake's JSONL log file.
    public let logPath: String
    private let process: Process

    private init(script: String, port: Int, logPath: String, process: Process) {
        self.script = script
        self.port = port
        self.logPath = logPath
        self.process = process
    }

    deinit { stop() }

    /// Starts `scripts/fakes/<script>` with `arguments` + `--port-file F --log L` (files made in
    /// `directory`, default the `FakeMaterial` folder), waiting at most `timeout` seconds for its port.
    /// - Throws: `FakeProcessError` `fake_start` with the tail of its stderr when it exits or stays
    ///   silent; errors of `Process.run`; `FakeMaterial` errors.
    public static func start(_ script: String, arguments: [String], directory: String? = nil,
                             timeout: TimeInterval = 15) throws -> FakeProcess {
        let dir = try directory ?? FakeMaterial.directory()
        let tag = "\(script)-\(UInt32.random(in: 0...UInt32.max))"
        let portFile = dir + "/\(tag).port", logPath = dir + "/\(tag).jsonl", errPath = dir + "/\(tag).err"
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())
        _ = FileManager.default.createFile(atPath: errPath, contents: Data())
        let python = RepoPaths.fakesPython()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python[0])
        p.arguments = Array(python.dropFirst()) + [RepoPaths.fakesDirectory + "/" + script] + arguments
            + ["--port-file", portFile, "--log", logPath]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: errPath)
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return FakeProcess(script: script, port: port, logPath: logPath, process: p)
            }
            if !p.isRunning { break }
            usleep(50_000)
        }
        p.terminate()
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        throw FakeProcessError(code: "fake_start", "\(script) did not start: \(err.suffix(800))")
    }

    /// `https://127.0.0.1:<port>`.
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Stops the subprocess and waits for it (idempotent).
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Every log line so far that parses as a JSON object, in order.
    public func log() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Log lines whose string field `field` equals `value` (e.g. `kind` = `push`, `path` = `/push/ok-1`).
    public func log(where field: String, is value: String) -> [[String: Any]] {
        log().filter { $0[field] as? String == value }
    }
}
