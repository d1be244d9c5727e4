import Foundation
import PushCore
@testable import PushProviders
import PushTestSupport
import XCTest

/// The APNs client over `NGHTTP2Client` where the transport's own behaviour shows (RFC 9113;
/// Apple's "Sending notification requests to APNs"): the stream limit APNs raises after the first
/// valid token, GOAWAY's last-stream-id, a TCP reset mid-batch, a server that stops answering, and
/// the libcurl fallback. Scenario tokens: `slow` (answered after 150 ms), `drain` (graceful GOAWAY,
/// last stream = its own), `rst`, `freeze` (scripts/fakes/fake_apns.py).
final class APNsTransportTests: XCTestCase {
    static let team = "TEAM123456", key = "KEY1234567", topic = "com.example.honkio"
    private let servers = StartedFakes()

    override func tearDown() {
        servers.stopAll()
    }

    private func startFake(_ extra: [String] = []) throws -> FakeProviderServer {
        servers.keep(try .startAPNs(teamID: Self.team, keyID: Self.key, topic: Self.topic, extra: ["--initial-streams", "1"] + extra))
    }

    private func client(_ fake: FakeProviderServer, timeoutMillis: Int = 10_000,
                        tune: (inout HTTPClientConfiguration) -> Void = { _ in }) throws -> APNsClient {
        var config = APNsClient.Configuration(teamId: Self.team, keyId: Self.key, topic: Self.topic)
        config.productionBaseURL = fake.baseURL
        config.sandboxBaseURL = fake.baseURL
        config.requestTimeoutMillis = timeoutMillis
        config.http = HTTPClientConfiguration(caFile: try FakeMaterial.file("ca.pem"))
        tune(&config.http)
        return try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"))
    }

