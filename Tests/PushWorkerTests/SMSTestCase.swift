import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Shared base of the SMS fallback tests (R-SMS-1, R-SEND-6): the test's app requires encryption
/// and its user has one device without a key, so a notification with an SMS fallback ends
/// `sms_fallback` (the seed's case); the job worker runs through `LiveRouter`, the SMS dispatcher
/// is driven one cycle at a time (`runSMS`) on a connection of its own.
class SMSTestCase: LiveRouterTestCase {
    /// The SMS outbox, its dispatcher and its ledger rows are PostgreSQL's (sql/0012).
    override class var backend: Backend { .postgres }
    static let account = "AC" + String(repeating: "5e", count: 16)
    static let token = String(repeating: "7a", count: 16)
    let fakes = StartedFakes()
    var smsConn: PGConnection!
    var metrics = SMSMetrics()

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = try AppStore(connection: conn).appUpdate(id: appID, requireEncryption: true)
        for mode in ["test", "live"] {
            let reg = try DeviceRegistration.validate(mode: mode, platform: "ios", token: "keyless-\(mode)", userID: "carol",
                                                      apnsEnvironment: "production", encryptionPublicKey: .none,
                                                      platforms: ProviderTable.standard.addressing)
            _ = try DeviceRegistry(connection: conn).register(appID: appID, reg)
        }
        try makeRouterAndWorker(owner: "sms-jobs") { _ in }
        smsConn = try database.connect()
    }

    override func tearDownWithError() throws {
        fakes.stopAll()
        smsConn = nil
        try super.tearDownWithError()
    }

    // MARK: - Setup

    /// `fake_twilio.py` for `account` and `token`; `extra` adds options.
    func startTwilio(_ extra: [String] = []) throws -> FakeProviderServer {
        fakes.keep(try .startTwilio(accountSID: Self.account, authToken: Self.token, extra: extra))
    }

    /// Stores the app's Twilio set pointing at `baseURL`, with `token` as the auth token.
    @discardableResult
    func setTwilio(_ baseURL: String, token: String = token, from: String = "+15005550006") throws -> CredentialSummary {
        try CredentialStore(connection: conn, keys: keys).set(
            appID: appID, kind: .twilio,
            config: ["account_sid": Self.account, "from": from, "twilio_base_url": baseURL], secret: Array(token.utf8))
    }

    /// A notification to carol with an SMS fallback, run through the job worker until final:
    /// `sms_fallback`, its SMS queued.
    func smsNotification(mode: Mode, phone: String = "+33612345678", text: String = "Your code is 123456",
                         idempotencyKey: String? = nil) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: mode.rawValue, userIDs: ["carol"])
        q.title = "Hi Carol"
        q.body = "secret"
        q.smsPhone = phone
        q.smsText = text
        q.idempotencyKey = idempotencyKey
        let id = try NotificationStore(connection: conn).enqueue(q).id
        try drain()
        XCTAssertEqual(try report(id).status, "sms_fallback")
        return id
    }

    /// An SMS dispatcher trusting the fakes' CA, with fast retries and `requestTimeoutMillis`.
    func dispatcher(requestTimeoutMillis: Int = 5_000) throws -> SMSDispatcher {
        var c = SMSDispatcherConfig(owner: "sms-test")
        c.caFile = try FakeMaterial.file("ca.pem")
        c.requestTimeoutMillis = requestTimeoutMillis
        c.leaseSeconds = 30
        c.retry = RetryPolicy(baseDelay: 0.05, maxDelay: 0.2, maxFailedAttempts: 3, minimumRetryAfter: 0.01)
        return SMSDispatcher(config: c, databaseURL: database.conninfo, keys: keys, metrics: metrics, log: Log(level: .error),
                             jitter: { 1 })
    }

    /// Runs `rounds` dispatcher cycles (claims), stopping early when one claims nothing.
    func runSMS(_ d: SMSDispatcher, rounds: Int = 3) throws {
        for _ in 0..<rounds {
            if try d.runOnce(smsConn) == 0 { break }
        }
    }

    /// Makes every SMS waiting for a retry due now (the tests' clock moves instead of sleeping).
    func smsDueNow() throws {
        _ = try conn.exec("UPDATE push_outbox SET run_at = now() WHERE kind = 'sms' AND state = 'available'")
    }

    // MARK: - Reading

    func sms(_ n: UUID) throws -> SMSReport { try XCTUnwrap(try NotificationStore(connection: conn).report(id: n)?.sms, "no SMS row") }

    /// The `sms` ledger rows of notification `n`: (mode, reason).
    func smsLedger(_ n: UUID) throws -> [(mode: String, reason: String)] {
        let r = try conn.exec("SELECT mode, reason FROM push_ledger WHERE notification_id = $1::uuid AND kind = 'sms'", [.uuid(n)])
        return try r.rows.map { (try r.string($0, "mode"), try r.string($0, "reason")) }
    }

    /// The outbox row of notification `n`'s SMS: (state, attempts, failures, run_at).
    func outbox(_ n: UUID) throws -> (state: String, attempts: Int, failures: Int, runAt: Date) {
        let r = try conn.exec("""
            SELECT o.state, o.attempts, o.failures, o.run_at FROM push_outbox o
              JOIN push_sms_outbox s ON s.id = o.ref_id AND o.kind = 'sms' WHERE s.notification_id = $1::uuid
            """, [.uuid(n)])
        return (try r.string(0, "state"), try r.int(0, "attempts"), try r.int(0, "failures"), try r.date(0, "run_at"))
    }

    func twilioState() throws -> CredentialSummary {
        try XCTUnwrap(try credential(.twilio), "no twilio set")
    }
}
