import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore
@testable import PushWorker

/// One browser subscription the fake Web Push service knows: its path and the user agent's keys
/// (the private key lets the fake decrypt what the worker sends, RFC 8291).
struct LiveWebSubscription {
    let path: String
    let privateKey: [UInt8]
    let p256dh: [UInt8]
    let auth: [UInt8]
    /// The only VAPID public key (base64url) the fake accepts for this subscription; nil = any.
    let vapidPublicKey: String?

    /// A fresh subscription at `/push/<scenario>-<random>`; the scenario picks the fake's answer.
    static func make(scenario: String, vapidPublicKey: String? = nil) throws -> LiveWebSubscription {
        let privateKey = try WebPushDecryption.generatePrivateKey()
        let path = "/push/\(scenario)-\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        return LiveWebSubscription(path: path, privateKey: privateKey, p256dh: try WebPushDecryption.publicKey(privateKey: privateKey),
                                   auth: (0..<16).map { _ in UInt8.random(in: 0...255) }, vapidPublicKey: vapidPublicKey)
    }

    var json: [String: String] {
        var entry = ["path": path, "p256dh": Base64URL.encode(p256dh), "auth": Base64URL.encode(auth),
                     "private_key": Base64URL.encode(privateKey)]
        if let vapidPublicKey { entry["vapid_public_key"] = vapidPublicKey }
        return entry
    }
}

/// `scripts/fakes/fake_webpush.py serve` on 127.0.0.1 (HTTPS, h2) with the live tests' CA, and a
/// pool of subscriptions per scenario (the subscriptions file is read once, at start): each test
/// takes fresh ones, so its log lines are its own.
final class LiveWebPushFake {
    /// Scenarios with a pool, and how many subscriptions each holds.
    static let scenarios = ["ok", "gone", "notfound", "toolarge", "slow", "err", "flaky", "redirect"]
    static let poolSize = 24
    /// Seconds the fake's 429 asks to wait (`Retry-After`).
    static let retryAfter = 7

    let port: Int
    let logPath: String
    /// The VAPID key some `ok` subscriptions were made with (the fake refuses any other key for them).
    let pinnedVAPID: VAPIDKeys
    private let process: Process
    private let lock = NSLock()
    private var pool: [String: [LiveWebSubscription]]

    private init(port: Int, logPath: String, pinnedVAPID: VAPIDKeys, pool: [String: [LiveWebSubscription]], process: Process) {
        self.port = port
        self.logPath = logPath
        self.pinnedVAPID = pinnedVAPID
        self.pool = pool
        self.process = process
    }

    deinit { stop() }

    /// Starts the fake, waiting (≤ 15 s) for its port.
    static func start() throws -> LiveWebPushFake {
        let dir = try LiveFakeMaterial.directory()
        let pinned = try VAPIDKeys.generate()
        var pool: [String: [LiveWebSubscription]] = [:]
        for scenario in scenarios {
            pool[scenario] = try (0..<poolSize).map { _ in try LiveWebSubscription.make(scenario: scenario) }
        }
        pool["pinned"] = try (0..<poolSize).map { _ in
            try LiveWebSubscription.make(scenario: "ok", vapidPublicKey: pinned.publicKeyBase64URL)
        }
        let tag = "webpush-\(UInt32.random(in: 0...UInt32.max))"
        let subsPath = dir + "/\(tag).subs.json", portFile = dir + "/\(tag).port"
        let logPath = dir + "/\(tag).jsonl", errPath = dir + "/\(tag).err"
        let document = ["subscriptions": pool.values.flatMap { $0 }.map(\.json)]
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: subsPath))
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())
        _ = FileManager.default.createFile(atPath: errPath, contents: Data())
        let p = Process()
        p.executableURL = URL(fileURLWithPath: LiveFakeMaterial.python[0])
        p.arguments = Array(LiveFakeMaterial.python.dropFirst()) + [
            LiveFakeMaterial.fakesDir + "/fake_webpush.py", "serve", "--subscriptions", subsPath, "--log", logPath,
            "--cert", dir + "/server.pem", "--key", dir + "/server.key", "--ca", dir + "/ca.pem",
            "--port-file", portFile, "--retry-after", String(retryAfter)]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: errPath)
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return LiveWebPushFake(port: port, logPath: logPath, pinnedVAPID: pinned, pool: pool, process: p)
            }
            if !p.isRunning { break }
            usleep(50_000)
        }
        p.terminate()
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        throw LiveFakeError(description: "fake_webpush.py did not start: \(err.suffix(800))")
    }

    /// Stops the subprocess (idempotent).
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// An unused subscription of `scenario` (`ok`, `gone`, ..., or `pinned`: an `ok` one bound to `pinnedVAPID`).
    func take(_ scenario: String) throws -> LiveWebSubscription {
        try lock.withLock {
            guard var list = pool[scenario], !list.isEmpty else {
                throw LiveFakeError(description: "no unused \(scenario) subscription left (raise poolSize)")
            }
            let s = list.removeLast()
            pool[scenario] = list
            return s
        }
    }

    /// The endpoint URL of `path` on this fake, under `host`.
    func endpoint(_ path: String, host: String = "127.0.0.1") -> String { "https://\(host):\(port)\(path)" }

    /// Requests the fake received for `path`, in order (one object per log line).
    func log(path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["path"] as? String == path }
    }
}

