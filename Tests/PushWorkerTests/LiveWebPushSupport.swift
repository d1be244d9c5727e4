import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// `scripts/fakes/fake_webpush.py serve` (`FakeWebPushService`) with a pool of subscriptions per
/// scenario (the subscriptions file is read once, at start): each test takes fresh ones, so its log
/// lines are its own.
final class LiveWebPushFake {
    /// Scenarios with a pool, and how many subscriptions each holds.
    static let scenarios = ["ok", "gone", "notfound", "toolarge", "slow", "err", "flaky", "redirect"]
    static let poolSize = 24
    /// Seconds the fake's 429 asks to wait (`Retry-After`).
    static let retryAfter = 7

    /// The VAPID key some `ok` subscriptions were made with (the fake refuses any other key for them).
    let pinnedVAPID: VAPIDKeys
    private let service: FakeWebPushService
    private let lock = NSLock()
    private var pool: [String: [FakeWebPushSubscription]]

    private init(service: FakeWebPushService, pinnedVAPID: VAPIDKeys, pool: [String: [FakeWebPushSubscription]]) {
        self.service = service
        self.pinnedVAPID = pinnedVAPID
        self.pool = pool
    }

    /// The fake's port on 127.0.0.1.
    var port: Int { service.port }

    /// Starts the fake, waiting (≤ 15 s) for its port.
    static func start() throws -> LiveWebPushFake {
        let pinned = try VAPIDKeys.generate()
        var pool: [String: [FakeWebPushSubscription]] = [:]
        for scenario in scenarios {
            pool[scenario] = try (0..<poolSize).map { _ in try FakeWebPushSubscription.make(scenario: scenario) }
        }
        pool["pinned"] = try (0..<poolSize).map { _ in
            try FakeWebPushSubscription.make(scenario: "ok", vapidPublicKey: pinned.publicKeyBase64URL)
        }
        let service = try FakeWebPushService.start(pool.values.flatMap { $0 }, retryAfter: retryAfter)
        return LiveWebPushFake(service: service, pinnedVAPID: pinned, pool: pool)
    }

    /// Stops the subprocess (idempotent).
    func stop() { service.stop() }

    /// An unused subscription of `scenario` (`ok`, `gone`, ..., or `pinned`: an `ok` one bound to `pinnedVAPID`).
    func take(_ scenario: String) throws -> FakeWebPushSubscription {
        try lock.withLock {
            guard var list = pool[scenario], !list.isEmpty else {
                throw FakeProcessError(code: "pool_empty", "no unused \(scenario) subscription left (raise poolSize)")
            }
            let s = list.removeLast()
            pool[scenario] = list
            return s
        }
    }

    /// The endpoint URL of `path` on this fake, under `host`.
    func endpoint(_ path: String, host: String = "127.0.0.1") -> String { service.endpoint(path, host: host) }

    /// Requests the fake received for `path`, in order (one object per log line).
    func log(path: String) -> [[String: Any]] { service.log(path: path) }
}

/// Base for the live Web Push tests: a fresh world per test with one app, fresh credential keys
/// (`LiveRouterTestCase`), the class's fake Web Push service, and a worker whose `LiveRouter` builds
/// Web Push clients through the provider table's Web Push descriptor and trusts the fakes' CA.
class LiveWebPushTestCase: LiveRouterTestCase {
    nonisolated(unsafe) static var sharedFake: Result<LiveWebPushFake, Error>?
    static let subject = "mailto:ops@example.com"

    var fake: LiveWebPushFake!
    /// The VAPID keys `setVAPID()` stores by default (not the fake's pinned key).
    var vapid: VAPIDKeys!

    override func appName() -> String { "web-\(UInt32.random(in: 0...UInt32.max))" }

    override class func tearDown() {
        if case .success(let f)? = sharedFake { f.stop() }
        sharedFake = nil
        super.tearDown()
    }

    override func setUpWithError() throws {
        if Self.sharedFake == nil { Self.sharedFake = Result { try LiveWebPushFake.start() } }
        fake = try Self.sharedFake!.get()
        try super.setUpWithError()
        vapid = try VAPIDKeys.generate()
        try makeWorker()
    }

    /// (Re)builds the router and worker. `allowLoopback` = the router's Web Push loopback switch.
    func makeWorker(allowLoopback: Bool = true, resolver: WebPushResolver = SystemWebPushResolver(),
                    retryPolicy: RetryPolicy = .default) throws {
        try makeRouterAndWorker(owner: "web-live-test", retryPolicy: retryPolicy) { rc in
            rc.allowLoopback = allowLoopback
            rc.resolver = resolver
        }
    }

    // MARK: - Credentials

    /// Stores a VAPID set (`subject`, the PEM of `keys`) as the app's `webpush` credentials.
    @discardableResult
    func setVAPID(_ keys: VAPIDKeys? = nil, subject: String = LiveWebPushTestCase.subject) throws -> CredentialSummary {
        try world.setCredentials(app: appID, kind: .webpush, config: ["subject": subject],
                                 secret: Array(try (keys ?? vapid).privateKeyPEM().utf8), keys: self.keys)
    }

    // MARK: - Devices and notifications

    /// Registers a web device for `user` through `DeviceRegistry` (registration admits loopback
    /// endpoints, as tests against a local fake must).
    func webDevice(_ s: FakeWebPushSubscription, user: String = "u1", mode: String = "live",
                   host: String = "127.0.0.1") throws -> UUID {
        try webDevice(endpoint: fake.endpoint(s.path, host: host), p256dh: s.p256dh, auth: s.auth, user: user, mode: mode)
    }

    func webDevice(endpoint: String, p256dh: [UInt8], auth: [UInt8], user: String = "u1", mode: String = "live") throws -> UUID {
        let reg = try DeviceRegistration.validate(
            mode: mode, platform: "web", token: nil, userID: user, apnsEnvironment: nil, encryptionPublicKey: .none,
            subscriptionEndpoint: endpoint, subscriptionP256dh: Base64URL.encode(p256dh),
            subscriptionAuth: Base64URL.encode(auth), platforms: ProviderTable.standard.addressing, allowLoopbackEndpoints: true)
        return try world.register(appID, reg, appLimit: nil)
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
        return try world.enqueue(q).id
    }

    /// Enqueues a live notification whose only content is `title` (plaintext `{"title":"<title>"}`).
    func send(title: String, users: [String] = ["u1"]) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: "live", userIDs: users)
        q.title = title
        return try world.enqueue(q).id
    }

    /// R-ENC-3: the sealed plaintext of `send()`'s content, byte for byte (keys in rule order, `data`
    /// in the client's order, raw UTF-8, `/` unescaped).
    static let plaintext = #"{"title":"Hello","body":"World","data":{"order":42,"url":"/o/42","é":"ü"},"badge":3,"sound":"ping","thread_id":"t-1"}"#

    func failures(_ device: UUID) throws -> Int { try XCTUnwrap(try world.deliveries(device: device).first).failures }
}
