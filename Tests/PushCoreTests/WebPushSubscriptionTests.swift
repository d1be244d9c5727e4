import XCTest
import PushCrypto
@testable import PushCore

/// R-DEV-1 (and the issue text): Web Push subscriptions are validated field by field, and
/// endpoints may not point into loopback, private, link-local, unique-local, CGNAT or other
/// internal networks, neither by name nor by a resolved address.
final class WebPushSubscriptionTests: XCTestCase {
    private let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    private let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    private func subscribe(_ endpoint: String, p256dh: String? = nil, auth: String? = nil,
                           allowLoopback: Bool = false) throws -> WebPushSubscription {
        try WebPushSubscription(endpoint: endpoint, p256dhBase64URL: p256dh ?? self.p256dh,
                                authBase64URL: auth ?? self.auth, allowLoopback: allowLoopback)
    }

    private func assertRefused(_ field: String, file: StaticString = #filePath, line: UInt = #line,
                               _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            let e = error as? WebPushError
            XCTAssertEqual(e?.code, "VALIDATION_ERROR", "\(error)", file: file, line: line)
            XCTAssertEqual(e?.field, field, "\(error)", file: file, line: line)
        }
    }

    func testRealPushServiceEndpointsAreAccepted() throws {
        let fcm = try subscribe("https://fcm.googleapis.com/fcm/send/dGVzdA:APA91bH")
        XCTAssertEqual(fcm.origin, "https://fcm.googleapis.com")
        XCTAssertEqual(fcm.auth.count, 16)
        XCTAssertEqual(fcm.p256dh.count, 65)
        XCTAssertEqual(try subscribe("https://updates.push.services.mozilla.com/wpush/v2/gAAAA").origin,
                       "https://updates.push.services.mozilla.com")
        XCTAssertEqual(try subscribe("https://web.push.apple.com:443/QGv").origin, "https://web.push.apple.com")
        XCTAssertEqual(try subscribe("https://Push.Example.NET:8443/x").origin, "https://push.example.net:8443")
        XCTAssertEqual(try subscribe("https://8.8.8.8/push").origin, "https://8.8.8.8")
        XCTAssertEqual(try subscribe("https://[2001:4860:4860::8888]/push").origin, "https://[2001:4860:4860::8888]")
    }

    func testEndpointMustBeAnHTTPSURL() {
        for bad in ["", "not a url", "http://fcm.googleapis.com/x", "ftp://fcm.googleapis.com/x", "https://",
                    "https:///path", "//fcm.googleapis.com/x", "https://user:pw@fcm.googleapis.com/x",
                    "https://fcm.googleapis.com/a b", "https://fcm.googleapis.com\\@127.0.0.1/", "https://fcm.googleapis.com/\u{e9}",
                    "https://127.0.0.%31/x", "https://fcm.googleapis.com@127.0.0.1/x", "https://127.0.0.1#@fcm.googleapis.com",
                    "https://fcm.googleapis.com/\t", "https://" + String(repeating: "a", count: 2050) + ".com/"] {
            assertRefused("endpoint") { _ = try subscribe(bad) }
        }
    }

    func testInternalHostsAreRefusedByNameAndLiteral() {
        let hosts = ["localhost", "LOCALHOST.", "api.localhost", "127.0.0.1", "127.8.9.10", "0.0.0.0", "10.1.2.3",
                     "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "100.127.255.254",
                     "[::1]", "[::]", "[fe80::1]", "[febf::1]", "[fc00::1]", "[fd12:3456::1]", "[::ffff:10.0.0.1]",
                     "[::ffff:127.0.0.1]", "[::ffff:169.254.169.254]", "[64:ff9b::a00:1]", "[2002:c0a8:0101::1]",
                     "[fe80::1%25eth0]", "224.0.0.1", "255.255.255.255", "192.0.2.1", "[2001:db8::1]",
                     "127.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "017700000001",
                     "metadata", "printer.local", "metadata.google.internal", "nas.home.arpa", "box.localdomain",
                     "-bad-.example.com", "a..b.com", "ex_ample.com"]
        for host in hosts {
            assertRefused("endpoint") { _ = try subscribe("https://\(host)/push/x") }
        }
    }

    /// IDN host names are sent as A-labels (`xn--` punycode, RFC 5890 §2.3.2.1, RFC 3492): valid DNS
    /// names, checked as written (URLComponents' `host` would decode them to Unicode) and still
    /// held to the address guards; percent-escapes in a host are not a DNS name.
    func testIDNALabelsAreDNSNames() throws {
        for host in ["push.xn--bcher-kva.com", "hooks.xn--p1ai", "XN--BCHER-KVA.example", "xn--80ak6aa92e.com"] {
            let s = try subscribe("https://\(host)/push/x")
            XCTAssertEqual(s.origin, "https://\(host.lowercased())", host)
            XCTAssertEqual(try WebhookEndpointRules.validateURL("https://\(host)/hook", mode: .live, allowLoopback: false).host,
                           host.lowercased(), host)
        }
        for bad in ["xn--p1ai", "xn--bcher-kva.local", "xn--bcher-kva.localhost", "a%2eb.com", "xn--bcher-kva-.com"] {
            assertRefused("endpoint") { _ = try subscribe("https://\(bad)/push/x") }
        }
    }

    func testLoopbackPassesOnlyWithAllowLoopbackForLocalFakes() throws {
        for host in ["127.0.0.1:8443", "localhost:8443", "[::1]:8443"] {
            assertRefused("endpoint") { _ = try subscribe("https://\(host)/push/ok-1") }
            XCTAssertNoThrow(try subscribe("https://\(host)/push/ok-1", allowLoopback: true))
        }
        XCTAssertEqual(try subscribe("https://127.0.0.1:8443/push/ok-1", allowLoopback: true).origin, "https://127.0.0.1:8443")
        // allowLoopback admits loopback only, never private networks.
        assertRefused("endpoint") { _ = try subscribe("https://10.0.0.1/push", allowLoopback: true) }
        assertRefused("endpoint") { _ = try subscribe("https://169.254.169.254/push", allowLoopback: true) }
    }

    func testP256dhMustBeAPointOnTheCurve() throws {
        var raw = try XCTUnwrap(Base64URL.decode(p256dh))
        raw[40] ^= 0x04
        for bad in ["", "!!", Base64URL.encode(raw), Base64URL.encode(Array(raw.prefix(33))),
                    Base64URL.encode([UInt8](repeating: 0, count: 65))] {
            assertRefused("p256dh") { _ = try subscribe("https://fcm.googleapis.com/x", p256dh: bad) }
        }
    }

    func testAuthMustBeExactlySixteenBytes() {
        for bad in ["", "AAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAA", "BTBZMqHH6r4Tts7J_aSI*g"] {
            assertRefused("auth") { _ = try subscribe("https://fcm.googleapis.com/x", auth: bad) }
        }
        XCTAssertNoThrow(try subscribe("https://fcm.googleapis.com/x", auth: "BTBZMqHH6r4Tts7J_aSIgg=="))
    }

    func testEachRefusalNamesItsOwnField() {
        assertRefused("endpoint") { _ = try subscribe("http://10.0.0.1/", p256dh: "", auth: "") }
        assertRefused("p256dh") { _ = try subscribe("https://fcm.googleapis.com/x", p256dh: "", auth: "") }
    }

    // MARK: - Address classification (send-time check of resolved addresses)

    func testClassifyCoversEveryInternalRange() throws {
        let cases: [(String, WebPushAddressClass)] = [
            ("8.8.8.8", .globalUnicast), ("1.1.1.1", .globalUnicast), ("172.15.255.255", .globalUnicast),
            ("172.32.0.0", .globalUnicast), ("100.63.255.255", .globalUnicast), ("100.128.0.0", .globalUnicast),
            ("169.253.255.255", .globalUnicast), ("192.169.0.1", .globalUnicast), ("11.0.0.1", .globalUnicast),
            ("127.0.0.1", .loopback), ("0.1.2.3", .unspecified), ("10.255.255.255", .privateNetwork),
            ("172.16.0.0", .privateNetwork), ("192.168.0.0", .privateNetwork), ("100.64.0.0", .sharedAddressSpace),
            ("169.254.0.1", .linkLocal), ("239.255.255.250", .multicast), ("240.0.0.1", .reserved),
            ("198.18.0.1", .reserved), ("203.0.113.9", .documentation),
            ("2606:4700::1111", .globalUnicast), ("::1", .loopback), ("::", .unspecified), ("fe80::abcd", .linkLocal),
            ("fc00::", .uniqueLocal), ("fdff:ffff::1", .uniqueLocal), ("fec0::1", .privateNetwork), ("ff02::1", .multicast),
            ("::ffff:8.8.8.8", .globalUnicast), ("::ffff:192.168.0.1", .privateNetwork), ("::ffff:127.0.0.1", .loopback),
            ("::10.0.0.1", .reserved), ("64:ff9b::808:808", .globalUnicast), ("64:ff9b::a9fe:a9fe", .linkLocal),
            ("2002:0808:0808::1", .globalUnicast), ("2002:0a00:0001::1", .privateNetwork), ("2001:db8::5", .documentation),
            ("2001:0:4136:e378::1", .reserved), ("100::1", .reserved), ("4000::1", .reserved),
        ]
        for (text, expected) in cases {
            let bytes = try XCTUnwrap(WebPushAddressPolicy.parseIPAddress(text), text)
            XCTAssertEqual(WebPushAddressPolicy.classify(address: bytes), expected, text)
        }
    }

    func testResolvedAddressCheckRefusesInternalAndAcceptsPublic() throws {
        XCTAssertNoThrow(try WebPushAddressPolicy.checkResolvedAddress("142.250.74.110"))
        XCTAssertNoThrow(try WebPushAddressPolicy.checkResolvedAddress("2a00:1450:4007:80e::200a"))
        for bad in ["10.0.0.5", "127.0.0.1", "::1", "[::ffff:172.20.0.3]", "169.254.169.254", "fd00::1", "100.100.0.1",
                    "0.0.0.0", "not-an-ip", "127.1", ""] {
            assertRefused("endpoint") { try WebPushAddressPolicy.checkResolvedAddress(bad) }
        }
        XCTAssertNoThrow(try WebPushAddressPolicy.checkResolvedAddress("127.0.0.1", allowLoopback: true))
        XCTAssertNoThrow(try WebPushAddressPolicy.check([127, 0, 0, 1], allowLoopback: true))
        assertRefused("endpoint") { try WebPushAddressPolicy.check([192, 168, 1, 1], allowLoopback: true) }
        assertRefused("endpoint") { try WebPushAddressPolicy.check([1, 2, 3]) }
    }

    func testParseIPAddressAcceptsOnlyCanonicalForms() {
        XCTAssertEqual(WebPushAddressPolicy.parseIPAddress("1.2.3.4"), [1, 2, 3, 4])
        XCTAssertEqual(WebPushAddressPolicy.parseIPAddress("[::1]")?.count, 16)
        for bad in ["127.1", "01.2.3.4", "1.2.3.256", "0x7f.0.0.1", "::1%eth0", "1.2.3.4.5", "example.com"] {
            XCTAssertNil(WebPushAddressPolicy.parseIPAddress(bad), bad)
        }
    }
}
