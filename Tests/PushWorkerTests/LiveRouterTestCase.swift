import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Shared base of the live-mode tests (`LiveTestCase` for APNs/FCM, `LiveWebPushTestCase` for Web
/// Push): a fresh migrated database per test with one app (named by `appName()`) and fresh
/// credential keys, a `LiveRouter` trusting the fakes' CA, and helpers that read the outcome through
/// the product's own report and tables. Subclasses start their fakes and build the worker.
class LiveRouterTestCase: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!
    var appID: UUID!
    var keys: CredentialKeys!
    var router: LiveRouter!
    var worker: Worker!

    /// The name of the test's app (subclasses pick a recognisable prefix).
    func appName() -> String { "live-\(UInt32.random(in: 0...UInt32.max))" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        appID = try AppStore(connection: conn).appCreate(name: appName()).id
        try WebhookFixture.subscribeToEverything(conn, appID: appID)   // keeps the app's events to look at
        keys = try CredentialKeys(current: SecretBox.generateKey())
    }

    override func tearDownWithError() throws {
        worker = nil
        router = nil
        conn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// (Re)builds `router` and `worker` (owner `owner`, claim limit 4, `retryPolicy` when given, else
    /// `WorkerConfig`'s default): `configure` adjusts the router configuration, whose CA file is the
    /// fakes' `ca.pem`.
    func makeRouterAndWorker(owner: String, batchSize: Int = 500, retryPolicy: RetryPolicy? = nil,
                             configure: (inout LiveRouter.Configuration) -> Void) throws {
        var rc = LiveRouter.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        configure(&rc)
        let url = database.conninfo
        router = LiveRouter(keys: keys, configuration: rc,
                            apnsTokenCache: PGProviderTokenCache(keys: keys, log: Log(level: .error)) { try PGConnection.connect(url) },
                            openConnection: { try PGConnection.connect(url) })
        var config = WorkerConfig(owner: owner, claimLimit: 4, batchSize: batchSize)
        if let retryPolicy { config.retryPolicy = retryPolicy }
        worker = try Worker(config: config, databaseURL: url, router: router, log: Log(level: .error))
    }

    // MARK: - Credentials

    /// The `kind` set of `app` (default: the test's app), without its secret.
    func credential(_ kind: CredentialKind, app: UUID? = nil) throws -> CredentialSummary? {
        try CredentialStore(connection: conn, keys: nil).states(appID: app ?? appID).first { $0.kind == kind }
    }

    // MARK: - Running

    /// Runs the worker until no job is due (at most `rounds` claims).
    func drain(rounds: Int = 20) throws {
        for _ in 0..<rounds where try worker.runOnce(connection: conn) > 0 {}
    }

    /// Makes every pending retry due now (the tests' clock moves instead of sleeping).
    func dueNow() throws {
        _ = try conn.exec("UPDATE push_deliveries SET next_attempt_at = now() WHERE status = 'retrying'")
        _ = try conn.exec("UPDATE push_jobs SET run_at = now() WHERE state = 'available'")
    }

    // MARK: - Outcomes

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

    /// Payloads of the events of `type` of `app` (default: the test's app), oldest first.
    func events(_ type: String, app: UUID? = nil) throws -> [[String: Any]] {
        let r = try conn.exec("SELECT payload::text AS p FROM push_events WHERE app_id = $1::uuid AND type = $2::text ORDER BY id",
                              [.uuid(app ?? appID), .text(type)])
        return try r.rows.map { (try JSONSerialization.jsonObject(with: Data(try r.string($0, "p").utf8)) as? [String: Any]) ?? [:] }
    }
}
