import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushStore
import PushTestSupport
@testable import PushWorker

/// Base for the dispatcher's tests: a fresh migrated database, an operator key, the receiver
/// `scripts/fakes/webhook_receiver.py` (verifies with the `standardwebhooks` package) and a
/// dispatcher on loopback with a compressed retry schedule.
class WebhookDispatchTestCase: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!
    var keys: CredentialKeys!
    var endpoints: WebhookEndpointStore!
    /// The receivers started (plain HTTP first, then any HTTPS one).
    var receivers: [FakeProcess] = []
    /// The first receiver.
    var receiver: FakeProcess? { receivers.first }
    var receiverDir: String!
    var dispatchers: [WebhookDispatcher] = []
    static let quietLog = Log(level: .error)

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        keys = try CredentialKeys(current: try SecretBox.generateKey())
        endpoints = WebhookEndpointStore(connection: conn, keys: keys, allowLoopback: true)
        receiverDir = try FakeMaterial.directory() + "/hooks-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: receiverDir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        for r in receivers { r.stop() }
        for d in dispatchers { d.stop(timeout: 15) }
        dispatchers = []
        conn = nil
        try database?.drop()
        database = nil
        if let dir = receiverDir { try? FileManager.default.removeItem(atPath: dir) }   // nil when setUp failed first
        try super.tearDownWithError()
    }

    // MARK: - Receiver

    /// Starts the Python receiver, over HTTPS (the fakes' certificate for 127.0.0.1) when `tls`.
    @discardableResult
    func startReceiver(tls: Bool = false) throws -> FakeProcess {
        var arguments = ["--secrets-dir", receiverDir!]
        if tls { arguments += ["--cert", try FakeMaterial.file("server.pem"), "--key", try FakeMaterial.file("server.key")] }
        let r = try FakeProcess.start("webhook_receiver.py", arguments: arguments, directory: receiverDir)
        receivers.append(r)
        return r
    }

    /// `http://127.0.0.1:<port>/hooks/<name>` on the first receiver, or `https://` on `r`.
    func hookURL(_ name: String, on r: FakeProcess? = nil) throws -> String {
        if let r { return "https://127.0.0.1:\(r.port)/hooks/\(name)" }
        return "http://127.0.0.1:\(try XCTUnwrap(receiver).port)/hooks/\(name)"
    }

    /// The secrets the receiver verifies `name`'s requests with, in order.
    func setSecrets(_ name: String, _ secrets: [WebhookSecret]) throws {
        try secrets.map(\.text).joined(separator: "\n").write(toFile: "\(receiverDir!)/\(name).secrets", atomically: true,
                                                                encoding: .utf8)
    }

    /// The receiver's answers for `name`, in order (`500`, `hang`...), the last one repeated.
    func setPlan(_ name: String, _ plan: String) throws {
        try plan.write(toFile: "\(receiverDir!)/\(name).plan", atomically: true, encoding: .utf8)
    }

    /// One received request, as the receiver logged it.
    struct Received {
        var name: String
        var webhookID: String
        var timestamp: Int64
        var verified: [Bool]
        var tamperedBodyRefused: Bool?
        var tamperedTimestampRefused: Bool?
        var type: String?
        var eventID: String?
        var data: [String: Any]
        var receivedAt: Double
    }

    /// Every request the receiver logged so far, optionally only `name`'s.
    func received(_ name: String? = nil) throws -> [Received] {
        let text = receivers.map { (try? String(contentsOfFile: $0.logPath, encoding: .utf8)) ?? "" }.joined(separator: "\n")
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let r = Received(name: o["name"] as? String ?? "", webhookID: o["webhook_id"] as? String ?? "",
                             timestamp: Int64(o["timestamp"] as? String ?? "") ?? 0, verified: o["verified"] as? [Bool] ?? [],
                             tamperedBodyRefused: o["tampered_body_refused"] as? Bool,
                             tamperedTimestampRefused: o["tampered_timestamp_refused"] as? Bool,
                             type: o["type"] as? String, eventID: o["event_id"] as? String,
                             data: o["data"] as? [String: Any] ?? [:], receivedAt: o["received_at"] as? Double ?? 0)
            return name == nil || r.name == name ? r : nil
        }
    }

    // MARK: - Dispatcher

    /// A compressed schedule: base `base` s, cap 8×, a one-minute window.
    static func fastRetry(base: Double = 0.2) -> WebhookRetryPolicy {
        WebhookRetryPolicy(baseDelay: base, maxDelay: base * 8, window: 60)
    }

    /// A started dispatcher on loopback.
    @discardableResult
    func startDispatcher(owner: String = "d1", perEndpoint: Int = 8, retry: WebhookRetryPolicy = fastRetry(),
                         allowLoopback: Bool = true, resolver: WebPushResolver = SystemWebPushResolver(),
                         metrics: WebhookMetrics = WebhookMetrics(),
                         jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) throws -> WebhookDispatcher {
        var c = WebhookDispatcherConfig(owner: owner)
        c.perEndpoint = perEndpoint
        c.retry = retry
        c.allowLoopback = allowLoopback
        c.pollInterval = 0.05
        c.rescueInterval = 0.5
        c.statsInterval = 0.5
        c.leaseSeconds = 30
        c.caFile = try FakeMaterial.file("ca.pem")
        let d = try WebhookDispatcher(config: c, databaseURL: database.conninfo, keys: keys, resolver: resolver,
                                      metrics: metrics, log: Self.quietLog, jitter: jitter)
        d.start()
        dispatchers.append(d)
        return d
    }

    // MARK: - Data

    func createApp(_ name: String = "app") throws -> UUID {
        try AppStore(connection: conn).appCreate(name: name).id
    }

    /// `count` push_device.deactivated events of `mode` for `app`, as the SQL functions write them.
    func insertEvents(_ count: Int, app: UUID, mode: Mode = .test, reason: String = "UNREGISTERED") throws {
        try conn.exec("""
            INSERT INTO push_events (app_id, type, payload)
            SELECT $1::uuid, 'push_device.deactivated', jsonb_build_object('device_id', gen_random_uuid(),
                   'user_id', 'u' || g, 'mode', $2::text, 'reason', $3::text)
              FROM generate_series(1, $4::int) g
            """, [.uuid(app), .text(mode.rawValue), .text(reason), .int(count)])
    }

    func int(_ sql: String, _ params: [PGValue?] = []) throws -> Int { try conn.exec(sql, params).int(0, 0) }

    /// What the outbox and the attempt log hold, for a failure message.
    func diagnosis() -> String {
        let rows = (try? conn.exec("""
            SELECT state || ' ' || count(*) || coalesce(' last_error=' || max(last_error), '') AS line
              FROM push_outbox GROUP BY state
            """)).map { r in r.rows.compactMap { try? r.string($0, "line") } } ?? []
        let attempts = (try? conn.exec("""
            SELECT attempted_at::text || ' ' || result || ' ' || coalesce(status_code::text, '-') || ' ' || coalesce(error, '')
                   AS line FROM push_webhook_attempts ORDER BY attempted_at DESC LIMIT 5
            """)).map { r in r.rows.compactMap { try? r.string($0, "line") } } ?? []
        return "outbox: \(rows.joined(separator: "; ")); last attempts: \(attempts.joined(separator: "; ")); received \((try? received().count) ?? -1)"
    }

    /// Polls `condition` every 20 ms until true or `timeout` seconds pass; returns the last value.
    @discardableResult
    func waitUntil(_ timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }
}
