import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
import XCTest

/// The send-time guard of issue 7 / R-DEV-1: a subscription endpoint must never make the worker
/// call into our own network, even when its DNS changes after registration.
final class WebPushSendGuardTests: XCTestCase {
    private let fakes = StartedFakes()

    override func tearDown() {
        fakes.stopAll()
    }

    private func startFake(_ subscriptions: [FakeWebPushSubscription]) throws -> FakeWebPushService {
        fakes.keep(try FakeWebPushService.start(subscriptions))
    }

    private func assertForbidden(_ answer: ProviderAnswer, _ detailPart: String, file: StaticString = #filePath,
                                 line: UInt = #line) {
        XCTAssertEqual(answer.transport, .notSent, file: file, line: line)
        XCTAssertEqual(answer.reason, ProviderAnswerTable.webPushEndpointForbidden, file: file, line: line)
        XCTAssertNil(answer.httpStatus, file: file, line: line)
        XCTAssertTrue(answer.rawDetail?.contains(detailPart) ?? false, "\(answer.rawDetail ?? "nil")", file: file, line: line)
        let outcome = ProviderAnswerTable.classify(answer, provider: .webpush, credentialsVerified: true)
        XCTAssertEqual(outcome.ending, .failed(.invalidSubscription), "final, never retried", file: file, line: line)
    }

    private let anySubscription = try? FakeWebPushSubscription.make("/push/ok-x")

    private func push(_ endpoint: String) throws -> ProviderRequest {
        try WebPushTestSupport.push(endpoint, to: XCTUnwrap(anySubscription))
    }

