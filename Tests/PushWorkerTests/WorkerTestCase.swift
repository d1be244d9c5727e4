import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore
@testable import PushWorker
import XCTest
import PushTestSupport

/// Answers like the built-in simulator (R-MODE-2) and records every push it was handed, so tests
/// can look at apns-ids, envelope kids and attempt numbers. `onSend` runs once per `send` call,
/// before the answers are computed (tests use it to change the database "during" a send).
final class RecordingRouter: ProviderRouter, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [OutboundPush] = []
    var onSend: (([OutboundPush]) -> Void)?

    func credentialStates(appID: UUID) throws -> CredentialStates {
        CredentialStates(unusable: ProviderTable.standard.platforms, verified: [])
    }

    func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)] {
        lock.withLock { recorded += pushes }
        onSend?(pushes)
        return pushes.map { SimulatorOnlyRouter.simulate($0) }
    }

    /// Every push handed over so far, in order.
    var pushes: [OutboundPush] { lock.withLock { recorded } }
}

extension QueueStore {
    /// The send-time step of one claimed notification job, which must start.
    func startOne(_ job: ClaimedJob, batchSize: Int) throws -> NotificationStart {
        guard case .started(let s)? = try notificationStart([job.lease], batchSize: batchSize)[job.id] else {
            throw PushError(.notFound, "job \(job.id) did not start")
        }
        return s
    }
}

/// A value shared between a test and the threads it starts, guarded by a lock.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    func update(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}

/// The queue still had open jobs when `drain` gave up.
struct DrainTimeout: Error, CustomStringConvertible {
    var seconds: TimeInterval
    /// What was waited for (default: the queue to drain).
    var what = "queue drained"
    var description: String { "\(what): not within \(seconds) s" }
}

/// Which store a worker test runs on.
enum Backend {
    /// `InMemoryQueue`: no database.
    case memory
    /// A fresh migrated PostgreSQL database per test.
    case postgres
}

/// Base for the worker's tests: a fresh world per test (the in-memory store unless the class
/// says `.postgres`), the real worker (`Worker.runOnce`) with the test-mode simulator, and helpers
/// that go through the world's own entry points (the registry's validation, enqueue).
class WorkerTestCase: XCTestCase {
    /// The store this class's tests run on.
    class var backend: Backend { .memory }
    var world: TestWorld!
    /// The session the worker runs on in `drain` and `runOnce`.
    var workerSession: QueueStore!
    /// Fast retries so tests finish quickly (R-SEND-12): 3 failed attempts, 10 ms base.
    static let fastRetry = RetryPolicy(baseDelay: 0.01, maxDelay: 0.05, maxFailedAttempts: 3, minimumRetryAfter: 0.01)
    static let quietLog = Log(level: .error)

    override func setUpWithError() throws {
        try super.setUpWithError()
        world = Self.backend == .memory ? MemoryWorld() : try PGWorld()
        workerSession = try world.session()
    }

    override func tearDownWithError() throws {
        workerSession = nil
        try (world as? PGWorld)?.drop()
        world = nil
        try super.tearDownWithError()
    }

    /// The in-memory queue (nil on PostgreSQL).
    var memory: InMemoryQueue? { (world as? MemoryWorld)?.queue }

    // MARK: - Worker

    /// A worker with fast settings on this test's world, counting into `metrics`, logging to `log`;
    /// `configure` adjusts the config.
    func makeWorker(_ router: ProviderRouter = RecordingRouter(), owner: String = "test-worker",
                    batchSize: Int = 500, claimLimit: Int = 4, metrics: WorkerMetrics = WorkerMetrics(),
                    log: Log = quietLog, configure: (inout WorkerConfig) -> Void = { _ in }) throws -> Worker {
        var config = WorkerConfig(owner: owner, claimLimit: claimLimit, batchSize: batchSize, leaseSeconds: 30,
                                  pollInterval: 0.05, rescueInterval: 0.1, statsInterval: 3600,
                                  retryPolicy: Self.fastRetry)
        configure(&config)
        let worker = try Worker(config: config, sessions: world.sessions, router: router, metrics: metrics, log: log)
        if Self.backend == .memory { worker.maintainer = nil }
        return worker
    }

    /// One claim of `worker` on `session` (default `workerSession`).
    @discardableResult
    func runOnce(_ worker: Worker, on session: QueueStore? = nil) throws -> Int {
        try worker.runOnce(store: session ?? workerSession)
    }

