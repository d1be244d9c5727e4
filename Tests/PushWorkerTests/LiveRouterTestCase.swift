import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Shared base of the live-mode tests (`LiveTestCase` for APNs/FCM, `LiveWebPushTestCase` for Web
/// Push): a fresh world per test (the in-memory store unless the class says `.postgres`) with one
/// app (named by `appName()`) and fresh credential keys, a `LiveRouter` trusting the fakes' CA
/// that reads the world's credential sets, and helpers that read the outcome through the world.
/// Subclasses start their fakes and build the worker.
class LiveRouterTestCase: WorkerTestCase {
    var appID: UUID!
    var keys: CredentialKeys!
    var router: LiveRouter!
    var worker: Worker!

    /// The name of the test's app (subclasses pick a recognisable prefix).
    func appName() -> String { "live-\(UInt32.random(in: 0...UInt32.max))" }

    /// The PostgreSQL world's database and the test's own connection (nil on the in-memory store:
    /// only `.postgres` classes use them).
    var database: PGTestDatabase! { (world as? PGWorld)?.database }
    var conn: PGConnection! { (world as? PGWorld)?.conn }

    override func setUpWithError() throws {
        try super.setUpWithError()
        appID = try world.createApp(requireEncryption: false, name: appName())
        keys = try CredentialKeys(current: SecretBox.generateKey())
    }

    override func tearDownWithError() throws {
        worker = nil
        router = nil
        try super.tearDownWithError()
    }

    /// (Re)builds `router` and `worker` (owner `owner`, claim limit 4, `retryPolicy` when given, else
    /// `WorkerConfig`'s default): `configure` adjusts the router configuration, whose CA file is the
    /// fakes' `ca.pem`.
    func makeRouterAndWorker(owner: String, batchSize: Int = 500, retryPolicy: RetryPolicy? = nil,
                             configure: (inout LiveRouter.Configuration) -> Void) throws {
        var rc = LiveRouter.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        configure(&rc)
        router = LiveRouter(credentials: world.credentialSource(keys: keys), configuration: rc,
                            apnsTokenCache: world.apnsTokenCache(keys: keys))
        var config = WorkerConfig(owner: owner, claimLimit: 4, batchSize: batchSize)
        if let retryPolicy { config.retryPolicy = retryPolicy }
        worker = try Worker(config: config, sessions: world.sessions, router: router, log: Log(level: .error))
        if Self.backend == .memory { worker.maintainer = nil }
    }

    // MARK: - Credentials

    /// The `kind` set of `app` (default: the test's app), without its secret.
    func credential(_ kind: CredentialKind, app: UUID? = nil) throws -> CredentialSummary? {
        try world.credential(app: app ?? appID, kind: kind)
    }

    // MARK: - Running

    /// Runs the worker until no job is due (at most `rounds` claims).
    func drain(rounds: Int = 20) throws {
        for _ in 0..<rounds where try worker.runOnce(store: workerSession) > 0 {}
    }

    /// Makes every pending retry due now (the tests' clock moves instead of sleeping).
    func dueNow() throws { try world.dueNow() }

    // MARK: - Outcomes

    func report(_ id: UUID) throws -> ReportT { try world.report(id) }

    func delivery(_ n: UUID, _ device: UUID) throws -> ReportT.Delivery {
        try XCTUnwrap(try report(n).deliveries.first { $0.deviceID == device }, "no delivery for the device")
    }

    /// Ledger kinds of one delivery, sorted (`charge`, `refund`).
    func ledger(_ n: UUID, _ device: UUID) throws -> [String] {
        try report(n).ledger.filter { $0.deviceID == device }.map(\.kind).sorted()
    }

    func deviceState(_ id: UUID) throws -> (active: Bool, reason: String?) { try world.device(id) }

    /// Payloads of the events of `type` of `app` (default: the test's app), oldest first.
    func events(_ type: String, app: UUID? = nil) throws -> [[String: Any]] {
        try world.appEvents(app: app ?? appID, type: type)
    }
}