    private func push(_ token: String) -> ProviderRequest {
        ProviderRequest(deliveryId: 1, deviceToken: token, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8),
                        apnsId: UUID().uuidString.lowercased())
    }

    private func pushes(_ fake: FakeProviderServer) -> [String: [[String: Any]]] {
        Dictionary(grouping: fake.log("push"), by: { $0["apns_id"] as? String ?? "" })
    }

    func testTheStreamLimitTheServerRaisesAfterTheFirstAnswerIsUsedInFull() throws {
        // One stream until a valid token, then 250 (more than libcurl's assumed 100): the first request
        // goes alone, then 250 at a time; slow answers keep them in flight together.
        let fake = try startFake(["--max-streams", "250"])
        let apns = try client(fake)
        let batch = (0..<400).map { push("slow-\($0)") }
        let answers = apns.send(batch)
        XCTAssertEqual(answers.filter { $0.httpStatus == 200 }.count, 400, "\(Set(answers.compactMap(\.rawDetail)))")
        let stats = apns.http.statistics
        XCTAssertEqual(stats.largestServerStreamLimit, 250, "the raised SETTINGS_MAX_CONCURRENT_STREAMS was read")
        XCTAssertEqual(stats.maxInFlightPerHost, 250, "and used in full, never more")
        XCTAssertEqual(fake.log("refused").count, 0, "no stream above the limit in force")
        XCTAssertEqual(fake.log("connection").count, 1)
        XCTAssertEqual(pushes(fake).count, 400)
    }

    func testAConfiguredCapBelowTheServersLimitIsKept() throws {
        let fake = try startFake(["--max-streams", "250"])
        let apns = try client(fake) { $0.maxStreamsPerConnection = 30 }
        XCTAssertEqual(apns.send((0..<100).map { push("slow-\($0)") }).filter { $0.httpStatus == 200 }.count, 100)
        XCTAssertEqual(apns.http.statistics.maxInFlightPerHost, 30)
    }

    func testGoawayAnswersTheStreamsBelowItsLastStreamAndSendsTheOthersAgain() throws {
        // RFC 9113 §6.8: streams at or below last-stream-id may still be answered; those above were
        // not processed and are safe to send again. `slow-below` is answered 150 ms after the GOAWAY.
        let fake = try startFake()
        let apns = try client(fake)
        XCTAssertEqual(apns.send([push("warm")]).first?.httpStatus, 200)
        let batch = [push("slow-below")] + (0..<9).map { push("ok-\($0)") } + [push("drain-1")]
            + (0..<20).map { push("above-\($0)") }
        let answers = apns.send(batch)
        XCTAssertEqual(answers.map(\.httpStatus), [Int?](repeating: 200, count: batch.count), "\(answers.compactMap(\.rawDetail))")
        let log = pushes(fake)
        XCTAssertTrue(batch.allSatisfy { log[$0.apnsId]?.count == 1 }, "every push accepted exactly once")
        let firstConnection = ProviderText.int64(log[batch[0].apnsId]?.first?["conn"])
        XCTAssertEqual(firstConnection, 1, "the stream below last-stream-id finished on the old connection")
        XCTAssertEqual(ProviderText.int64(log[batch[10].apnsId]?.first?["conn"]), 1, "so did the GOAWAY's own stream")
        XCTAssertTrue(batch[11...].allSatisfy { ProviderText.int64(log[$0.apnsId]?.first?["conn"]) == 2 },
                      "the streams above it went out again on a new connection")
        XCTAssertEqual(apns.http.statistics.streamsRetried, 20)
        XCTAssertEqual(fake.log("connection").count, 2)
    }

    func testAConnectionResetMidBatchFailsOnlyTheUnansweredStreamsAtOnce() throws {
        // 10 answered at once, 10 slow ones still in flight when the server's TCP RST comes (50 ms in):
        // those may have been processed, so they are connection errors (RetryPolicy decides), never
        // sent again by the transport, and nothing waits for the deadline.
        let fake = try startFake()
        let apns = try client(fake)
        XCTAssertEqual(apns.send([push("warm")]).first?.httpStatus, 200)
        let ok = (0..<10).map { push("ok-\($0)") }, slow = (0..<10).map { push("slow-\($0)") }
        let started = Date()
        let answers = apns.send(ok + slow + [push("rst-1")])
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "a reset ends the streams at once, not at their deadline")
        XCTAssertEqual(answers[..<10].map(\.httpStatus), [Int?](repeating: 200, count: 10), "answered before the reset")
        XCTAssertEqual(answers[10...].map(\.transport), [ProviderAnswer.Transport](repeating: .connectionError, count: 11))
        XCTAssertTrue(answers[10...].allSatisfy { $0.rawDetail?.contains("recv") ?? false }, "\(answers[10].rawDetail ?? "")")
        XCTAssertEqual(pushes(fake).count, 11, "warm + the 10 answered: the slow ones never finished")
        XCTAssertEqual(apns.send(slow).filter { $0.httpStatus == 200 }.count, 10, "sent again by the caller, on a new connection")
        XCTAssertEqual(fake.log("connection").count, 2)
    }

    func testAServerThatStopsAnsweringTimesOutAndItsConnectionIsNotReused() throws {
        let fake = try startFake()
        let apns = try client(fake, timeoutMillis: 800)
        XCTAssertEqual(apns.send([push("warm")]).first?.httpStatus, 200)
        let started = Date()
        let answers = apns.send([push("freeze-1"), push("after-freeze")])
        XCTAssertEqual(answers.map(\.transport), [.timeout, .timeout], "sent, never answered: outcome unknown")
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "the deadline holds")
        XCTAssertEqual(apns.send([push("next")]).first?.httpStatus, 200, "a connection that read nothing is not reused")
        XCTAssertEqual(fake.log("connection").count, 2)
    }

    func testTheLibcurlFallbackSendsTheSameRequests() throws {
        let fake = try startFake(["--max-streams", "1000"])
        let apns = try client(fake) { $0.transport = .libcurl }
        XCTAssertTrue(apns.http is HTTP2Client)
        let batch = (0..<50).map { push(String(format: "%064x", $0)) } + [push("unregistered-1"), push("reset-1")]
        let answers = apns.send(batch)
        XCTAssertEqual(answers[..<50].map(\.httpStatus), [Int?](repeating: 200, count: 50))
        XCTAssertEqual(answers[50].reason, "Unregistered")
        XCTAssertEqual(answers[51].transport, .connectionError)
        XCTAssertEqual(pushes(fake).count, 50)
    }

    /// R-KIND-1 on the wire through both HTTP/2 clients (nghttp2, the default, and the libcurl
    /// fallback): each request carries its own `apns-push-type` and `apns-priority` (a background push
    /// 5 whatever the notification's priority), as the fake logs them, and the header list is exactly
    /// Apple's, in its fixed order.
    func testPushTypeAndPriorityHeadersReachTheServerThroughBothTransports() throws {
        let fake = try startFake(["--max-streams", "100"])
        let cases: [(PushType, Priority, type: String, priority: String)] = [
            (.alert, .high, "alert", "10"), (.alert, .normal, "alert", "5"),
            (.background, .high, "background", "5"), (.background, .normal, "background", "5"),
        ]
        for transport in HTTPTransportKind.allCases {
            let apns = try client(fake) { $0.transport = transport }
            let batch = cases.enumerated().map { i, c -> ProviderRequest in
                var r = push(String(format: "%064x", i))
                r.pushType = c.0
                r.priority = c.1
                if c.0 == .background { r.payload = Array(#"{"aps":{"content-available":1},"data":{"s":"1"}}"#.utf8) }
                return r
            }
            XCTAssertEqual(apns.send(batch).map(\.httpStatus), [Int?](repeating: 200, count: cases.count), "\(transport)")
            let logged = pushes(fake)
            for (r, c) in zip(batch, cases) {
                let line = try XCTUnwrap(logged[r.apnsId]?.first, "\(transport) \(c.type)")
                XCTAssertEqual(line["push_type"] as? String, c.type, "\(transport)")
                XCTAssertEqual(line["priority"] as? String, c.priority, "\(transport) \(c.type) \(c.1)")
            }
            XCTAssertEqual(fake.log("bad_payload").count, 0)
            let http = apns.httpRequest(for: batch[2], token: "T")
            XCTAssertEqual(http.headers.map(\.0), ["authorization", "apns-topic", "apns-push-type", "apns-priority",
                                                   "apns-expiration", "apns-id", "content-type"])
            XCTAssertEqual(http.headers.map(\.1), ["bearer T", Self.topic, "background", "5", "0", batch[2].apnsId,
                                                   "application/json"])
        }
    }
}