/// A resolver with a fixed table, counting lookups (the send-time guard's DNS, R-DEV-1).
final class LiveStubResolver: WebPushResolver, @unchecked Sendable {
    private let table: [String: [String]]
    private let lock = NSLock()
    private var seen: [String] = []

    init(_ table: [String: [String]]) { self.table = table }

    /// Hosts looked up so far.
    var lookups: [String] { lock.withLock { seen } }

    func addresses(host: String, port: Int) throws -> [String] {
        lock.withLock { seen.append(host) }
        guard let addresses = table[host] else { throw WebPushResolveError.failed(host: host, "no such name (stub)") }
        return addresses
    }
}

/// Base for the live Web Push tests: a fresh database per test with one app, fresh credential keys,
/// the class's fake Web Push service, and a worker whose `LiveRouter` builds Web Push clients with
/// `LiveRouter.webPushFactory` and trusts the fakes' CA.
class LiveWebPushTestCase: XCTestCase {
    nonisolated(unsafe) static var sharedFake: Result<LiveWebPushFake, Error>?
    static let subject = "mailto:ops@example.com"

    var database: PGTestDatabase!
    var conn: PGConnection!
    var appID: UUID!
    var keys: CredentialKeys!
    var router: LiveRouter!
    var worker: Worker!
    var fake: LiveWebPushFake!
    /// The VAPID keys `setVAPID()` stores by default (not the fake's pinned key).
    var vapid: VAPIDKeys!

    override class func tearDown() {
        if case .success(let f)? = sharedFake { f.stop() }
        sharedFake = nil
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        if Self.sharedFake == nil { Self.sharedFake = Result { try LiveWebPushFake.start() } }
        fake = try Self.sharedFake!.get()
        database = try PGTestDatabase.create()
        conn = try database.connect()
        let sql = LiveFakeMaterial.repoRoot.appendingPathComponent("sql").path
        _ = try Migrator(connection: conn, migrations: try Migrator.loadMigrations(directory: sql)).migrate()
        appID = try AppStore(connection: conn).appCreate(name: "web-\(UInt32.random(in: 0...UInt32.max))").id
        keys = try CredentialKeys(current: SecretBox.generateKey())
        vapid = try VAPIDKeys.generate()
        try makeWorker()
    }

