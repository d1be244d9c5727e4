import Foundation
import PushCore
@testable import PushProviders
import PushTestSupport
import XCTest

/// What every `HTTPTransport` must do, checked against the fake APNs answering 403
/// `MissingProviderToken` to requests without a token (any full response will do here).
/// `HTTP2ClientTests` (libcurl) and `NGHTTP2ClientTests` run each check with their client.
struct HTTPTransportContract {
    let kind: HTTPTransportKind
    let servers: StartedFakes

    func fake(_ extra: [String] = []) throws -> FakeProviderServer {
        servers.keep(try .startAPNs(teamID: "T", keyID: "K", topic: "t", extra: extra))
    }

    func client(_ tune: (inout HTTPClientConfiguration) -> Void = { _ in }) throws -> any HTTPTransport {
        var config = HTTPClientConfiguration(caFile: try FakeMaterial.file("ca.pem"))
        config.transport = kind
        tune(&config)
        return try config.makeTransport()
    }

    func request(_ fake: FakeProviderServer, _ i: Int) -> HTTPRequest {
        HTTPRequest(url: fake.baseURL + "/3/device/d\(i)", headers: [("apns-topic", "t")], body: Array("{}".utf8))
    }

    func responsesComeOverHTTP2WithLowercasedHeadersAndBody() throws {
        let fake = try fake()
        let outcome = try XCTUnwrap(try client().perform([request(fake, 1)]).first)
        guard case .response(let response) = outcome else { return XCTFail("expected a response, got \(outcome)") }
        XCTAssertEqual(response.httpVersion, 2, "APNs: HTTP/2 only")
        XCTAssertEqual(response.status, 403)
        XCTAssertEqual(response.headers["content-type"], "application/json")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), #"{"reason":"MissingProviderToken"}"#)
        XCTAssertFalse(response.bodyTruncated)
    }

    func requestsBeyondTheServerStreamLimitWaitOnOneConnection() throws {
        let fake = try fake(["--max-streams", "4", "--initial-streams", "4"])
        let http = try client()
        let outcomes = http.perform((0..<40).map { request(fake, $0) })
        XCTAssertEqual(outcomes.filter { $0.transport == .response }.count, 40, "\(outcomes.compactMap(\.failureDetail))")
        XCTAssertEqual(fake.log("connection").count, 1, "one connection per host by default")
        XCTAssertEqual(fake.log("refused").count, 0, "warm-up: no burst before the server's SETTINGS")
        XCTAssertEqual(http.connectionsOpened, 1)
    }

    func singleStreamNewConnectionIsWarmedUpWithoutRefusedStreams() throws {
        // Like APNs before a valid token: one stream allowed; these requests carry no token.
        let fake = try fake(["--initial-streams", "1"])
        let outcomes = try client().perform((0..<12).map { request(fake, $0) })
        XCTAssertEqual(outcomes.filter { $0.transport == .response }.count, 12)
        XCTAssertEqual(fake.log("refused").count, 0)
        XCTAssertEqual(fake.log("connection").count, 1)
    }

    /// POST, then GET (the fake answers 405 to anything but POST), then POST again: a request never
    /// inherits the previous one's method, body or headers. Returns the client for further checks.
    @discardableResult
    func eachRequestKeepsItsOwnMethodBodyAndHeaders() throws -> any HTTPTransport {
        let fake = try fake()
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
        return http
    }

    func idleConnectionIsClosedAfterMaxIdleAndReusedBefore() throws {
        let fake = try fake()
        let http = try client { $0.maxIdleSeconds = 1 }
        _ = http.perform([request(fake, 1)])
        _ = http.perform([request(fake, 2)])
        XCTAssertEqual(http.connectionsOpened, 1, "reused while fresh")
        Thread.sleep(forTimeInterval: 2.2)
        _ = http.perform([request(fake, 3)])
        XCTAssertEqual(http.connectionsOpened, 2, "idle connection replaced")
    }

    func emptyBatchAndUnreadableCAFile() throws {
        XCTAssertEqual(try client().perform([]), [])
        var config = HTTPClientConfiguration(caFile: "/nonexistent/ca.pem")
        config.transport = kind
        XCTAssertThrowsError(try config.makeTransport()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, "http.ca_file_unreadable")
        }
    }

    func badURLIsNotSent() throws {
        let outcome = try XCTUnwrap(try client().perform([HTTPRequest(url: "http://127.0.0.1:1/plain-http")]).first)
        XCTAssertEqual(outcome.transport, .notSent, "only https is allowed")
        XCTAssertNotNil(outcome.failureDetail)
    }
}
