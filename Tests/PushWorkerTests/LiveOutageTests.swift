import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Issue 23, R-KIND-4: two workers (threads, each with its own sessions and router) on one
/// PostgreSQL database, against fakes that stop or throttle, on a compressed clock: every duration
/// of the outage thresholds and of the retry policy at 1/50 (a 5-minute outage in 6 s, R-SEND-12's
/// eight attempts in about 2.5 s, probes from 20 ms doubling to 1.2 s).
final class LiveOutageTests: LiveRouterTestCase {
    override class var backend: Backend { .postgres }

    static let scale = 0.02
    static let thresholds = OutageThresholds.default.scaled(by: scale)
    static let retry = RetryPolicy(baseDelay: 1 * scale, maxDelay: 300 * scale, maxFailedAttempts: 8, minimumRetryAfter: 1 * scale)

    private let started = StartedFakes()
    private var running: RunningWorkers?
    private let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
    private let sendLog = SendLogRouter.Log()
    private let logs = CapturedLog()

    override func tearDownWithError() throws {
        running?.stop()
        started.stopAll()
        try super.tearDownWithError()
    }

    // MARK: - Helpers

    /// `n` workers with the compressed clock, each with its own `LiveRouter` wrapped in a `SendLogRouter`.
    private func workers(_ n: Int, claimLimit: Int) throws -> [Worker] {
        try (0..<n).map { i in
            var rc = LiveRouter.Configuration(caFile: try FakeMaterial.file("ca.pem"))
            rc.apnsRequestTimeoutMillis = 2_000
            rc.fcmRequestTimeoutMillis = 2_000
            let live = LiveRouter(credentials: world.credentialSource(keys: keys), configuration: rc,
                                  apnsTokenCache: world.apnsTokenCache(keys: keys), log: Log(level: .error))
            var config = WorkerConfig(owner: "w\(i)", claimLimit: claimLimit, batchSize: 500, leaseSeconds: 30, pollInterval: 0.05,
                                      rescueInterval: 1, statsInterval: 3600, retryPolicy: Self.retry)
            config.outageThresholds = Self.thresholds
            config.pauseRefreshInterval = 0.02
            let w = try Worker(config: config, sessions: world.sessions, router: SendLogRouter(live, worker: "w\(i)", log: sendLog),
                               log: logs.log(.info))
            w.maintainer = nil
            return w
        }
    }

    private func setAPNs(_ fake: FakeProviderServer) throws {
        _ = try world.setCredentials(
            app: appID, kind: .apns,
            config: ["team_id": LiveFakes.teamID, "key_id": LiveFakes.keyID, "topic": LiveFakes.topic,
                     "apns_base_url_production": fake.baseURL, "apns_base_url_sandbox": fake.baseURL],
            secret: try FakeMaterial.bytes("apns_key.p8"), keys: keys)
    }

