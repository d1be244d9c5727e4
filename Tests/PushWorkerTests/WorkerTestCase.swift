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
        CredentialStates(unusable: Set(Platform.allCases), verified: [])
    }

    func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)] {
        lock.withLock { recorded += pushes }
        onSend?(pushes)
        return pushes.map { SimulatorOnlyRouter.simulate($0) }
    }

    /// Every push handed over so far, in order.
    var pushes: [OutboundPush] { lock.withLock { recorded } }
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

/// One `push_deliveries` row.
struct DeliveryRowT {
    var deviceID: UUID
    var status: String
    var errorCode: String?
    var encrypted: Bool
    var attempts: Int
    var failures: Int
    var apnsID: UUID
    var providerMessageID: String?
    var payload: [UInt8]?
}

/// The `push_notifications` columns tests assert on.
struct NotificationStateT {
    var status: String
    var errorCode: String?
    var encrypted: Bool?
    var deviceCount: Int
}

/// Base for the worker's integration tests: a fresh database per test with every migration
/// applied, the real worker (`Worker.runOnce`) with the test-mode simulator, and helpers that go
/// through the product's own entry points (AppStore, DeviceRegistry, NotificationStore).
class WorkerTestCase: XCTestCase {
    var database: PGTestDatabase!
    /// The test's own session (setup and assertions).
    var conn: PGConnection!
    /// The session the worker runs on.
    var workerConn: PGConnection!
    /// Fast retries so tests finish quickly (R-SEND-12): 3 failed attempts, 10 ms base.
    static let fastRetry = RetryPolicy(baseDelay: 0.01, maxDelay: 0.05, maxFailedAttempts: 3, minimumRetryAfter: 0.01)
    static let quietLog = Log(level: .error)

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        workerConn = try database.connect()
    }

    override func tearDownWithError() throws {
        conn = nil
        workerConn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    // MARK: - Worker

    func makeWorker(_ router: ProviderRouter = RecordingRouter(), owner: String = "test-worker",
                    batchSize: Int = 500, claimLimit: Int = 4) throws -> Worker {
        let config = WorkerConfig(owner: owner, claimLimit: claimLimit, batchSize: batchSize, leaseSeconds: 30,
                                  pollInterval: 0.05, rescueInterval: 0.1, statsInterval: 3600,
                                  retryPolicy: Self.fastRetry)
        return try Worker(config: config, databaseURL: database.conninfo, router: router, log: Self.quietLog)
    }

    /// Runs `worker.runOnce` until no job is available or running (waiting for scheduled retries),
    /// at most `timeout` seconds. Uses only `connection` (default `workerConn`), so threads can
    /// drain concurrently, each with its own connection.
    func drain(_ worker: Worker, connection: PGConnection? = nil, timeout: TimeInterval = 30) throws {
        let c = connection ?? workerConn!
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try worker.runOnce(connection: c) > 0 { continue }
            let open = try c.exec("SELECT count(*)::int AS n FROM push_jobs WHERE state IN ('available', 'running')")
                .int(0, 0)
            if open == 0 { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw DrainTimeout(seconds: timeout)
    }

    // MARK: - Apps, devices, notifications

    /// Creates an app whose events are kept (`WebhookFixture`: endpoints that want every type).
    func createApp(requireEncryption: Bool = false, name: String = "app") throws -> UUID {
        let id = try AppStore(connection: conn).appCreate(name: name, requireEncryption: requireEncryption).id
        try WebhookFixture.subscribeToEverything(conn, appID: id)
        return id
    }

    /// Registers an iOS or Android device through the registry (validation included).
    /// `key`: nil leaves the field absent (R-DEV-4 keep).
    @discardableResult
    func register(_ app: UUID, user: String, platform: String = "ios", token: String = "tok-\(UUID().uuidString)",
                  key: P256PrivateKey? = nil, appLimit: Int64? = nil) throws -> UUID {
        let r = try DeviceRegistration.validate(
            mode: "test", platform: platform, token: token, userID: user,
            apnsEnvironment: platform == "ios" ? "sandbox" : nil,
            encryptionPublicKey: key.map { .some($0.publicKey.base64URL) } ?? .none)
        return try DeviceRegistry(connection: conn, appLimitOverride: appLimit).register(appID: app, r).deviceID
    }

    /// Registers a web device whose endpoint's last segment is `answer` (the simulator's token).
    @discardableResult
    func registerWeb(_ app: UUID, user: String, answer: String = "test_accept") throws -> UUID {
        let ua = try P256PrivateKey.generate()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let r = try DeviceRegistration.validate(
            mode: "test", platform: "web", token: nil, userID: user, apnsEnvironment: nil, encryptionPublicKey: .none,
            subscriptionEndpoint: "https://push.example.com/send/\(UUID().uuidString.lowercased())/\(answer)",
            subscriptionP256dh: ua.publicKey.base64URL, subscriptionAuth: Base64URL.encode(auth))
        return try DeviceRegistry(connection: conn).register(appID: app, r).deviceID
    }

    /// Enqueues a test-mode notification through `push_enqueue` (no acceptance size check).
    func enqueue(_ app: UUID, users: [String], title: String? = "Hello", body: String? = "World",
                 _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws -> UUID {
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: users)
        q.title = title
        q.body = body
        configure(&q)
        return try NotificationStore(connection: conn).enqueue(q).id
    }

    // MARK: - Rows

    func int(_ sql: String, _ params: [PGValue?] = []) throws -> Int {
        try conn.exec(sql, params).int(0, 0)
    }

    func deliveries(_ n: UUID) throws -> [UUID: DeliveryRowT] {
        let r = try conn.exec("""
            SELECT device_id, status, error_code, encrypted, attempts, failures, apns_id, provider_message_id, payload
              FROM push_deliveries WHERE notification_id = $1
            """, [.uuid(n)])
        var out: [UUID: DeliveryRowT] = [:]
        for i in r.rows {
            let d = DeliveryRowT(deviceID: try r.uuid(i, "device_id"), status: try r.string(i, "status"),
                                 errorCode: try r.decode(i, "error_code"), encrypted: try r.bool(i, "encrypted"),
                                 attempts: try r.int(i, "attempts"), failures: try r.int(i, "failures"),
                                 apnsID: try r.uuid(i, "apns_id"),
                                 providerMessageID: try r.decode(i, "provider_message_id"),
                                 payload: try r.decode(i, "payload"))
            out[d.deviceID] = d
        }
        return out
    }

    /// (charges, refunds) per device for notification `n`.
    func ledger(_ n: UUID) throws -> [UUID: (charges: Int, refunds: Int)] {
        let r = try conn.exec("""
            SELECT device_id, count(*) FILTER (WHERE kind = 'charge')::int AS c,
                   count(*) FILTER (WHERE kind = 'refund')::int AS r
              FROM push_ledger WHERE notification_id = $1 GROUP BY device_id
            """, [.uuid(n)])
        var out: [UUID: (charges: Int, refunds: Int)] = [:]
        for i in r.rows { out[try r.uuid(i, "device_id")] = (try r.int(i, "c"), try r.int(i, "r")) }
        return out
    }

    /// Charges minus refunds for (n, device).
    func net(_ n: UUID, _ device: UUID) throws -> Int {
        let l = try ledger(n)[device] ?? (0, 0)
        return l.charges - l.refunds
    }

    func notification(_ n: UUID) throws -> NotificationStateT {
        let r = try conn.exec("SELECT status, error_code, encrypted, device_count FROM push_notifications WHERE id = $1",
                              [.uuid(n)])
        return NotificationStateT(status: try r.string(0, "status"), errorCode: try r.decode(0, "error_code"),
                                  encrypted: try r.decode(0, "encrypted"), deviceCount: try r.int(0, "device_count"))
    }

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
    func events(type: String, device: UUID) throws -> [String] {
        let r = try conn.exec("SELECT payload->>'reason' AS reason FROM push_events WHERE type = $1 AND payload->>'device_id' = $2",
                              [.text(type), .text(device.uuidString.lowercased())])
        return try r.rows.map { try r.string($0, "reason") }
    }

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
