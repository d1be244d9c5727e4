import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Base for live-mode integration tests: a fresh world per test with one app and fresh credential
/// keys (`LiveRouterTestCase`), the three fakes shared by the test class, and a worker whose router is
/// a `LiveRouter`.
class LiveTestCase: LiveRouterTestCase {
    nonisolated(unsafe) static var sharedFakes: Result<LiveFakes, Error>?

    var fakes: LiveFakes!
    /// Distinguishes this test's tokens in the fakes' logs (the fakes serve the whole class).
    let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)

    override func appName() -> String { "live-\(tag)" }

    override class func tearDown() {
        if case .success(let f)? = sharedFakes { f.stop() }
        sharedFakes = nil
        super.tearDown()
    }

    override func setUpWithError() throws {
        if Self.sharedFakes == nil { Self.sharedFakes = Result { try LiveFakes() } }
        fakes = try Self.sharedFakes!.get()
        try super.setUpWithError()
        try makeWorker(apnsTimeoutMillis: 10_000)
    }

    /// (Re)builds the router and worker (batch size 500, a fixed retry policy, jitter-free backoff is not needed:
    /// tests fast-forward retries with `dueNow()`).
    func makeWorker(apnsTimeoutMillis: Int, batchSize: Int = 500) throws {
        try makeRouterAndWorker(owner: "live-test", batchSize: batchSize) { rc in
            rc.apnsRequestTimeoutMillis = apnsTimeoutMillis
            rc.fcmRequestTimeoutMillis = apnsTimeoutMillis
        }
    }

    // MARK: - Credentials

    /// The APNs set of `app` (default: the test's app) for the fakes, with the `.p8` in `p8File`.
    @discardableResult
    func setAPNs(topic: String = LiveFakes.topic, app: UUID? = nil, p8File: String = "apns_key.p8") throws -> CredentialSummary {
        try world.setCredentials(
            app: app ?? appID, kind: .apns,
            config: ["team_id": LiveFakes.teamID, "key_id": LiveFakes.keyID, "topic": topic,
                     "apns_base_url_production": fakes.apns.baseURL, "apns_base_url_sandbox": fakes.sandbox.baseURL],
            secret: try FakeMaterial.bytes(p8File), keys: keys)
    }

    /// The FCM set of `app` (default: the test's app) for the fake, its private key from `keyFile`.
    @discardableResult
    func setFCM(app: UUID? = nil, keyFile: String = "sa_key.pem") throws -> CredentialSummary {
        try world.setCredentials(
            app: app ?? appID, kind: .fcm, config: ["fcm_base_url": fakes.fcm.baseURL, "fcm_token_uri": fakes.fcm.baseURL + "/token"],
            secret: try FakeMaterial.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token", keyFile: keyFile), keys: keys)
    }

    // MARK: - Devices and notifications

    /// Registers a live device for `user` whose token is `prefix-<tag>-<n>` (the prefix picks the fake's answer).
    func device(_ prefix: String, platform: Platform = .ios, environment: APNsEnvironment = .production,
                user: String = "u1", n: Int = 0, app: UUID? = nil) throws -> (id: UUID, token: String) {
        let token = "\(prefix)-\(tag)-\(n)"
        let reg = try DeviceRegistration.validate(mode: "live", platform: platform.rawValue, token: token, userID: user,
                                                  apnsEnvironment: platform == .ios ? environment.rawValue : nil,
                                                  encryptionPublicKey: .none, platforms: ProviderTable.standard.addressing)
        return (try world.register(app ?? appID, reg, appLimit: nil), token)
    }

    func send(users: [String] = ["u1"], title: String = "Hello", collapseKey: String? = nil,
              priority: String? = nil, app: UUID? = nil) throws -> UUID {
        var q = EnqueueRequest(appID: app ?? appID, mode: "live", userIDs: users)
        q.title = title
        q.body = "World"
        q.collapseKey = collapseKey
        q.priority = priority
        return try world.enqueue(q).id
    }

    /// The fake's `push` log lines for tokens of this test.
    func pushes(_ server: FakeProviderServer, kind: String = "push") -> [[String: Any]] {
        server.log(kind).filter { line in
            let token = (line["token"] as? String) ?? ""
            return token.contains("-\(tag)-")
        }
    }
}
