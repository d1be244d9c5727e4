import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Issue 11: APNs answers `ExpiredProviderToken` to the fleet's shared JWT while it is younger than
/// the 20-minute floor of voluntary refreshes. Two `pushfleet worker` processes both send with it
/// (the fake holds its first expired answers until two connections sent one), both ask for a
/// replacement, exactly one mints it, and every delivery succeeds on the resend within its first
/// attempt: none loses an attempt.
final class LiveExpiredTokenFleetTests: LiveRouterTestCase {
    override class var backend: Backend { .postgres }

    private var fake: FakeProviderServer?
    private var workers: [WorkerProcess] = []

    override func tearDownWithError() throws {
        for w in workers { w.stop() }
        fake?.stop()
        try super.tearDownWithError()
    }

    func testExpiredProviderTokenIsReplacedOnceFleetWideAndNoDeliveryLosesAnAttempt() throws {
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        // The fake calls a JWT expired past 600 s; the stored one is 700 s old (refresh due at 2700 s).
        let apns = try FakeProviderServer.startAPNs(teamID: LiveFakes.teamID, keyID: LiveFakes.keyID, topic: LiveFakes.topic,
                                                    extra: ["--max-token-age", "600", "--expired-barrier", "2"])
        fake = apns
        try CredentialStore(connection: conn, keys: keys).set(
            appID: appID, kind: .apns,
            config: ["team_id": LiveFakes.teamID, "key_id": LiveFakes.keyID, "topic": LiveFakes.topic,
                     "apns_base_url_production": apns.baseURL, "apns_base_url_sandbox": apns.baseURL],
            secret: try FakeMaterial.bytes("apns_key.p8"))
        let count = 12
        for i in 0..<count {
            let reg = try DeviceRegistration.validate(mode: "live", platform: "ios", token: "ok-\(tag)-\(i)", userID: "u\(i)",
                                                      apnsEnvironment: "production", encryptionPublicKey: .none, platforms: ProviderTable.standard.addressing)
            _ = try DeviceRegistry(connection: conn).register(appID: appID, reg)
        }
        let started = Int64(Date().timeIntervalSince1970)
        let old = try seedStoredJWT(issuedAt: started - 700)

        let env = [
            "DATABASE_URL": database.conninfo, CredentialKeys.currentVariable: Base64URL.encode(keys.current),
            "PUSHFLEET_PROVIDER_CA_FILE": try FakeMaterial.file("ca.pem"), "PUSHFLEET_LOG_LEVEL": "info",
        ]
        let args = ["worker", "--claim-limit", "1", "--poll-interval", "0.1", "--metrics-addr", "off"]
        workers = try (0..<2).map { try WorkerProcess.start(LiveWebPushCLI.executable, args, environment: env, name: "w\($0)") }
        for w in workers {
            XCTAssertTrue(w.waitForLog(event: "worker.ready", timeout: 30), "\(w.name) never ready:\n\(w.logText())")
        }

        var notifications: [UUID] = []
        for i in 0..<count {
            var q = EnqueueRequest(appID: appID, mode: "live", userIDs: ["u\(i)"])
            q.title = "n\(i)"
            q.body = "expired token"
            notifications.append(try NotificationStore(connection: conn).enqueue(q).id)
        }
        let finished = waitUntil(timeout: 60) {
            (try? self.conn.exec("SELECT count(*)::int AS n FROM push_notifications WHERE finished_at IS NULL").int(0, "n")) == 0
        }
        for w in workers { w.stop() }
        XCTAssertTrue(finished, "notifications left unfinished:\n\(workers.map { $0.logText() }.joined(separator: "\n"))")

        // Every delivery sent on its first attempt, no failed attempt counted.
        let rows = try conn.exec("SELECT status, attempts, failures FROM push_deliveries")  // this test's database
        XCTAssertEqual(rows.rowCount, count)
        for i in rows.rows {
            XCTAssertEqual(try rows.string(i, "status"), "sent")
            XCTAssertEqual(try rows.int(i, "attempts"), 1)
            XCTAssertEqual(try rows.int(i, "failures"), 0)
        }

        // APNs side: the old JWT refused as expired on two connections (the two processes), then
        // every push carried one new JWT, minted now with the app's key.
        let refused = apns.log("jwt_refused")
        XCTAssertGreaterThanOrEqual(refused.count, 2)
        XCTAssertEqual(Set(refused.compactMap { $0["reason"] as? String }), ["ExpiredProviderToken"])
        XCTAssertEqual(Set(refused.compactMap { $0["jwt"] as? String }), [old])
        XCTAssertEqual(Set(refused.compactMap { ($0["conn"] as? NSNumber)?.intValue }).count, 2, "both processes sent the old JWT")
        let pushed = apns.log("push")
        XCTAssertEqual(pushed.count, count)
        let jwts = Set(pushed.compactMap { $0["jwt"] as? String })
        XCTAssertEqual(jwts.count, 1, "one replacement for the fleet")
        let fresh = try XCTUnwrap(jwts.first)
        XCTAssertNotEqual(fresh, old)
        XCTAssertTrue(try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_key.p8"), keyId: LiveFakes.keyID).verify(fresh))
        XCTAssertGreaterThanOrEqual(pushed.compactMap { ($0["iat"] as? NSNumber)?.int64Value }.min() ?? 0, started)

        // Worker side: both processes asked for a replacement; exactly one minted it.
        let replaced = workers.map { $0.logLines(event: "provider_token.replaced") }
        for (w, lines) in zip(workers, replaced) { XCTAssertFalse(lines.isEmpty, "\(w.name) never saw the expired token") }
        XCTAssertEqual(replaced.joined().filter { $0["minted"] as? Bool == true }.count, 1)

        // The fleet's stored JWT is the new one (read back through the sealed row).
        let stored = try PGProviderTokenCache(keys: keys, log: Log(level: .error)) { try PGConnection.connect(self.database.conninfo) }
            .currentToken(for: try cacheKey(), now: started + 1) { _ in throw PushError(.providerError, "not stored") }
        XCTAssertEqual(stored.value, fresh)
    }

    // MARK: - Helpers

    private func cacheKey() throws -> String {
        let config = APNsClient.Configuration(teamId: LiveFakes.teamID, keyId: LiveFakes.keyID, topic: LiveFakes.topic)
        return try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8")).tokenCacheKey
    }

    /// Stores, as a worker of the fleet would have, a JWT of the app's key issued at `issuedAt`.
    private func seedStoredJWT(issuedAt: Int64) throws -> String {
        let signer = try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_key.p8"), keyId: LiveFakes.keyID)
        let jwt = try signer.sign(header: #"{"alg":"ES256","kid":"\#(LiveFakes.keyID)"}"#,
                                  claims: #"{"iss":"\#(LiveFakes.teamID)","iat":\#(issuedAt)}"#)
        let url = database.conninfo
        let cache = PGProviderTokenCache(keys: keys, log: Log(level: .error)) { try PGConnection.connect(url) }
        _ = try cache.currentToken(for: try cacheKey(), now: issuedAt + 700) { _ in
            ProviderToken(value: jwt, issuedAt: issuedAt, refreshAt: issuedAt + 2700)
        }
        return jwt
    }

    private func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return condition()
    }
}

/// A `pushfleet worker` child process whose standard error (its JSON log) goes to a file.
final class WorkerProcess {
    let name: String
    private let process: Process
    private let logPath: String

    private init(name: String, process: Process, logPath: String) {
        self.name = name
        self.process = process
        self.logPath = logPath
    }

    /// Starts `executable arguments` with `environment` (plus a minimal PATH).
    static func start(_ executable: String, _ arguments: [String], environment: [String: String], name: String) throws -> WorkerProcess {
        let path = NSTemporaryDirectory() + "pushfleet-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
        _ = FileManager.default.createFile(atPath: path, contents: nil)   // FileHandle(forWritingTo:) below throws if it failed
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        return WorkerProcess(name: name, process: p, logPath: path)
    }

    /// SIGTERM, then waits (at most 30 s) for the exit; idempotent.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let end = Date().addingTimeInterval(30)
        while process.isRunning, Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// SIGKILL (no drain, no last words), then waits for the exit.
    func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func logText() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The log's JSON lines whose `event` is `event`.
    func logLines(event: String) -> [[String: Any]] {
        logText().split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == event }
    }

    /// Waits until a line with `event` appears; false after `timeout` seconds.
    func waitForLog(event: String, timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if !logLines(event: event).isEmpty { return true }
            if !process.isRunning { return false }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: logPath)
    }
}
