import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore
@testable import PushWorker

/// Base for live-mode integration tests: a fresh database per test with one app and fresh credential
/// keys, the three fakes shared by the test class, and a worker whose router is a `LiveRouter`.
class LiveTestCase: XCTestCase {
    nonisolated(unsafe) static var sharedFakes: Result<LiveFakes, Error>?

    var database: PGTestDatabase!
    var conn: PGConnection!
    var appID: UUID!
    var keys: CredentialKeys!
    var router: LiveRouter!
    var worker: Worker!
    var fakes: LiveFakes!
    /// Distinguishes this test's tokens in the fakes' logs (the fakes serve the whole class).
    let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)

    override class func tearDown() {
        if case .success(let f)? = sharedFakes { f.stop() }
        sharedFakes = nil
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        if Self.sharedFakes == nil { Self.sharedFakes = Result { try LiveFakes() } }
        fakes = try Self.sharedFakes!.get()
        database = try PGTestDatabase.create()
        conn = try database.connect()
        let sql = LiveFakeMaterial.repoRoot.appendingPathComponent("sql").path
        _ = try Migrator(connection: conn, migrations: try Migrator.loadMigrations(directory: sql)).migrate()
        appID = try AppStore(connection: conn).appCreate(name: "live-\(tag)").id
        keys = try CredentialKeys(current: SecretBox.generateKey())
        try makeWorker(apnsTimeoutMillis: 10_000)
    }

    override func tearDownWithError() throws {
        worker = nil
        router = nil
        conn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// (Re)builds the router and worker (batch size 500, a fixed retry policy, jitter-free backoff is not needed:
    /// tests fast-forward retries with `dueNow()`).
    func makeWorker(apnsTimeoutMillis: Int, batchSize: Int = 500) throws {
        var rc = LiveRouter.Configuration(caFile: try LiveFakeMaterial.file("ca.pem"))
        rc.apnsRequestTimeoutMillis = apnsTimeoutMillis
        rc.fcmRequestTimeoutMillis = apnsTimeoutMillis
        let url = database.conninfo
        router = LiveRouter(keys: keys, configuration: rc,
                            apnsTokenCache: PGProviderTokenCache { try PGConnection.connect(url) },
                            openConnection: { try PGConnection.connect(url) })
        worker = try Worker(config: WorkerConfig(owner: "live-test", claimLimit: 4, batchSize: batchSize),
                            databaseURL: url, router: router, log: Log(level: .error))
    }

    // MARK: - Credentials

    @discardableResult
    func setAPNs(topic: String = LiveFakes.topic) throws -> CredentialSummary {
        try CredentialStore(connection: conn, keys: keys).set(
            appID: appID, kind: .apns,
            config: ["team_id": LiveFakes.teamID, "key_id": LiveFakes.keyID, "topic": topic,
                     "apns_base_url_production": fakes.apns.baseURL, "apns_base_url_sandbox": fakes.sandbox.baseURL],
            secret: try LiveFakeMaterial.bytes("apns_key.p8"))
    }

    @discardableResult
    func setFCM() throws -> CredentialSummary {
        try CredentialStore(connection: conn, keys: keys).set(
            appID: appID, kind: .fcm, config: ["fcm_base_url": fakes.fcm.baseURL, "fcm_token_uri": fakes.fcm.baseURL + "/token"],
            secret: try LiveFakeMaterial.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token"))
    }

    func credential(_ kind: CredentialKind) throws -> CredentialSummary? {
        try CredentialStore(connection: conn, keys: nil).states(appID: appID).first { $0.kind == kind }
    }

    // MARK: - Devices and notifications

    /// Registers a live device for `user` whose token is `prefix-<tag>-<n>` (the prefix picks the fake's answer).
    func device(_ prefix: String, platform: Platform = .ios, environment: APNsEnvironment = .production,
                user: String = "u1", n: Int = 0) throws -> (id: UUID, token: String) {
        let token = "\(prefix)-\(tag)-\(n)"
        let reg = try DeviceRegistration.validate(mode: "live", platform: platform.rawValue, token: token, userID: user,
                                                  apnsEnvironment: platform == .ios ? environment.rawValue : nil,
                                                  encryptionPublicKey: .none)
        return (try DeviceRegistry(connection: conn).register(appID: appID, reg).deviceID, token)
    }

    func send(users: [String] = ["u1"], title: String = "Hello", collapseKey: String? = nil,
              priority: String? = nil) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: "live", userIDs: users)
        q.title = title
        q.body = "World"
        q.collapseKey = collapseKey
        q.priority = priority
        return try NotificationStore(connection: conn).enqueue(q).id
    }

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

    /// The fake's `push` log lines for tokens of this test.
    func pushes(_ server: LiveFakeServer, kind: String = "push") -> [[String: Any]] {
        server.log(kind).filter { line in
            let token = (line["token"] as? String) ?? ""
            return token.contains("-\(tag)-")
        }
    }
}