    override func tearDownWithError() throws {
        worker = nil
        router = nil
        conn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// (Re)builds the router and worker. `allowLoopback` = the router's Web Push loopback switch.
    func makeWorker(allowLoopback: Bool = true, resolver: WebPushResolver = SystemWebPushResolver(),
                    retryPolicy: RetryPolicy = .default) throws {
        var rc = LiveRouter.Configuration(caFile: try LiveFakeMaterial.file("ca.pem"))
        rc.webPush = LiveRouter.webPushFactory(allowLoopback: allowLoopback, resolver: resolver)
        let url = database.conninfo
        router = LiveRouter(keys: keys, configuration: rc,
                            apnsTokenCache: PGProviderTokenCache { try PGConnection.connect(url) },
                            openConnection: { try PGConnection.connect(url) })
        var config = WorkerConfig(owner: "web-live-test", claimLimit: 4, batchSize: 500)
        config.retryPolicy = retryPolicy
        worker = try Worker(config: config, databaseURL: url, router: router, log: Log(level: .error))
    }

    // MARK: - Credentials

    /// Stores a VAPID set (`subject`, the PEM of `keys`) as the app's `webpush` credentials.
    @discardableResult
    func setVAPID(_ keys: VAPIDKeys? = nil, subject: String = LiveWebPushTestCase.subject) throws -> CredentialSummary {
        try CredentialStore(connection: conn, keys: self.keys).set(
            appID: appID, kind: .webpush, config: ["subject": subject], secret: Array(try (keys ?? vapid).privateKeyPEM().utf8))
    }

    func credential(_ kind: CredentialKind) throws -> CredentialSummary? {
        try CredentialStore(connection: conn, keys: nil).states(appID: appID).first { $0.kind == kind }
    }

    // MARK: - Devices and notifications

    /// Registers a web device for `user` through `DeviceRegistry` (registration admits loopback
    /// endpoints, as tests against a local fake must).
    func webDevice(_ s: LiveWebSubscription, user: String = "u1", mode: String = "live",
                   host: String = "127.0.0.1") throws -> UUID {
        try webDevice(endpoint: fake.endpoint(s.path, host: host), p256dh: s.p256dh, auth: s.auth, user: user, mode: mode)
    }

    func webDevice(endpoint: String, p256dh: [UInt8], auth: [UInt8], user: String = "u1", mode: String = "live") throws -> UUID {
        let reg = try DeviceRegistration.validate(
            mode: mode, platform: "web", token: nil, userID: user, apnsEnvironment: nil, encryptionPublicKey: .none,
            subscriptionEndpoint: endpoint, subscriptionP256dh: Base64URL.encode(p256dh),
            subscriptionAuth: Base64URL.encode(auth), allowLoopbackEndpoints: true)
        return try DeviceRegistry(connection: conn).register(appID: appID, reg).deviceID
    }

    /// Enqueues a notification with every R-ENC-3 field (its plaintext is `Self.plaintext`).
    func send(users: [String] = ["u1"], mode: String = "live", collapseKey: String? = nil,
              priority: String? = nil) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: mode, userIDs: users)
        q.title = "Hello"
        q.body = "World"
        q.data = #"{"order":42,"url":"/o/42","é":"ü"}"#
        q.badge = 3
        q.sound = "ping"
        q.threadID = "t-1"
        q.collapseKey = collapseKey
        q.priority = priority
        return try NotificationStore(connection: conn).enqueue(q).id
    }

    /// Enqueues a live notification whose only content is `title` (plaintext `{"title":"<title>"}`).
    func send(title: String, users: [String] = ["u1"]) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: "live", userIDs: users)
        q.title = title
        return try NotificationStore(connection: conn).enqueue(q).id
    }

    /// R-ENC-3: the sealed plaintext of `send()`'s content, byte for byte (keys in rule order, `data`
    /// in the client's order, raw UTF-8, `/` unescaped).
    static let plaintext = #"{"title":"Hello","body":"World","data":{"order":42,"url":"/o/42","é":"ü"},"badge":3,"sound":"ping","thread_id":"t-1"}"#

    /// Runs the worker until no job is due (at most `rounds` claims).
    func drain(rounds: Int = 20) throws {
        for _ in 0..<rounds where try worker.runOnce(connection: conn) > 0 {}
    }

    /// Makes every pending retry due now (the tests' clock moves instead of sleeping).
    func dueNow() throws {
        _ = try conn.exec("UPDATE push_deliveries SET next_attempt_at = now() WHERE status = 'retrying'")
        _ = try conn.exec("UPDATE push_jobs SET run_at = now() WHERE state = 'available'")
    }

    func report(_ id: UUID) throws -> NotificationReport {
        try XCTUnwrap(try NotificationStore(connection: conn).report(id: id))
    }

    func delivery(_ n: UUID, _ device: UUID) throws -> NotificationReport.Delivery {
        try XCTUnwrap(try report(n).deliveries.first { $0.deviceID == device }, "no delivery for the device")
    }

    /// Ledger kinds of one delivery, sorted (`charge`, `refund`).
    func ledger(_ n: UUID, _ device: UUID) throws -> [String] {
        try report(n).ledger.filter { $0.deviceID == device }.map(\.kind).sorted()
    }

    func failures(_ device: UUID) throws -> Int {
        try conn.exec("SELECT failures FROM push_deliveries WHERE device_id = $1::uuid", [.uuid(device)]).int(0, "failures")
    }

    func deviceState(_ id: UUID) throws -> (active: Bool, reason: String?) {
        let r = try conn.exec("SELECT active, deactivation_reason FROM push_devices WHERE id = $1::uuid", [.uuid(id)])
        return (try r.bool(0, "active"), try r.decode(0, "deactivation_reason"))
    }

    /// Payloads of this app's events of `type`, oldest first.
    func events(_ type: String) throws -> [[String: Any]] {
        let r = try conn.exec("SELECT payload::text AS p FROM push_events WHERE app_id = $1::uuid AND type = $2::text ORDER BY id",
                              [.uuid(appID), .text(type)])
        return try r.rows.map { (try JSONSerialization.jsonObject(with: Data(try r.string($0, "p").utf8)) as? [String: Any]) ?? [:] }
    }
}
