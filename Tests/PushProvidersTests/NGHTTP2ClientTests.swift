import Foundation
import PushCore
@testable import PushProviders
import PushTestSupport
import XCTest

/// `NGHTTP2Client` on its own against the fake APNs (403 `MissingProviderToken` without a token):
/// the contract both HTTP/2 clients share (`HTTPTransportContract`), then what is this client's own:
/// TLS verification (RFC 9110 §4.3.4 / RFC 6125 host name check), connection lifetime, keep-alive
/// PINGs (RFC 9113 §6.7), requests it refuses. The APNs-level cases (raised stream limit, GOAWAY,
/// resets, a silent server) are in `APNsTransportTests`.
final class NGHTTP2ClientTests: XCTestCase {
    private let servers = StartedFakes()
    private var contract: HTTPTransportContract { HTTPTransportContract(kind: .nghttp2, servers: servers) }

    override func tearDown() {
        servers.stopAll()
    }

    func testResponsesComeOverHTTP2WithLowercasedHeadersAndBody() throws {
        try contract.responsesComeOverHTTP2WithLowercasedHeadersAndBody()
    }

    func testRequestsBeyondTheServerStreamLimitWaitOnOneConnection() throws {
        try contract.requestsBeyondTheServerStreamLimitWaitOnOneConnection()
    }

    func testSingleStreamNewConnectionIsWarmedUpWithoutRefusedStreams() throws {
        try contract.singleStreamNewConnectionIsWarmedUpWithoutRefusedStreams()
    }

    func testEachRequestKeepsItsOwnMethodBodyAndHeaders() throws {
        let http = try contract.eachRequestKeepsItsOwnMethodBodyAndHeaders()
        XCTAssertEqual(http.connectionsOpened, 1, "the five requests shared one connection")
    }

    func testIdleConnectionIsClosedAfterMaxIdleAndReusedBefore() throws {
        try contract.idleConnectionIsClosedAfterMaxIdleAndReusedBefore()
    }