    /// A loopback endpoint (IP literal, `localhost`, `[::1]`) without `allowLoopback` is refused
    /// before any connection: the fake, which is listening there, receives nothing.
    func testLoopbackEndpointWithoutAllowLoopbackIsRefusedBeforeAnyConnection() throws {
        let sub = try FakeWebPushSubscription.make("/push/ok-1")
        let fake = try startFake([sub])
        let client = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), allowLoopback: false)
        let answers = client.send([
            try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub),
            try WebPushTestSupport.push(fake.endpoint(sub.path, host: "localhost"), to: sub),
            try WebPushTestSupport.push(fake.endpoint(sub.path, host: "[::1]"), to: sub),
        ])
        assertForbidden(answers[0], "loopback")
        assertForbidden(answers[1], "localhost")
        assertForbidden(answers[2], "loopback")
        XCTAssertEqual(client.http.connectionsOpened, 0)
        XCTAssertTrue(fake.log().isEmpty)
        // The same endpoint with allowLoopback (tests only) goes through.
        let allowed = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), allowLoopback: true)
        XCTAssertEqual(allowed.send([try WebPushTestSupport.push(fake.endpoint(sub.path), to: sub)])[0].httpStatus, 201)
    }

    /// DNS rebinding: a public-looking name whose addresses (checked at send time, every one of
    /// them) include a private, link-local, CGNAT or loopback address is refused; one lookup per
    /// host per batch.
    func testNameResolvingToAnInternalAddressIsRefused() throws {
        let resolver = StubWebPushResolver([
            "push.rebind.example": ["10.0.0.7"],
            "mixed.example": ["93.184.216.34", "192.168.1.20"],
            "metadata.example": ["169.254.169.254"],
            "cgnat.example": ["100.64.0.1"],
            "v6.example": ["2606:2800:220:1::1", "fd00::1"],
            "loop.example": ["127.0.0.1"],
        ])
        let client = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), allowLoopback: true, resolver: resolver)
        let answers = client.send(try [
            push("https://push.rebind.example/w/1"), push("https://push.rebind.example/w/2"),
            push("https://mixed.example/w/1"), push("https://metadata.example/w/1"),
            push("https://cgnat.example/w/1"), push("https://v6.example/w/1"),
        ])
        assertForbidden(answers[0], "10.0.0.7: address is private")
        assertForbidden(answers[1], "10.0.0.7: address is private")
        assertForbidden(answers[2], "192.168.1.20")
        assertForbidden(answers[3], "link-local")
        assertForbidden(answers[4], "shared")
        assertForbidden(answers[5], "unique-local")
        XCTAssertEqual(resolver.lookups, ["push.rebind.example", "mixed.example", "metadata.example", "cgnat.example",
                                          "v6.example"])
        XCTAssertEqual(client.http.connectionsOpened, 0)
        let strict = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), allowLoopback: false, resolver: resolver)
        assertForbidden(strict.send([try push("https://loop.example/w/1")])[0], "loopback")
    }

    /// Endpoints the registration check refuses are refused again at send time (stored data may
    /// predate the check): wrong scheme, user info, internal names, non-canonical IPv4.
    func testInvalidStoredEndpointsAreRefused() throws {
        let client = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), allowLoopback: false,
                                                   resolver: StubWebPushResolver([:]))
        let answers = client.send(try [
            push("http://push.example.com/w/1"), push("https://user@push.example.com/w/1"),
            push("https://printer.local/w/1"), push("https://2130706433/w/1"), push("https://10.1.2.3/w/1"), push(""),
        ])
        for answer in answers { assertForbidden(answer, "endpoint") }
    }

    /// A name that does not resolve is not the subscription's fault (DNS may recover): `.notSent`
    /// without a reason, which the table retries.
    func testUnresolvableNameIsTransient() throws {
        let client = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), resolver: StubWebPushResolver([:]))
        let answer = client.send([try push("https://push.nowhere.example/w/1")])[0]
        XCTAssertEqual(answer.transport, .notSent)
        XCTAssertNil(answer.reason)
        XCTAssertTrue(answer.rawDetail?.hasPrefix("dns: webpush.dns_failed") ?? false, answer.rawDetail ?? "")
        XCTAssertEqual(ProviderAnswerTable.classify(answer, provider: .webpush, credentialsVerified: true), .transient)
    }

    /// The checked addresses are handed to libcurl as CURLOPT_RESOLVE pins (IPv6 in brackets,
    /// port from the URL or 443); IP-literal endpoints need none.
    func testCheckedAddressesArePinnedForTheConnection() throws {
        let both = ["93.184.216.34", "2606:2800:220:1::1"]
        let resolver = StubWebPushResolver(["push.example.com": both, "push.example.com.": both])
        let client = try WebPushTestSupport.client(keys: try VAPIDKeys.generate(), allowLoopback: false, resolver: resolver)
        guard case .ready(let named) = client.prepare(try push("https://Push.Example.com/w/abc")) else {
            return XCTFail("not prepared")
        }
        XCTAssertEqual(named.resolve, ["push.example.com:443:93.184.216.34,[2606:2800:220:1::1]"])
        XCTAssertEqual(named.url, "https://Push.Example.com/w/abc", "the stored endpoint is the URL, unchanged")
        guard case .ready(let dotted) = client.prepare(try push("https://push.example.com.:8443/w/abc")) else {
            return XCTFail("not prepared")
        }
        XCTAssertEqual(dotted.resolve, ["push.example.com.:8443:93.184.216.34,[2606:2800:220:1::1]",
                                        "push.example.com:8443:93.184.216.34,[2606:2800:220:1::1]"])
        guard case .ready(let literal) = client.prepare(try push("https://93.184.216.34/w/abc")) else {
            return XCTFail("not prepared")
        }
        XCTAssertEqual(literal.resolve, [])
        XCTAssertEqual(resolver.lookups, ["push.example.com", "push.example.com."])
    }

    /// The pin is what libcurl connects to, not its own lookup: `localhost` pinned to 127.0.0.2 (where
    /// nothing listens) fails to connect although the system resolves it to the fake's 127.0.0.1;
    /// pinned to 127.0.0.1 it reaches the fake, whose certificate names `localhost`, even with a
    /// (dead) proxy in `https_proxy`.
    func testLibcurlConnectsToThePinnedAddressOnly() throws {
        let sub = try FakeWebPushSubscription.make("/push/ok-pin")
        let fake = try startFake([sub])
        let keys = try VAPIDKeys.generate()
        let elsewhere = try WebPushTestSupport.client(keys: keys, resolver: StubWebPushResolver(["localhost": ["127.0.0.2"]]))
        let missed = elsewhere.send([try WebPushTestSupport.push(fake.endpoint(sub.path, host: "localhost"), to: sub)])[0]
        XCTAssertEqual(missed.transport, .notSent, "\(missed)")
        XCTAssertNil(missed.reason)
        XCTAssertTrue(fake.log().isEmpty)

        let pinned = try WebPushTestSupport.client(keys: keys, resolver: StubWebPushResolver(["localhost": ["127.0.0.1"]]))
        // A proxy from the environment must not take over a pinned request (it would do its own lookup).
        setenv("https_proxy", "http://127.0.0.1:9", 1)
        defer { unsetenv("https_proxy") }
        let answer = pinned.send([try WebPushTestSupport.push(fake.endpoint(sub.path, host: "localhost"), to: sub)])[0]
        XCTAssertEqual(answer.httpStatus, 201, "\(answer)")
        let vapid = fake.log(path: sub.path).first?["vapid"] as? [String: Any]
        XCTAssertEqual(vapid?["aud"] as? String, "https://localhost:\(fake.port)", "aud is the endpoint's origin")
    }

    /// The system resolver answers with text addresses the policy can check.
    func testSystemResolverGivesCheckableAddresses() throws {
        let resolver = SystemWebPushResolver()
        let local = try resolver.addresses(host: "localhost", port: 443)
        XCTAssertFalse(local.isEmpty)
        for address in local {
            XCTAssertEqual(WebPushAddressPolicy.classify(address: try XCTUnwrap(WebPushAddressPolicy.parseIPAddress(address))),
                           .loopback, address)
        }
        XCTAssertEqual(try resolver.addresses(host: "93.184.216.34", port: 443), ["93.184.216.34"])
        XCTAssertEqual(try resolver.addresses(host: "2606:2800:220:1::1", port: 443), ["2606:2800:220:1::1"])
        XCTAssertThrowsError(try resolver.addresses(host: "no-such-host.invalid", port: 443)) { error in
            XCTAssertEqual((error as? WebPushResolveError)?.code, "webpush.dns_failed")
        }
    }
}