    /// Runs `worker.runOnce` until no job is available or running (waiting for scheduled retries),
    /// at most `timeout` seconds, on `session` (default `workerSession`), so threads can drain
    /// concurrently, each with its own session.
    func drain(_ worker: Worker, session: QueueStore? = nil, timeout: TimeInterval = 30) throws {
        let s = session ?? workerSession!
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try worker.runOnce(store: s) > 0 { continue }
            let stats = try s.queueStats()   // on the drain's own session: drains may run on several threads
            if stats.available + stats.running == 0 { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw DrainTimeout(seconds: timeout)
    }

    /// Jobs available or running.
    func openJobs() throws -> Int { try world.jobs().filter { $0.state == .available || $0.state == .running }.count }

    // MARK: - Apps, devices, notifications

    /// Creates an app whose events are kept (`WebhookFixture`: endpoints that want every type).
    func createApp(requireEncryption: Bool = false, name: String = "app") throws -> UUID {
        try world.createApp(requireEncryption: requireEncryption, name: name)
    }

    /// Registers an iOS or Android device through the registry (validation included).
    /// `key`: nil leaves the field absent (R-DEV-4 keep).
    @discardableResult
    func register(_ app: UUID, user: String, platform: String = "ios", token: String = "tok-\(UUID().uuidString)",
                  key: P256PrivateKey? = nil, appLimit: Int64? = nil) throws -> UUID {
        let r = try DeviceRegistration.validate(
            mode: "test", platform: platform, token: token, userID: user,
            apnsEnvironment: platform == "ios" ? "sandbox" : nil,
            encryptionPublicKey: key.map { .some($0.publicKey.base64URL) } ?? .none, platforms: ProviderTable.standard.addressing)
        return try world.register(app, r, appLimit: appLimit)
    }

    /// Registers again with an explicit null key (R-DEV-4: the stored key is removed).
    func removeKey(_ app: UUID, user: String, platform: String, token: String) throws -> UUID {
        let r = try DeviceRegistration.validate(mode: "test", platform: platform, token: token, userID: user,
                                                apnsEnvironment: platform == "ios" ? "sandbox" : nil,
                                                encryptionPublicKey: .some(nil), platforms: ProviderTable.standard.addressing)
        return try world.register(app, r, appLimit: nil)
    }

    /// Registers a web device whose endpoint's last segment is `answer` (the simulator's token).
    @discardableResult
    func registerWeb(_ app: UUID, user: String, answer: String = "test_accept") throws -> UUID {
        let ua = try P256PrivateKey.generate()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let r = try DeviceRegistration.validate(
            mode: "test", platform: "web", token: nil, userID: user, apnsEnvironment: nil, encryptionPublicKey: .none,
            subscriptionEndpoint: "https://push.example.com/send/\(UUID().uuidString.lowercased())/\(answer)",
            subscriptionP256dh: ua.publicKey.base64URL, subscriptionAuth: Base64URL.encode(auth), platforms: ProviderTable.standard.addressing)
        return try world.register(app, r, appLimit: nil)
    }

    /// Enqueues a test-mode notification (no acceptance size check).
    func enqueue(_ app: UUID, users: [String], title: String? = "Hello", body: String? = "World",
                 _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws -> UUID {
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: users)
        q.title = title
        q.body = body
        configure(&q)
        return try world.enqueue(q).id
    }

    // MARK: - Rows

    func deliveries(_ n: UUID) throws -> [UUID: DeliveryRowT] { try world.deliveries(n) }

    /// (charges, refunds) per device for notification `n`.
    func ledger(_ n: UUID) throws -> [UUID: (charges: Int, refunds: Int)] { try world.ledger(n) }

    /// Charges minus refunds for (n, device).
    func net(_ n: UUID, _ device: UUID) throws -> Int {
        let l = try ledger(n)[device] ?? (0, 0)
        return l.charges - l.refunds
    }

    func notification(_ n: UUID) throws -> NotificationStateT { try world.notification(n) }

    /// R-SEND-9 invariants for a final notification: at most one charge and one refund per device,
    /// a refund only against a charge, every net 0 or 1, and `device_count` = devices netting one.
    func assertLedgerInvariants(_ n: UUID, file: StaticString = #filePath, line: UInt = #line) throws {
        let l = try ledger(n)
        for (device, e) in l {
            XCTAssertLessThanOrEqual(e.charges, 1, "more than one charge for \(device)", file: file, line: line)
            XCTAssertLessThanOrEqual(e.refunds, e.charges, "refund without a charge for \(device)", file: file, line: line)
        }
        let netting = l.values.filter { $0.charges - $0.refunds == 1 }.count
        XCTAssertEqual(try notification(n).deviceCount, netting, "device_count must count devices netting one",
                       file: file, line: line)
    }

    /// Events of `type` for `device`.
    func events(type: String, device: UUID) throws -> [String] { try world.events(type: type, device: device) }

    // MARK: - Payload inspection

    /// The JSON object of a stored test payload (APNs body or FCM request body).
    func json(_ bytes: [UInt8]?, file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        guard let bytes, let o = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            XCTFail("stored payload is not a JSON object", file: file, line: line)
            return [:]
        }
        return o
    }

    /// The envelope object of an iOS payload (`hk` beside `aps`) or an Android one (`message.data.hk`).
    func envelope(_ bytes: [UInt8]?, platform: String) -> [String: Any]? {
        guard let bytes, let o = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return nil }
        if platform == "ios" { return o["hk"] as? [String: Any] }
        guard let message = o["message"] as? [String: Any], let data = message["data"] as? [String: Any],
              let hk = data["hk"] as? String else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(hk.utf8)) as? [String: Any]
    }

    /// Opens an envelope object with `key`: the sealed plaintext bytes.
    func open(_ envelope: [String: Any], with key: P256PrivateKey) throws -> [UInt8] {
        guard let e = envelope["enc"] as? String, let c = envelope["ct"] as? String,
              let enc = Base64URL.decode(e), let ct = Base64URL.decode(c) else {
            throw PushError(.envelopeMismatch, "envelope without enc/ct")
        }
        return try EnvelopeSealer().open(enc: enc, ct: ct, with: key)
    }
}