    func testEmptyBatchAndUnreadableCAFile() throws {
        try contract.emptyBatchAndUnreadableCAFile()
        var config = HTTPClientConfiguration(caFile: try FakeMaterial.file("apns_pub.pem"))  // readable, no certificate
        config.transport = .nghttp2
        XCTAssertThrowsError(try config.makeTransport()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, "http.ca_file_invalid")
        }
    }

    func testBadURLIsNotSent() throws {
        try contract.badURLIsNotSent()
        let http = try contract.client()
        let outcomes = http.perform([HTTPRequest(url: "https:///no-host"), HTTPRequest(url: "https://user@127.0.0.1:1/x"),
                                     HTTPRequest(url: "https://127.0.0.1:99999/x"),
                                     HTTPRequest(url: "https://127.0.0.1:1/x", resolve: ["127.0.0.1:1:127.0.0.1"])])
        XCTAssertEqual(outcomes.map(\.transport), [.notSent, .notSent, .notSent, .notSent])
        XCTAssertTrue(outcomes[3].failureDetail?.contains("libcurl") ?? false, "pins are the libcurl client's (Web Push)")
        XCTAssertEqual(http.connectionsOpened, 0)
    }

    func testAServerCertificateFromAnotherCAIsRefusedBeforeAnythingIsSent() throws {
        let fake = try contract.fake()
        var config = HTTPClientConfiguration(caFile: try FakeMaterial.file("other_ca.pem"))
        config.transport = .nghttp2
        let outcomes = try config.makeTransport().perform([contract.request(fake, 1), contract.request(fake, 2)])
        XCTAssertEqual(outcomes.map(\.transport), [.notSent, .notSent])
        XCTAssertTrue(outcomes[0].failureDetail?.contains("certificate") ?? false, "\(outcomes[0])")
        XCTAssertEqual(fake.log("connection").count, 0, "the TLS handshake never completed")
        XCTAssertEqual(fake.log("jwt_refused").count + fake.log("push").count, 0)
    }

    func testACertificateForAnotherHostIsRefusedAndTheRightOneAccepted() throws {
        // The same CA signed both; only the host name differs (wrong.example vs 127.0.0.1 / localhost).
        let wrong = try contract.fake(["--cert", try FakeMaterial.file("wronghost.pem"), "--key", try FakeMaterial.file("wronghost.key")])
        let right = try contract.fake()
        let http = try contract.client()
        let wrongByName = HTTPRequest(url: "https://localhost:\(wrong.port)/3/device/n0", body: Array("{}".utf8))
        let outcomes = http.perform([contract.request(wrong, 1), wrongByName, contract.request(right, 2)])
        XCTAssertEqual(outcomes[0].transport, .notSent, "IP address check: \(outcomes[0])")
        XCTAssertEqual(outcomes[1].transport, .notSent, "DNS name check: \(outcomes[1])")
        XCTAssertTrue(outcomes[0].failureDetail?.contains("certificate") ?? false, "\(outcomes[0])")
        XCTAssertTrue(outcomes[1].failureDetail?.contains("certificate") ?? false, "\(outcomes[1])")
        XCTAssertEqual(outcomes[2].transport, .response, "same CA, right name")
        let byName = HTTPRequest(url: "https://localhost:\(right.port)/3/device/n1", headers: [("apns-topic", "t")],
                                 body: Array("{}".utf8))
        XCTAssertEqual(http.perform([byName]).first?.transport, .response, "a DNS name in the certificate (with SNI)")
        XCTAssertEqual(wrong.log("connection").count, 0)
    }

    func testUnresolvableAndRefusingHostsAreNotSent() throws {
        let http = try contract.client()
        let outcomes = http.perform([HTTPRequest(url: "https://no-such-host.invalid/x"), HTTPRequest(url: "https://127.0.0.1:1/x")])
        XCTAssertEqual(outcomes.map(\.transport), [.notSent, .notSent], "\(outcomes)")
        XCTAssertTrue(outcomes[0].failureDetail?.contains("resolve") ?? false)
        XCTAssertTrue(outcomes[1].failureDetail?.contains("refused") ?? false, "\(outcomes[1])")
    }

    func testAConnectionPastItsLifetimeTakesNoNewStream() throws {
        let fake = try contract.fake()
        let http = try contract.client { $0.maxConnectionLifetimeSeconds = 1 }
        XCTAssertEqual(http.perform([contract.request(fake, 1)]).first?.transport, .response)
        XCTAssertEqual(http.perform([contract.request(fake, 2)]).first?.transport, .response)
        XCTAssertEqual(http.connectionsOpened, 1)
        Thread.sleep(forTimeInterval: 1.2)
        XCTAssertEqual(http.perform([contract.request(fake, 3)]).first?.transport, .response)
        XCTAssertEqual(http.connectionsOpened, 2, "lifetime over: a new connection")
        XCTAssertEqual(fake.log("connection").count, 2)
    }

    func testIdleConnectionsGetKeepAlivePingsAndStayInUse() throws {
        let fake = try contract.fake()
        let http = try contract.client { $0.upkeepIntervalMillis = 150 }
        XCTAssertEqual(http.perform([contract.request(fake, 1)]).first?.transport, .response)
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertGreaterThanOrEqual(fake.log("ping").count, 2, "an idle connection is PINGed every interval")
        XCTAssertEqual(http.perform([contract.request(fake, 2)]).first?.transport, .response)
        XCTAssertEqual(http.connectionsOpened, 1, "answered PINGs keep the connection")
    }

    func testNoPingsWithoutUpkeep() throws {
        let fake = try contract.fake()
        let http = try contract.client { $0.upkeepIntervalMillis = 0 }
        XCTAssertEqual(http.perform([contract.request(fake, 1)]).first?.transport, .response)
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(fake.log("ping").count, 0)
    }

    func testResponseBodiesAreCappedAndHeadersRepeatedByTheCallerAreLowercased() throws {
        let fake = try contract.fake()
        let http = try contract.client { $0.maxResponseBodyBytes = 10 }
        let request = HTTPRequest(url: fake.baseURL + "/3/device/d1", headers: [("APNS-Topic", "t")], body: Array("{}".utf8))
        let outcome = try XCTUnwrap(http.perform([request]).first)
        guard case .response(let response) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertEqual(response.status, 403, "an upper-case name went out lower-cased (HTTP/2 refuses upper case)")
        XCTAssertEqual(response.body.count, 10)
        XCTAssertTrue(response.bodyTruncated)
    }
}