    private func setFCM(_ fake: FakeProviderServer, app: UUID, project: String) throws {
        _ = try world.setCredentials(
            app: app, kind: .fcm, config: ["fcm_base_url": fake.baseURL, "fcm_token_uri": fake.baseURL + "/token"],
            secret: try FakeMaterial.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token", project: project), keys: keys)
    }

    @discardableResult
    private func device(_ token: String, user: String, platform: Platform = .ios, app: UUID? = nil) throws -> UUID {
        let reg = try DeviceRegistration.validate(mode: "live", platform: platform.rawValue, token: token, userID: user,
                                                  apnsEnvironment: platform == .ios ? "production" : nil,
                                                  encryptionPublicKey: .none, platforms: ProviderTable.standard.addressing)
        return try world.register(app ?? appID, reg, appLimit: nil)
    }

    private func send(user: String, app: UUID? = nil, ttl: Int? = nil) throws -> UUID {
        var q = EnqueueRequest(appID: app ?? appID, mode: "live", userIDs: [user])
        q.title = "Hello"
        q.body = "World"
        q.ttlSeconds = ttl
        return try world.enqueue(q).id
    }

    private func count(_ sql: String) throws -> Int { try conn.exec(sql).int(0, 0) }

    private func pauses() throws -> [(scope: String, cause: String, probes: Int, pausedAt: Date, resumeAt: Date?)] {
        let r = try conn.exec("SELECT scope, cause, probes, paused_at, resume_at FROM push_provider_pauses ORDER BY scope")
        return try r.rows.map { (try r.string($0, "scope"), try r.string($0, "cause"), try r.int($0, "probes"),
                                 try r.date($0, "paused_at"), try r.decode($0, "resume_at", as: Date?.self)) }
    }

    /// Probes the schedule allows within `seconds` of a pause's start (20 ms, then doubling to 1.2 s).
    private static func scheduledProbes(within seconds: Double) -> Int {
        var at = thresholds.initialProbeInterval, interval = thresholds.initialProbeInterval, n = 0
        while at <= seconds {
            n += 1
            interval = min(interval * 2, thresholds.maxProbeInterval)
            at += interval
        }
        return n
    }

    // MARK: - APNs stopped under a backlog

    func testAPNsStoppedFiveMinutesUnderABacklogSendsEverythingAfterwardOneProbeAtATimeR_KIND_4() throws {
        let apns = started.keep(try FakeProviderServer.startAPNs(teamID: LiveFakes.teamID, keyID: LiveFakes.keyID, topic: LiveFakes.topic))
        let port = apns.port
        try setAPNs(apns)
        let backlog = 300
        for i in 0..<backlog { try device("ok-\(tag)-\(i)", user: "u\(i)") }
        let ttlDevice = try device("ok-\(tag)-ttl", user: "ttl")

        var ids: [UUID] = []
        for i in 0..<backlog { ids.append(try send(user: "u\(i)")) }
        let short = try send(user: "ttl", ttl: 3)  // 150 s on the compressed clock: it ends during the outage
        let ws = try workers(2, claimLimit: 64)
        apns.stop()  // the outage: nothing listens on the port
        let outageStart = Date()
        running = RunningWorkers(ws)

        XCTAssertTrue(try eventually(timeout: 15) { try pauses().count == 1 }, "the host was never paused")
        let pause = try XCTUnwrap(try pauses().first)
        XCTAssertEqual(pause.scope, PauseScope.host(ofURL: apns.baseURL))
        XCTAssertEqual(pause.cause, PauseCause.connectionFailures.rawValue)

        // Five minutes of outage (6 s), then the fake comes back on the same port.
        Thread.sleep(until: outageStart.addingTimeInterval(300 * Self.scale))
        let outageEnd = Date()
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_deliveries WHERE status = 'sent'"), 0)
        started.keep(try FakeProviderServer.startAPNs(teamID: LiveFakes.teamID, keyID: LiveFakes.keyID, topic: LiveFakes.topic,
                                                      extra: ["--port", String(port)]))
        let back = Date()
        XCTAssertTrue(try eventually(timeout: 60) {
            try count("SELECT count(*)::int FROM push_deliveries WHERE status = 'sent'") == backlog
        }, "not everything was sent after the fake came back")
        let allSent = Date()
        XCTAssertTrue(running?.stop() ?? false)
        running = nil

        // Nothing exhausted its attempts; the hold spent none: at most the failures before detection.
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_deliveries WHERE error_code = 'RETRIES_EXHAUSTED'"), 0)
        XCTAssertLessThanOrEqual(try count("SELECT coalesce(max(failures), 0)::int FROM push_deliveries"),
                                 Self.thresholds.consecutiveFailures)
        // Sent within a bounded time of the return: the next probe (at most 1.2 s) plus the backlog's processing.
        let recovery = allSent.timeIntervalSince(back)
        XCTAssertLessThan(recovery, Self.thresholds.maxProbeInterval + 15, "recovered in \(recovery) s")
        // The notification whose ttl ended during the outage: EXPIRED and refunded (R-SEND-10, R-SEND-9).
        let expired = try delivery(short, ttlDevice)
        XCTAssertEqual(expired.errorCode, "EXPIRED")
        XCTAssertEqual(try ledger(short, ttlDevice), ["charge", "refund"])
        XCTAssertTrue(try ids.allSatisfy { try report($0).status == "sent" })

        // At most one probe in flight across both workers: from the pause on (plus the workers'
        // refresh), every send was a single push, none overlapping another, no more than the schedule allows.
        let pausedKnown = pause.pausedAt.addingTimeInterval(0.2)
        let probes = sendLog.sends.filter { $0.start > pausedKnown && $0.start < outageEnd }
        XCTAssertTrue(probes.allSatisfy { $0.pushes == 1 }, "\(probes.map(\.pushes))")
        for (a, b) in zip(probes, probes.dropFirst()) {
            XCTAssertGreaterThanOrEqual(b.start, a.end, "two probes in flight at once (\(a.worker), \(b.worker))")
        }
        let allowed = Self.scheduledProbes(within: outageEnd.timeIntervalSince(pause.pausedAt)) + 1
        XCTAssertGreaterThanOrEqual(probes.count, 3, "probes kept being sent during the outage")
        XCTAssertLessThanOrEqual(probes.count, allowed, "probes: \(probes.map { ($0.worker, $0.start.timeIntervalSince(pause.pausedAt)) })")

        // Resumed for the fleet, and said so: one pause, one resume, with the cause.
        XCTAssertTrue(try pauses().isEmpty)
        let paused = logs.events("provider.paused")
        XCTAssertEqual(paused.count, 1)
        XCTAssertEqual(paused.first?["cause"] as? String, "connection_failures")
        XCTAssertEqual(paused.first?["scope"] as? String, pause.scope)
        let resumed = logs.events("provider.resumed")
        XCTAssertEqual(resumed.count, 1)
        XCTAssertEqual(resumed.first?["by"] as? String, "probe")
        XCTAssertEqual(ws.reduce(0) { $0 + $1.metrics.providerPauses.value([pause.scope, "connection_failures"]) }, 1)
        XCTAssertEqual(ws.reduce(0) { $0 + $1.metrics.providerResumes.value([pause.scope, "connection_failures"]) }, 1)
        XCTAssertGreaterThan(ws.reduce(0) { $0 + $1.metrics.deliveriesHeld.current }, Double(backlog))
        XCTAssertTrue(ws[0].metrics.render().contains("pushfleet_provider_pauses_total{scope=\"\(pause.scope)\",cause=\"connection_failures\"}")
                      || ws[1].metrics.render().contains("pushfleet_provider_pauses_total{scope=\"\(pause.scope)\",cause=\"connection_failures\"}"))
        print("outage: \(probes.count) probes (schedule allows \(allowed)), recovered \(String(format: "%.2f", recovery)) s after the return")
    }

    // MARK: - FCM quota

    func testFCMQuotaForEveryTokenOfAProjectPausesBothWorkersForThatProjectOnlyR_KIND_4() throws {
        let fcmA = started.keep(try FakeProviderServer.startFCM(clientEmail: LiveFakes.fcmClient, projectID: LiveFakes.fcmProject))
        let fcmB = started.keep(try FakeProviderServer.startFCM(clientEmail: LiveFakes.fcmClient, projectID: "pushfleet-other"))
        let appB = try world.createApp(requireEncryption: false, name: "other-\(tag)")
        try setFCM(fcmA, app: appID, project: LiveFakes.fcmProject)
        try setFCM(fcmB, app: appB, project: "pushfleet-other")
        let n = 40
        var quotaDevices: [UUID] = []
        for i in 0..<n {
            quotaDevices.append(try device("quota-\(tag)-\(i)", user: "a\(i)", platform: .android))
            try device("ok-\(tag)-\(i)", user: "b\(i)", platform: .android, app: appB)
        }
        for i in 0..<n {
            _ = try send(user: "a\(i)")
            _ = try send(user: "b\(i)", app: appB)
        }
        let claimLimit = 4
        let ws = try workers(2, claimLimit: claimLimit)
        running = RunningWorkers(ws)
        XCTAssertTrue(try eventually(timeout: 30) {
            try count("SELECT count(*)::int FROM push_deliveries d JOIN push_notifications n ON n.id = d.notification_id "
                      + "WHERE n.app_id = '\(appB.uuidString.lowercased())' AND d.status = 'sent'") == n
                && count("SELECT count(*)::int FROM push_deliveries d JOIN push_notifications n ON n.id = d.notification_id "
                         + "WHERE n.app_id = '\(appID.uuidString.lowercased())'") == n
        }, "project B was not sent whole, or project A's deliveries were not all held")
        XCTAssertTrue(running?.stop() ?? false)
        running = nil

        let pause = try XCTUnwrap(try pauses().first)
        XCTAssertEqual(try pauses().count, 1, "only project A is paused")
        XCTAssertEqual(pause.scope, PauseScope.fcmProject(LiveFakes.fcmProject))
        XCTAssertEqual(pause.cause, PauseCause.quotaExceeded.rawValue)
        XCTAssertEqual(try XCTUnwrap(pause.resumeAt).timeIntervalSince(pause.pausedAt), 30, accuracy: 0.01, "the fake's Retry-After")
        // Project A: only what went out before each worker learned of the pause; then nothing, from either.
        let aSends = sendLog.sends.filter { $0.appID == appID }
        let aPushes = aSends.reduce(0) { $0 + $1.pushes }
        XCTAssertLessThanOrEqual(aPushes, 2 * (Self.thresholds.quotaDistinctDevices + claimLimit), "project A pushes: \(aPushes)")
        XCTAssertTrue(aSends.allSatisfy { $0.start < pause.pausedAt.addingTimeInterval(0.2) }, "project A sent while paused")
        for w in ws { XCTAssertGreaterThan(w.metrics.deliveriesHeld.current, 0, "\(w.config.owner) held nothing back") }
        // Held back without an attempt, not failed; a 429 is a deferral either way (R-SEND-12).
        let a = try conn.exec("""
            SELECT count(*) FILTER (WHERE d.attempts = 0)::int AS unsent, count(*) FILTER (WHERE d.status <> 'retrying')::int AS final,
                   coalesce(max(d.failures), 0)::int AS failures
              FROM push_deliveries d JOIN push_notifications n ON n.id = d.notification_id WHERE n.app_id = $1::uuid
            """, [.uuid(appID)])
        XCTAssertEqual(try a.int(0, "unsent"), n - aPushes)
        XCTAssertEqual(try a.int(0, "final"), 0)
        XCTAssertEqual(try a.int(0, "failures"), 0)
        XCTAssertEqual(logs.events("provider.paused").first?["cause"] as? String, "quota_exceeded")
    }

    // MARK: - One bad token

    func testOneTokensRepeated5xxDoesNotPauseItsHostR_KIND_4() throws {
        let apns = started.keep(try FakeProviderServer.startAPNs(teamID: LiveFakes.teamID, keyID: LiveFakes.keyID, topic: LiveFakes.topic))
        try setAPNs(apns)
        let bad = try device("fail500-\(tag)", user: "bad")
        for i in 0..<20 { try device("ok-\(tag)-\(i)", user: "u\(i)") }
        let badNotification = try send(user: "bad")
        var ok: [UUID] = []
        for i in 0..<20 { ok.append(try send(user: "u\(i)")) }
        running = RunningWorkers(try workers(2, claimLimit: 4))
        XCTAssertTrue(try eventually(timeout: 30) { try report(badNotification).deliveries.first?.status == "failed" })
        XCTAssertTrue(try eventually(timeout: 30) { try ok.allSatisfy { try report($0).status == "sent" } })
        XCTAssertTrue(running?.stop() ?? false)
        running = nil
        let d = try delivery(badNotification, bad)
        XCTAssertEqual(d.errorCode, "RETRIES_EXHAUSTED", "its own backoff, unchanged (R-SEND-12)")
        XCTAssertEqual(d.failures, Self.retry.maxFailedAttempts)
        XCTAssertTrue(try pauses().isEmpty)
        XCTAssertTrue(logs.events("provider.paused").isEmpty)
    }
}
