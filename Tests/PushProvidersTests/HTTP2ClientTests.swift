import Foundation
import PushCore
import PushProviders
import PushTestSupport
import XCTest

/// The libcurl multi wrapper on its own (Apple's "Sending notification requests to APNs"), against the
/// fake APNs answering 403 `MissingProviderToken` to unauthenticated requests (any full response will
/// do here).
final class HTTP2ClientTests: XCTestCase {
    private let servers = StartedFakes()

    override func tearDown() {
        servers.stopAll()
    }

    private func startFake(_ extra: [String] = []) throws -> FakeProviderServer {
        servers.keep(try .startAPNs(teamID: "T", keyID: "K", topic: "t", extra: extra))
    }

    private func client(_ tune: (inout HTTP2Client.Configuration) -> Void = { _ in }) throws -> HTTP2Client {
        var config = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        tune(&config)
        return try HTTP2Client.make(configuration: config)
    }

    private func request(_ fake: FakeProviderServer, _ i: Int) -> HTTPRequest {
        HTTPRequest(url: fake.baseURL + "/3/device/d\(i)", headers: [("apns-topic", "t")], body: Array("{}".utf8))
    }

    func testResponsesComeOverHTTP2WithLowercasedHeadersAndBody() throws {
        let fake = try startFake()
        let http = try client()
        let outcome = try XCTUnwrap(http.perform([request(fake, 1)]).first)
        guard case .response(let response) = outcome else { return XCTFail("expected a response, got \(outcome)") }
        XCTAssertEqual(response.httpVersion, 2, "APNs: HTTP/2 only")
        XCTAssertEqual(response.status, 403)
        XCTAssertEqual(response.headers["content-type"], "application/json")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), #"{"reason":"MissingProviderToken"}"#)
        XCTAssertFalse(response.bodyTruncated)
    }

    func testRequestsBeyondTheServerStreamLimitWaitOnOneConnection() throws {
        let fake = try startFake(["--max-streams", "4"])
        let http = try client()
        let outcomes = http.perform((0..<40).map { request(fake, $0) })
        XCTAssertEqual(outcomes.filter { $0.transport == .response }.count, 40, "\(outcomes.compactMap(\.failureDetail))")
        XCTAssertEqual(fake.log("connection").count, 1, "CURLMOPT_MAX_HOST_CONNECTIONS = 1 by default")
        XCTAssertEqual(fake.log("refused").count, 0, "warm-up: no burst before the server's SETTINGS")
        XCTAssertEqual(http.connectionsOpened, 1)
    }

    func testSingleStreamNewConnectionIsWarmedUpWithoutRefusedStreams() throws {
        // Like APNs before a valid token: one stream allowed; these requests carry no token.
        let fake = try startFake(["--initial-streams", "1"])
        let http = try client()
        let outcomes = http.perform((0..<12).map { request(fake, $0) })
        XCTAssertEqual(outcomes.filter { $0.transport == .response }.count, 12)
        XCTAssertEqual(fake.log("refused").count, 0)
        XCTAssertEqual(fake.log("connection").count, 1)
    }

    func testIdleConnectionIsClosedAfterMaxIdleAndReusedBefore() throws {
        let fake = try startFake()
        let http = try client { $0.maxIdleSeconds = 1 }
        _ = http.perform([request(fake, 1)])
        _ = http.perform([request(fake, 2)])
        XCTAssertEqual(http.connectionsOpened, 1, "reused while fresh")
        Thread.sleep(forTimeInterval: 2.2)
        _ = http.perform([request(fake, 3)])
        XCTAssertEqual(http.connectionsOpened, 2, "CURLOPT_MAXAGE_CONN: idle connection replaced")
    }

    func testEmptyBatchAndUnreadableCAFile() throws {
        XCTAssertEqual(try client().perform([]), [])
        XCTAssertThrowsError(try HTTP2Client.make(configuration: .init(caFile: "/nonexistent/ca.pem"))) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, "http.ca_file_unreadable")
        }
    }

    func testBadURLIsNotSent() throws {
        let outcome = try XCTUnwrap(try client().perform([HTTPRequest(url: "http://127.0.0.1:1/plain-http")]).first)
        XCTAssertEqual(outcome.transport, .notSent, "only https is allowed")
        XCTAssertNotNil(outcome.failureDetail)
    }
}
