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

    private var contract: HTTPTransportContract { HTTPTransportContract(kind: .libcurl, servers: servers) }

    func testResponsesComeOverHTTP2WithLowercasedHeadersAndBody() throws {
        try contract.responsesComeOverHTTP2WithLowercasedHeadersAndBody()
    }

    func testRequestsBeyondTheServerStreamLimitWaitOnOneConnection() throws {
        try contract.requestsBeyondTheServerStreamLimitWaitOnOneConnection()
    }

    func testSingleStreamNewConnectionIsWarmedUpWithoutRefusedStreams() throws {
        try contract.singleStreamNewConnectionIsWarmedUpWithoutRefusedStreams()
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
        // The same handle carries all five requests: the GET must not leave its method behind, nor a
        // POST its body or headers.
        let http = try contract.eachRequestKeepsItsOwnMethodBodyAndHeaders()
        XCTAssertEqual(http.statistics.handlesCreated, 1, "one handle, reset when the method changed")
    }

    func testIdleConnectionIsClosedAfterMaxIdleAndReusedBefore() throws {
        try contract.idleConnectionIsClosedAfterMaxIdleAndReusedBefore()
    }

    func testEmptyBatchAndUnreadableCAFile() throws {
        try contract.emptyBatchAndUnreadableCAFile()
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
        try contract.badURLIsNotSent()
    }
}
