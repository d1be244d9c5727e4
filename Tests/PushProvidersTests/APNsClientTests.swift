import Foundation
import PushCore
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

/// APNs client against `scripts/fakes/fake_apns.py` over real HTTP/2 + TLS (PROTOCOLS.md A).
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
                        clock: ProviderClock = SystemProviderClock()) throws -> APNsClient {
        var config = APNsClient.Configuration(teamId: Self.team, keyId: Self.key, topic: topic)
        config.productionBaseURL = production.baseURL
        config.sandboxBaseURL = (sandbox ?? production).baseURL
        config.requestTimeoutMillis = timeoutMillis
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        config.http.maxHostConnections = hostConnections
        config.http.maxStreamsPerConnection = streamsPerConnection
        return try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"), clock: clock)
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
            XCTAssertEqual(answer.messageId, request.apnsId, "A.6: apns-id echoed on 200")
        }
        let second = apns.send((0..<20).map { push("ab\($0)") })
        XCTAssertEqual(second.filter { $0.httpStatus == 200 }.count, 20)
        let pushes = fake.log("push")
        XCTAssertEqual(pushes.count, 220, "the fake saw every push exactly once")
        XCTAssertEqual(Set(pushes.compactMap { $0["jwt_sig"] as? String }).count, 1, "A.5: one JWT reused")
        XCTAssertEqual(Set(batch.map(\.apnsId)).subtracting(pushes.compactMap { $0["apns_id"] as? String }), [])
        XCTAssertEqual(fake.log("connection").count, 1, "A.7: one connection, reused across batches")
        XCTAssertEqual(fake.log("refused").count, 0, "A.5: one request first on the new connection, then the fan-out")
        XCTAssertEqual(apns.http.connectionsOpened, 1)
    }

    func testABatchLargerThanAChunkSpreadsOverConnectionsEachOpenedByOneRequest() throws {
        // Issue 18: chunks of the stream limit on several connections; APNs allows one stream on a
        // new connection until a valid token was seen, so each connection starts with one request.
        let fake = try startFake(["--max-streams", "1000"])
        let apns = try client(production: fake, hostConnections: 3, streamsPerConnection: 20)
        let batch = (0..<150).map { push(String(format: "c%063x", $0), id: Int64($0)) }
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
        // PROTOCOLS A.7: streams above GOAWAY's last-stream-id are refused (libcurl sends them again on
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
        XCTAssertEqual(Set(prod.log("push").compactMap { $0["token"] as? String }), ["p1", "p2"], "A.1")
        XCTAssertEqual(Set(sandbox.log("push").compactMap { $0["token"] as? String }), ["s1", "s2"], "A.1")
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
            XCTAssertEqual(answer.transport, .connectionError, "\(token): A.6 transport failure, retryable")
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

    func testJWTRefreshesAt45MinutesAndAfterExpiredOnlyWhenAtLeast20MinutesOld() throws {
        // The fake refuses tokens older than 3000 s by real time; the client's clock starts 4300 s back.
        let fake = try startFake(["--max-token-age", "3000"])
        let start = Int64(Date().timeIntervalSince1970) - 4300
        let clock = ManualClock(start)
        let apns = try client(production: fake, clock: clock)

        let first = try XCTUnwrap(apns.send([push("j1")]).first)
        XCTAssertEqual(first.reason, "ExpiredProviderToken", "a 0-minute-old token is not replaced (20-minute floor)")
        XCTAssertEqual(fake.log("push").count, 0)

        clock.advance(1500)  // token 25 min old by our clock: past the floor, before the 45-minute refresh
        let second = try XCTUnwrap(apns.send([push("j2")]).first)
        XCTAssertEqual(second.httpStatus, 200, "replaced after ExpiredProviderToken and resent once")

        clock.advance(60)
        XCTAssertEqual(apns.send([push("j3")]).first?.httpStatus, 200)
        clock.advance(2700)
        XCTAssertEqual(apns.send([push("j4")]).first?.httpStatus, 200)
        let iats = fake.log("push").compactMap { ProviderText.int64($0["iat"]) }
        XCTAssertEqual(iats, [start + 1500, start + 1500, start + 1500 + 60 + 2700], "reused, then refreshed at 45 min")
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

    func testDeviceTokenCannotEscapeThePath() {
        XCTAssertEqual(APNsClient.pathSegment("ab/../x?y"), "ab%2F..%2Fx%3Fy")
    }
}
