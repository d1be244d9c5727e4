import Foundation

/// `scripts/fakes/fake_webpush.py serve` as a subprocess on 127.0.0.1 (HTTPS, h2), with the
/// `FakeMaterial` server certificate (valid for 127.0.0.1 and localhost). The subscriptions file is
/// read once, at start. Its log holds one JSON object per request received (with its `path`).
public final class FakeWebPushService {
    /// The subscriptions the fake knows, by path.
    public let subscriptions: [String: FakeWebPushSubscription]
    private let process: FakeProcess

    private init(process: FakeProcess, subscriptions: [String: FakeWebPushSubscription]) {
        self.process = process
        self.subscriptions = subscriptions
    }

    /// The listening port.
    public var port: Int { process.port }
    /// The JSONL log file.
    public var logPath: String { process.logPath }
    /// `https://127.0.0.1:<port>`.
    public var origin: String { process.baseURL }

    /// The endpoint URL of `path` (e.g. `/push/ok-1`) on this fake, under `host`.
    public func endpoint(_ path: String, host: String = "127.0.0.1") -> String { "https://\(host):\(port)\(path)" }

    /// Starts the fake with `subscriptions`; its 429 answers ask for `retryAfter` seconds
    /// (`Retry-After`). Waits at most 15 s for its port.
    /// - Throws: `FakeProcessError` (`mkcerts`, `fake_start`), file write errors.
    public static func start(_ subscriptions: [FakeWebPushSubscription], retryAfter: Int = 7) throws -> FakeWebPushService {
        let dir = try FakeMaterial.directory()
        let subsPath = dir + "/webpush-\(UInt32.random(in: 0...UInt32.max)).subs.json"
        let document = ["subscriptions": subscriptions.map(\.json)]
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: subsPath))
        let process = try FakeProcess.start("fake_webpush.py", arguments: [
            "serve", "--subscriptions", subsPath, "--cert", dir + "/server.pem", "--key", dir + "/server.key",
            "--ca", dir + "/ca.pem", "--retry-after", String(retryAfter)])
        let byPath = Dictionary(subscriptions.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        return FakeWebPushService(process: process, subscriptions: byPath)
    }

    /// Stops the subprocess (idempotent).
    public func stop() { process.stop() }

    /// Every request the fake received, in order (one JSON object per log line).
    public func log() -> [[String: Any]] { process.log() }

    /// Requests the fake received for `path`, in order.
    public func log(path: String) -> [[String: Any]] { process.log(where: "path", is: path) }
}
extension FakeWebPushService: StoppableFake {}
