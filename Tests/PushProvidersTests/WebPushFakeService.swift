import Foundation
import PushCore
import PushCrypto
import PushProviders
import XCTest

/// One browser subscription known to the fake: its path on the fake and the user agent's keys
/// (the private key lets the fake decrypt what we send).
struct FakeWebPushSubscription {
    let path: String
    let privateKey: [UInt8]
    let p256dh: [UInt8]
    let auth: [UInt8]
    /// The only VAPID key the fake accepts for this subscription (nil = any).
    let vapidPublicKey: String?

    /// A fresh subscription for `path`.
    static func make(_ path: String, vapidPublicKey: String? = nil) throws -> FakeWebPushSubscription {
        let privateKey = try WebPushDecryption.generatePrivateKey()
        return FakeWebPushSubscription(path: path, privateKey: privateKey,
                                       p256dh: try WebPushDecryption.publicKey(privateKey: privateKey),
                                       auth: (0..<16).map { _ in UInt8.random(in: 0...255) },
                                       vapidPublicKey: vapidPublicKey)
    }

    var json: [String: String] {
        var entry = ["path": path, "p256dh": Base64URL.encode(p256dh), "auth": Base64URL.encode(auth),
                     "private_key": Base64URL.encode(privateKey)]
        if let vapidPublicKey { entry["vapid_public_key"] = vapidPublicKey }
        return entry
    }
}

/// `scripts/fakes/fake_webpush.py serve` as a subprocess on 127.0.0.1 (HTTPS, h2), with the shared
/// test CA's server certificate (valid for 127.0.0.1 and localhost).
final class FakeWebPushService {
    let port: Int
    let logPath: String
    let subscriptions: [String: FakeWebPushSubscription]
    private let process: Process

    private init(port: Int, logPath: String, subscriptions: [String: FakeWebPushSubscription], process: Process) {
        self.port = port
        self.logPath = logPath
        self.subscriptions = subscriptions
        self.process = process
    }

    deinit { stop() }

    /// `https://127.0.0.1:<port>`.
    var origin: String { "https://127.0.0.1:\(port)" }

    /// The endpoint URL of `path` (e.g. `/push/ok-1`) on this fake.
    func endpoint(_ path: String, host: String = "127.0.0.1") -> String { "https://\(host):\(port)\(path)" }

    /// Starts the fake with `subscriptions`, waiting (≤ 15 s) for its port.
    static func start(_ subscriptions: [FakeWebPushSubscription], retryAfter: Int = 7) throws -> FakeWebPushService {
        let dir = try FakeMaterial.directory()
        let tag = "webpush-\(UInt32.random(in: 0...UInt32.max))"
        let subsPath = dir + "/\(tag).subs.json", portFile = dir + "/\(tag).port"
        let logPath = dir + "/\(tag).jsonl", errPath = dir + "/\(tag).err"
        let document = ["subscriptions": subscriptions.map(\.json)]
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: subsPath))
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())
        _ = FileManager.default.createFile(atPath: errPath, contents: Data())
        let p = Process()
        p.executableURL = URL(fileURLWithPath: FakeMaterial.python)
        p.arguments = [FakeMaterial.fakesDir + "/fake_webpush.py", "serve", "--subscriptions", subsPath, "--log", logPath,
                       "--cert", dir + "/server.pem", "--key", dir + "/server.key", "--ca", dir + "/ca.pem",
                       "--port-file", portFile, "--retry-after", String(retryAfter)]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: errPath)
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        let byPath = Dictionary(subscriptions.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return FakeWebPushService(port: port, logPath: logPath, subscriptions: byPath, process: p)
            }
            if !p.isRunning { break }
            usleep(50_000)
        }
        p.terminate()
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        throw FakeServerError(description: "fake_webpush.py did not start: \(err.suffix(800))")
    }

    /// Stops the subprocess (idempotent).
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Every request the fake received, in order (one JSON object per line of its log).
    func log() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Log entries for `path`.
    func log(path: String) -> [[String: Any]] { log().filter { $0["path"] as? String == path } }
}

/// A resolver that answers from a table and counts its lookups; unknown names do not resolve.
final class StubWebPushResolver: WebPushResolver, @unchecked Sendable {
    private let table: [String: [String]]
    private let lock = NSLock()
    private var seen: [String] = []

    init(_ table: [String: [String]]) { self.table = table }

    /// Hosts looked up so far, in order.
    var lookups: [String] { lock.lock(); defer { lock.unlock() }; return seen }

    func addresses(host: String, port: Int) throws -> [String] {
        lock.lock()
        seen.append(host)
        lock.unlock()
        guard let addresses = table[host] else { throw WebPushResolveError.failed(host: host, "no such name (stub)") }
        return addresses
    }
}

/// Clients and pushes for the Web Push tests.
enum WebPushTestSupport {
    static let subject = "mailto:ops@example.com"

    /// A client trusting the fakes' CA.
    static func client(keys: VAPIDKeys, allowLoopback: Bool = true, clock: ProviderClock = SystemProviderClock(),
                       resolver: WebPushResolver = SystemWebPushResolver(),
                       tokenCache: ProviderTokenCache = InMemoryProviderTokenCache()) throws -> WebPushClient {
        var config = WebPushClient.Configuration(subject: subject)
        config.allowLoopback = allowLoopback
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        return try WebPushClient.make(keys: keys, configuration: config, tokenCache: tokenCache, clock: clock,
                                      resolver: resolver)
    }

    /// A push of `plaintext` to `endpoint`, encrypted for `subscription` (RFC 8291) as the worker does.
    static func push(_ endpoint: String, to subscription: FakeWebPushSubscription, plaintext: String = #"{"title":"hi"}"#,
                     ttl: Int64 = 3600, priority: Priority = .high, collapseKey: String? = nil,
                     id: Int64 = 1) throws -> ProviderRequest {
        let body = try WebPushEncryption.encrypt(plaintext: Array(plaintext.utf8), p256dh: subscription.p256dh,
                                                 auth: subscription.auth)
        return ProviderRequest(deliveryId: id, deviceToken: endpoint, payload: body, priority: priority,
                               collapseId: collapseKey, apnsId: UUID().uuidString.lowercased(), ttlSeconds: ttl)
    }
}
