import Foundation
import PushCore
import PushCrypto
@testable import PushProviders
import PushTestSupport
import XCTest

/// A clock the test moves by hand.
final class ManualClock: ProviderClock, @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    init(_ start: Int64) { now = start }
    func nowUnixSeconds() -> Int64 { lock.lock(); defer { lock.unlock() }; return now }
    func advance(_ seconds: Int64) { lock.lock(); now += seconds; lock.unlock() }
}

/// APNs client against `scripts/fakes/fake_apns.py` over real HTTP/2 + TLS (Apple's "Sending
/// notification requests to APNs", Apple's "Handling notification responses from APNs").
final class APNsClientTests: XCTestCase {
    static let team = "TEAM123456", key = "KEY1234567", topic = "com.example.honkio"
    private let servers = StartedFakes()

    override func tearDown() {
        servers.stopAll()
    }

    private func startFake(_ extra: [String] = []) throws -> FakeProviderServer {
        servers.keep(try .startAPNs(teamID: Self.team, keyID: Self.key, topic: Self.topic,
                                    extra: ["--initial-streams", "1"] + extra))
    }

    private func client(production: FakeProviderServer, sandbox: FakeProviderServer? = nil, topic: String = topic,
                        timeoutMillis: Int = 10_000, hostConnections: Int = 1, streamsPerConnection: Int = 100,
                        clock: ProviderClock = SystemProviderClock(),
                        tokenCache: ProviderTokenCache = InMemoryProviderTokenCache(),
                        refreshSeconds: Int64? = nil) throws -> APNsClient {
        var config = APNsClient.Configuration(teamId: Self.team, keyId: Self.key, topic: topic)
        if let refreshSeconds { config.tokenRefreshSeconds = refreshSeconds }
        config.productionBaseURL = production.baseURL
        config.sandboxBaseURL = (sandbox ?? production).baseURL
        config.requestTimeoutMillis = timeoutMillis
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        config.http.maxHostConnections = hostConnections
        config.http.maxStreamsPerConnection = streamsPerConnection
        return try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"),
                                   tokenCache: tokenCache, clock: clock)
    }

    private func push(_ token: String, _ env: APNsEnvironment = .production, id: Int64 = 1) -> ProviderRequest {
        ProviderRequest(deliveryId: id, deviceToken: token, apnsEnvironment: env,
                        payload: Array(#"{"aps":{"alert":{"title":"t","body":"b"},"mutable-content":1}}"#.utf8),
                        priority: .high, expirationUnixSeconds: 1_900_000_000, collapseId: nil,
                        apnsId: UUID().uuidString.lowercased())
    }

    // MARK: - Tests

    func testTwoHundredSendsShareOneJWTAndOneMultiplexedConnection() throws {
        let fake = try startFake(["--max-streams", "500"])
        let apns = try client(production: fake, hostConnections: 1)
        let batch = (0..<200).map { push(String(format: "%064x", $0), id: Int64($0)) }
        let answers = apns.send(batch)
        XCTAssertEqual(answers.count, 200)
        for (request, answer) in zip(batch, answers) {
            XCTAssertEqual(answer.transport, .response)
            XCTAssertEqual(answer.httpStatus, 200)
            XCTAssertEqual(answer.messageId, request.apnsId, "apns-id echoed on 200")
        }
        let second = apns.send((0..<20).map { push("ab\($0)") })
        XCTAssertEqual(second.filter { $0.httpStatus == 200 }.count, 20)
        let pushes = fake.log("push")
        XCTAssertEqual(pushes.count, 220, "the fake saw every push exactly once")
        XCTAssertEqual(Set(pushes.compactMap { $0["jwt_sig"] as? String }).count, 1, "token auth: one JWT reused")
        XCTAssertEqual(Set(batch.map(\.apnsId)).subtracting(pushes.compactMap { $0["apns_id"] as? String }), [])
        XCTAssertEqual(fake.log("connection").count, 1, "one connection, reused across batches")
        XCTAssertEqual(fake.log("refused").count, 0, "one request first on the new connection, then the fan-out")
        XCTAssertEqual(apns.http.connectionsOpened, 1)
    }

    func testABatchLargerThanAChunkSpreadsOverConnectionsEachOpenedByOneRequest() throws {
        // Issue 18: chunks of the stream limit on several connections; APNs allows one stream on a
        // new connection until a valid token was seen, so each connection starts with one request.
        let fake = try startFake(["--max-streams", "1000"])
        let apns = try client(production: fake, hostConnections: 3, streamsPerConnection: 20)
        // `slow` tokens (answered after 150 ms) keep the first chunks in flight while the next
        // connection warms up, whatever the speed of the client.
        let batch = (0..<150).map { push(String(format: "slow%060x", $0), id: Int64($0)) }
        let answers = apns.send(batch)
        XCTAssertEqual(answers.map(\.httpStatus), [Int?](repeating: 200, count: 150), "\(answers.compactMap(\.rawDetail))")
        XCTAssertEqual(fake.log("connection").count, 3, "three connections for a batch of 150 in chunks of 20")
        XCTAssertEqual(fake.log("refused").count, 0, "no connection got a burst before its first answer")
        let most = apns.http.statistics.maxInFlightPerHost
        XCTAssertGreaterThan(most, 40, "the third connection carried requests while the first two were full")
        XCTAssertLessThanOrEqual(most, 60, "never more than 3 connections x 20 streams")
        let ids = fake.log("push").compactMap { $0["apns_id"] as? String }
        XCTAssertEqual(ids.count, 150)
        XCTAssertEqual(Set(ids), Set(batch.map(\.apnsId)), "every push reached the fake exactly once")
        XCTAssertEqual(apns.send((0..<60).map { push("d\($0)") }).filter { $0.httpStatus == 200 }.count, 60)
        XCTAssertEqual(fake.log("connection").count, 3, "the next batch reuses the three warm connections")
    }

    func testAGoawayInTheMiddleOfABatchLosesNoAnswerAndTheRestIsSentOnce() throws {
        // RFC 9113 §6.8: streams above GOAWAY's last-stream-id are refused (libcurl sends them again on
        // a new connection); the GOAWAY'd one is a connection error the worker retries (RetryPolicy).
        let fake = try startFake()
        let apns = try client(production: fake)
        XCTAssertEqual(apns.send([push("warm")]).first?.httpStatus, 200)
        var batch = (0..<40).map { push("g-ok-\($0)", id: Int64($0)) }
        batch.insert(push("goaway-mid", id: 99), at: 20)
        let answers = apns.send(batch)
        XCTAssertEqual(answers.count, 41)
        XCTAssertEqual(answers[20].transport, .connectionError, "GOAWAY without an answer: retryable")
        var failed: [ProviderRequest] = []
        for (request, answer) in zip(batch, answers) where request.deviceToken != "goaway-mid" {
            if answer.httpStatus == 200 { continue }
            XCTAssertEqual(answer.transport, .connectionError, "\(request.deviceToken): \(answer)")
            failed.append(request)
        }
        XCTAssertEqual(apns.send(failed).filter { $0.httpStatus == 200 }.count, failed.count, "the rest go through after")
        let ids = fake.log("push").compactMap { $0["apns_id"] as? String }
        let okIDs = batch.filter { $0.deviceToken != "goaway-mid" }.map(\.apnsId)
        XCTAssertEqual(ids.filter { okIDs.contains($0) }.count, 40, "each push accepted once: none lost, none twice")
        XCTAssertEqual(Set(ids).isSuperset(of: okIDs), true)
    }

    func testHeadersCarryTopicPushTypePriorityExpirationAndCollapseIdOnlyWhenSet() throws {
        let fake = try startFake()
        let apns = try client(production: fake)
        var withCollapse = push("c1")
        withCollapse.collapseId = "thread-7"
        withCollapse.priority = .normal
        let answers = apns.send([withCollapse, push("c2")])
        XCTAssertEqual(answers.map(\.httpStatus), [200, 200])
        let log = Dictionary(uniqueKeysWithValues: fake.log("push").map { ($0["token"] as? String ?? "", $0) })
        XCTAssertEqual(log["c1"]?["collapse_id"] as? String, "thread-7")
        XCTAssertTrue(log["c2"]?["collapse_id"] is NSNull, "apns-collapse-id omitted when unset")
        XCTAssertEqual(log["c1"]?["priority"] as? String, "5", "R-SEND-10: normal -> 5")
        XCTAssertEqual(log["c2"]?["priority"] as? String, "10", "R-SEND-10: high -> 10")
        XCTAssertEqual(log["c1"]?["push_type"] as? String, "alert")
        XCTAssertEqual(log["c1"]?["topic"] as? String, Self.topic)
        XCTAssertEqual(log["c1"]?["expiration"] as? String, "1900000000")
        XCTAssertEqual(log["c1"]?["payload"] as? String, String(decoding: withCollapse.payload, as: UTF8.self))
    }

    func testSandboxAndProductionTokensReachTheirOwnHosts() throws {
        let prod = try startFake(), sandbox = try startFake()
        let apns = try client(production: prod, sandbox: sandbox)
        let answers = apns.send([push("p1"), push("s1", .sandbox), push("p2"), push("s2", .sandbox)])
        XCTAssertEqual(answers.map(\.httpStatus), [200, 200, 200, 200])
        XCTAssertEqual(Set(prod.log("push").compactMap { $0["token"] as? String }), ["p1", "p2"], "production host")
        XCTAssertEqual(Set(sandbox.log("push").compactMap { $0["token"] as? String }), ["s1", "s2"], "sandbox host")
    }

    func testEveryScenarioMapsToItsRawProviderAnswer() throws {
        let fake = try startFake()
        let apns = try client(production: fake)
        let tokens = ["ok1", "unregistered1", "baddevice1", "notfortopic1", "toomany1", "fail5001", "unavailable1",
                      "garbage1", "truncated1", "empty1", "huge1", "reset1"]
        let answers = apns.send(tokens.map { push($0) })
        let by = Dictionary(uniqueKeysWithValues: zip(tokens, answers))
        XCTAssertEqual(by["ok1"]?.httpStatus, 200)
        XCTAssertEqual(by["unregistered1"], ProviderAnswer(transport: .response, httpStatus: 410, reason: "Unregistered",
                                                           timestampMillis: 1_700_000_000_000), "R-PRV-1 input")
        XCTAssertEqual(by["baddevice1"]?.reason, "BadDeviceToken")
        XCTAssertEqual(by["baddevice1"]?.httpStatus, 400)
        XCTAssertEqual(by["notfortopic1"]?.reason, "DeviceTokenNotForTopic", "R-PRV-2 input")
        XCTAssertEqual(by["toomany1"]?.httpStatus, 429)
        XCTAssertEqual(by["toomany1"]?.reason, "TooManyRequests")
        XCTAssertEqual(by["toomany1"]?.retryAfterSeconds, 7)
        XCTAssertEqual(by["fail5001"]?.reason, "InternalServerError")
        XCTAssertEqual(by["unavailable1"]?.httpStatus, 503)
        XCTAssertEqual(by["unavailable1"]?.reason, "ServiceUnavailable")
        for garbage in ["garbage1", "truncated1", "empty1", "huge1"] {
            let a = try XCTUnwrap(by[garbage])
            XCTAssertEqual(a.transport, .response, garbage)
            XCTAssertNil(a.reason, "\(garbage): no reason invented")
            XCTAssertTrue(a.rawDetail?.hasPrefix("unparseable body") ?? false, "\(garbage): \(a.rawDetail ?? "nil")")
            XCTAssertLessThanOrEqual(a.rawDetail?.count ?? 0, APNsAnswerParser.rawDetailLimit)
        }
        XCTAssertEqual(by["garbage1"]?.httpStatus, 500)
        XCTAssertTrue(by["huge1"]?.rawDetail?.contains("more than 65536") ?? false, "body capped at 64 KiB")
        XCTAssertEqual(by["reset1"]?.transport, .connectionError, "RST_STREAM is a transport failure")
        XCTAssertNotNil(by["reset1"]?.rawDetail)
        XCTAssertEqual(fake.log("push").count, 1, "only the 200 was recorded")
    }

    func testGoawayAndDroppedConnectionAreConnectionErrorsAndTheClientRecovers() throws {
        let fake = try startFake()
        let apns = try client(production: fake)
        XCTAssertEqual(apns.send([push("warm")]).first?.httpStatus, 200)
        for token in ["goaway-1", "drop-1"] {
            let answer = try XCTUnwrap(apns.send([push(token)]).first)
            XCTAssertEqual(answer.transport, .connectionError, "\(token): transport failure, retryable")
            XCTAssertNil(answer.httpStatus)
            XCTAssertEqual(apns.send([push("after-\(token)")]).first?.httpStatus, 200, "new connection after \(token)")
        }
    }

    func testWrongTopicIsTopicDisallowed() throws {
        let fake = try startFake()
        let apns = try client(production: fake, topic: "com.other.app")
        let answer = try XCTUnwrap(apns.send([push("t1")]).first)
        XCTAssertEqual(answer.httpStatus, 400)
        XCTAssertEqual(answer.reason, "TopicDisallowed", "R-PRV-3 input")
    }

    func testHangingRequestTimesOutWhileTheRestOfTheBatchSucceeds() throws {
        let fake = try startFake()
        let apns = try client(production: fake, timeoutMillis: 1_500)
        let started = Date()
        let answers = apns.send([push("ok-a"), push("hang-1"), push("ok-b"), push("ok-c")])
        XCTAssertEqual(answers[1].transport, .timeout, "no answer before the deadline")
        XCTAssertNil(answers[1].httpStatus)
        XCTAssertEqual([answers[0], answers[2], answers[3]].map(\.httpStatus), [200, 200, 200])
        XCTAssertLessThan(Date().timeIntervalSince(started), 6, "deadline enforced")
        XCTAssertEqual(apns.send([push("ok-d")]).first?.httpStatus, 200, "client usable after a timeout")
    }

    func testJWTIsReusedThenRefreshedAt45Minutes() throws {
        let fake = try startFake()
        let start = Int64(Date().timeIntervalSince1970) - 2800  // every token stays under the fake's hour
        let clock = ManualClock(start)
        let apns = try client(production: fake, clock: clock)
        XCTAssertEqual(apns.send([push("j1")]).first?.httpStatus, 200)
        clock.advance(2699)
        XCTAssertEqual(apns.send([push("j2")]).first?.httpStatus, 200)
        clock.advance(1)
        XCTAssertEqual(apns.send([push("j3")]).first?.httpStatus, 200)
        let iats = fake.log("push").compactMap { ProviderText.int64($0["iat"]) }
        XCTAssertEqual(iats, [start, start, start + 2700], "reused, then refreshed at 45 min")
    }

    /// Apple's "Establishing a token-based connection to APNs": voluntary refreshes never come sooner than 20 minutes, whatever `tokenRefreshSeconds` says.
    func testVoluntaryRefreshKeepsTheTwentyMinuteFloor() throws {
        let fake = try startFake()
        let start = Int64(Date().timeIntervalSince1970) - 1300
        let clock = ManualClock(start)
        let apns = try client(production: fake, clock: clock, refreshSeconds: 60)
        XCTAssertEqual(apns.send([push("f1")]).first?.httpStatus, 200)
        clock.advance(1199)
        XCTAssertEqual(apns.send([push("f2")]).first?.httpStatus, 200)
        clock.advance(1)
        XCTAssertEqual(apns.send([push("f3")]).first?.httpStatus, 200)
        let iats = fake.log("push").compactMap { ProviderText.int64($0["iat"]) }
        XCTAssertEqual(iats, [start, start, start + 1200])
    }

    /// Issue 11: a JWT that APNs calls expired is replaced at once, even one younger than the
    /// 20-minute floor of voluntary refreshes, and the refused requests are resent with the new one.
    func testExpiredProviderTokenIsReplacedAtOnceWhateverItsAgeAndTheRequestsResent() throws {
        let fake = try startFake(["--max-token-age", "600"])
        let now = Int64(Date().timeIntervalSince1970)
        let cache = InMemoryProviderTokenCache()
        let apns = try client(production: fake, tokenCache: cache)
        // Another worker's JWT, minted 700 s ago: before its 45-minute refresh, past the fake's 600 s.
        let signer = try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_key.p8"), keyId: Self.key)
        let old = try signer.sign(header: #"{"alg":"ES256","kid":"\#(Self.key)"}"#, claims: #"{"iss":"\#(Self.team)","iat":\#(now - 700)}"#)
        _ = try cache.currentToken(for: apns.tokenCacheKey, now: now) { _ in
            ProviderToken(value: old, issuedAt: now - 700, refreshAt: now - 700 + 2700)
        }
        let answers = apns.send([push("e1"), push("e2")])
        XCTAssertEqual(answers.map(\.httpStatus), [200, 200], "\(answers)")
        let refused = fake.log("jwt_refused")
        XCTAssertEqual(refused.map { $0["reason"] as? String }, ["ExpiredProviderToken", "ExpiredProviderToken"])
        XCTAssertEqual(Set(refused.compactMap { $0["jwt"] as? String }), [old])
        let sent = fake.log("push")
        XCTAssertEqual(sent.count, 2)
        let fresh = try XCTUnwrap(sent.first?["jwt"] as? String)
        XCTAssertNotEqual(fresh, old)
        XCTAssertEqual(Set(sent.compactMap { $0["jwt"] as? String }), [fresh], "one replacement for the whole batch")
        XCTAssertGreaterThanOrEqual(ProviderText.int64(sent.first?["iat"]) ?? 0, now)
        let stored = try cache.currentToken(for: apns.tokenCacheKey, now: now + 1) { _ in
            XCTFail("the replacement is stored")
            return ProviderToken(value: "", issuedAt: 0, refreshAt: 0)
        }
        XCTAssertEqual(stored.value, fresh)
    }

    /// Issue 11: the cache key names the signing key, not only the (public) team and key ids.
    func testTokenCacheKeyNamesTheSigningKey() throws {
        var config = APNsClient.Configuration(teamId: Self.team, keyId: Self.key, topic: Self.topic)
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        let right = try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"))
        let again = try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"))
        let wrong = try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_other.p8"))
        let fingerprint = try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_key.p8"), keyId: Self.key).publicKeyFingerprint
        XCTAssertEqual(right.tokenCacheKey, "apns:\(Self.team):\(Self.key):\(fingerprint)")
        XCTAssertEqual(again.tokenCacheKey, right.tokenCacheKey)
        XCTAssertNotEqual(wrong.tokenCacheKey, right.tokenCacheKey)
    }

    /// R-KIND-4: production and sandbox are paused apart, each by its host's origin.
    func testPauseScopesAreEachEnvironmentsHostR_KIND_4() throws {
        var config = APNsClient.Configuration(teamId: Self.team, keyId: Self.key, topic: Self.topic)
        config.sandboxBaseURL = "https://127.0.0.1:4443/"
        let apns = try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"))
        XCTAssertEqual(apns.pauseScopes(for: push("x1")), ["host https://api.push.apple.com"])
        XCTAssertEqual(apns.pauseScopes(for: push("x2", .sandbox)), ["host https://127.0.0.1:4443"])
    }

    func testUnreachableHostIsNotSentAndUnknownCAIsRefused() throws {
        let fake = try startFake()
        var config = APNsClient.Configuration(teamId: Self.team, keyId: Self.key, topic: Self.topic)
        config.productionBaseURL = "https://127.0.0.1:1"
        config.sandboxBaseURL = fake.baseURL  // system CA store: the fake's test CA is not trusted
        let apns = try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"))
        let answers = apns.send([push("x1"), push("x2", .sandbox)])
        XCTAssertEqual(answers.map(\.transport), [.notSent, .notSent], "connect refused; certificate not verified")
        XCTAssertEqual(fake.log("push").count, 0, "verification is never switched off")
    }

    /// R-KIND-1: a background push of a `high` notification goes out as `apns-push-type: background`
    /// with `apns-priority: 5`, which the fake accepts; the same request with priority 10, or with an
    /// alert in its `aps`, is refused by the fake (so the acceptance above is a check, not a pass-through).
    func testBackgroundPushHeadersAndWhatTheFakeRefuses() throws {
        let fake = try startFake()
        let cache = InMemoryProviderTokenCache()
        let apns = try client(production: fake, tokenCache: cache)
        var request = push("bg1")
        request.pushType = .background
        request.priority = .high
        request.payload = Array(#"{"aps":{"content-available":1},"data":{"sync":"1"}}"#.utf8)
        XCTAssertEqual(apns.send([request]).map(\.httpStatus), [200])
        let logged = try XCTUnwrap(fake.log("push").first)
        XCTAssertEqual(logged["push_type"] as? String, "background")
        XCTAssertEqual(logged["priority"] as? String, "5", "Apple refuses 10 for a background push")

        let token = try cache.currentToken(for: apns.tokenCacheKey, now: Int64(Date().timeIntervalSince1970)) { _ in
            throw PushError(.providerError, "the JWT should be cached by now")
        }.value
        func status(_ change: (inout HTTPRequest) -> Void) throws -> (Int, String) {
            var http = apns.httpRequest(for: request, token: token)
            change(&http)
            guard case .response(let r) = try XCTUnwrap(apns.http.perform([http]).first) else { return (0, "") }
            return (r.status, String(decoding: r.body, as: UTF8.self))
        }
        let ten = try status { r in r.headers = r.headers.map { $0.0 == "apns-priority" ? ($0.0, "10") : $0 } }
        XCTAssertEqual(ten.0, 400)
        XCTAssertTrue(ten.1.contains("BadPriority"), ten.1)
        let alert = try status { r in r.body = Array(#"{"aps":{"alert":{"title":"t"},"content-available":1}}"#.utf8) }
        XCTAssertEqual(alert.0, 400)
        XCTAssertTrue(alert.1.contains("FakeBadPayload"), alert.1)
        // And an alert whose critical interruption level lacks the critical sound dictionary.
        var critical = push("al1")
        critical.payload = Array(#"{"aps":{"alert":{"title":"t"},"interruption-level":"critical","sound":"default"}}"#.utf8)
        XCTAssertEqual(apns.send([critical]).map(\.httpStatus), [400])
        XCTAssertEqual(fake.log("bad_payload").count, 2)
    }

    func testDeviceTokenCannotEscapeThePath() {
        XCTAssertEqual(APNsClient.pathSegment("ab/../x?y"), "ab%2F..%2Fx%3Fy")
    }
}
