import Foundation
import PushCore
@testable import PushProviders
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
        let fake = try startFake(["--max-streams", "4", "--initial-streams", "4"])
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

    func testABatchGoesOutInChunksOfTheStreamLimitAndHandlesAreReused() throws {
        // Issue 18: never more than maxStreamsPerConnection transfers in libcurl's hands per connection.
        let fake = try startFake(["--initial-streams", "1000"])
        let http = try client { $0.maxStreamsPerConnection = 25 }
        let first = http.perform((0..<130).map { request(fake, $0) })
        XCTAssertEqual(first.filter { $0.transport == .response }.count, 130, "\(first.compactMap(\.failureDetail))")
        let afterFirst = http.statistics
        XCTAssertEqual(afterFirst.maxInFlightPerHost, 25, "chunk = stream limit, refilled as streams end")
        XCTAssertEqual(afterFirst.transfersStarted, 130)
        XCTAssertLessThanOrEqual(afterFirst.handlesCreated, 25, "a finished transfer's handle starts the next one")
        let second = http.perform((0..<130).map { request(fake, 200 + $0) })
        XCTAssertEqual(second.filter { $0.transport == .response }.count, 130)
        XCTAssertEqual(http.statistics.handlesCreated, afterFirst.handlesCreated, "handles kept across batches")
        XCTAssertEqual(http.statistics.transfersStarted, 260)
        XCTAssertEqual(fake.log("connection").count, 1)
        XCTAssertEqual(fake.log("refused").count, 0)
    }

    func testAReusedHandleTakesTheNextRequestsMethodBodyAndHeaders() throws {
        // POST, then GET (the fake answers 405 to anything but POST), then POST again on the same
        // handles: the GET must not leave its method behind, nor a POST its body or headers.
        let fake = try startFake()
        let http = try client { $0.maxStreamsPerConnection = 1 }
        func status(_ r: HTTPRequest) throws -> Int {
            let outcome = try XCTUnwrap(http.perform([r]).first)
            guard case .response(let response) = outcome else { XCTFail("\(outcome)"); return 0 }
            return response.status
        }
        XCTAssertEqual(try status(request(fake, 1)), 403, "POST without a token: MissingProviderToken")
        XCTAssertEqual(try status(HTTPRequest(url: fake.baseURL + "/3/device/d2", method: "GET")), 405)
        XCTAssertEqual(try status(request(fake, 3)), 403, "POST again after the GET")
        var put = request(fake, 4)
        put.method = "PUT"
        XCTAssertEqual(try status(put), 405)
        XCTAssertEqual(try status(request(fake, 5)), 403)
        XCTAssertEqual(http.statistics.handlesCreated, 1, "one handle, reset when the method changed")
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

    func testHostKeyIsSchemeAndAuthority() {
        XCTAssertEqual(HTTP2Client.hostKey("https://api.push.apple.com/3/device/ab"), "https://api.push.apple.com")
        XCTAssertEqual(HTTP2Client.hostKey("https://127.0.0.1:4443/x?y"), "https://127.0.0.1:4443")
        XCTAssertEqual(HTTP2Client.hostKey("https://[::1]:8443"), "https://[::1]:8443")
        XCTAssertEqual(HTTP2Client.hostKey("https://h.example?q=1"), "https://h.example")
        XCTAssertEqual(HTTP2Client.hostKey("not a url"), "not a url")
        XCTAssertEqual(HTTP2Client.hostKey("https:/x/y"), "https:/x/y")
    }

    func testBadURLIsNotSent() throws {
        let outcome = try XCTUnwrap(try client().perform([HTTPRequest(url: "http://127.0.0.1:1/plain-http")]).first)
        XCTAssertEqual(outcome.transport, .notSent, "only https is allowed")
        XCTAssertNotNil(outcome.failureDetail)
    }
}
