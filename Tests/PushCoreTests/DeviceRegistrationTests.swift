import XCTest
import PushProviders
import PushTestSupport
import PushCore
import PushProviders
import PushCrypto

/// R-DEV-1, R-DEV-3, R-DEV-4: every field of a registration is validated before it reaches the
/// database, and each refusal is `VALIDATION_ERROR` naming its field.
final class DeviceRegistrationTests: XCTestCase {
    private var publicKey: P256PublicKey!
    private var browserKey: P256PublicKey!
    private let auth = Base64URL.encode([UInt8](0..<16))
    private let endpoint = "https://fcm.googleapis.com/fcm/send/abc:def-123"

    override func setUpWithError() throws {
        try super.setUpWithError()
        publicKey = try P256PrivateKey.generate().publicKey
        browserKey = try P256PrivateKey.generate().publicKey
    }

    private func ios(token: String? = "tok_1", userID: String = "u1", env: String? = "sandbox",
                     key: String?? = .none, mode: String = "live") throws -> DeviceRegistration {
        try DeviceRegistration.validate(mode: mode, platform: "ios", token: token, userID: userID,
                                        apnsEnvironment: env, encryptionPublicKey: key, platforms: ProviderTable.standard.addressing)
    }

    private func web(endpoint: String? = nil, p256dh: String? = nil, auth: String? = nil, token: String? = nil,
                     key: String?? = .none, allowLoopback: Bool = false) throws -> DeviceRegistration {
        try DeviceRegistration.validate(mode: "test", platform: "web", token: token, userID: "u1",
                                        apnsEnvironment: nil, encryptionPublicKey: key,
                                        subscriptionEndpoint: endpoint ?? self.endpoint,
                                        subscriptionP256dh: p256dh ?? browserKey.base64URL,
                                        subscriptionAuth: auth ?? self.auth, platforms: ProviderTable.standard.addressing, allowLoopbackEndpoints: allowLoopback)
    }

    /// Asserts `body` throws `PushError(VALIDATION_ERROR)` whose message starts with `field:`.
    private func assertRefused(_ field: String, file: StaticString = #filePath, line: UInt = #line,
                               _ body: () throws -> DeviceRegistration) {
        do {
            let accepted = try body()
            XCTFail("expected VALIDATION_ERROR(\(field)), accepted \(accepted.platform)", file: file, line: line)
        } catch let e as PushError {
            XCTAssertEqual(e.code, .validationError, file: file, line: line)
            XCTAssertTrue(e.message.hasPrefix(field + ":"), "expected field \(field) in \"\(e.message)\"",
                          file: file, line: line)
            XCTAssertEqual(e.field, field, file: file, line: line)
        } catch {
            XCTFail("expected PushError, got \(error)", file: file, line: line)
        }
    }

    // MARK: - R-DEV-1 token, user, platform, mode, APNs environment

    func testRDEV1TokenOfTheAllowedAlphabetUpTo512CharactersIsAccepted() throws {
        let alphabet = "ABCXYZabcxyz0189_:.-"
        XCTAssertEqual(try ios(token: alphabet).token, alphabet)
        let longest = String(repeating: "a", count: 512)
        XCTAssertEqual(try ios(token: longest).token, longest)
        XCTAssertEqual(DeviceRegistration.maxTokenLength, 512)
    }

    func testRDEV1TokenOver512CharactersIsRefusedNamingToken() {
        assertRefused("token") { try ios(token: String(repeating: "a", count: 513)) }
    }

    func testRDEV1TokenOutsideTheAlphabetIsRefusedNamingToken() {
        for bad in ["", "a b", "tok/1", "tok+1", "tök", "tok\n", "tok=", "tok\u{0}", "é"] {
            assertRefused("token") { try ios(token: bad) }
        }
        assertRefused("token") { try ios(token: nil) }
    }

    func testRDEV1UserIDUpTo255CharactersIsAcceptedAndLongerOrEmptyRefused() throws {
        XCTAssertEqual(try ios(userID: String(repeating: "u", count: 255)).userID.count, 255)
        XCTAssertEqual(try ios(userID: String(repeating: "é", count: 255)).userID.count, 255)
        assertRefused("user_id") { try ios(userID: String(repeating: "u", count: 256)) }
        assertRefused("user_id") { try ios(userID: "") }
    }

    func testRDEV1UserIDIsCountedInUnicodeScalarsLikeTheDatabase() {
        // 200 graphemes of two scalars each: 400 characters for PostgreSQL's char_length.
        let combining = String(repeating: "e\u{301}", count: 200)
        XCTAssertEqual(combining.count, 200)
        assertRefused("user_id") { try ios(userID: combining) }
    }

    func testRDEV1UserIDWithNULIsRefused() {
        assertRefused("user_id") { try ios(userID: "a\u{0}b") }
    }

    func testRDEV1UnknownPlatformIsRefusedNamingPlatform() {
        for bad in ["", "IOS", "windows", "huawei"] {
            assertRefused("platform") {
                try DeviceRegistration.validate(mode: "live", platform: bad, token: "t", userID: "u",
                                                apnsEnvironment: nil, encryptionPublicKey: .none, platforms: ProviderTable.standard.addressing)
            }
        }
    }

    func testRMODE1UnknownModeIsRefusedNamingMode() {
        assertRefused("mode") { try ios(mode: "prod") }
        assertRefused("mode") { try ios(mode: "") }
    }

    func testRDEV1IOSRequiresAnAPNsEnvironmentOfSandboxOrProduction() throws {
        XCTAssertEqual(try ios(env: "sandbox").apnsEnvironment, .sandbox)
        XCTAssertEqual(try ios(env: "production").apnsEnvironment, .production)
        assertRefused("apns_environment") { try ios(env: nil) }
        assertRefused("apns_environment") { try ios(env: "development") }
    }

    func testRDEV1APNsEnvironmentIsRefusedOnAndroidAndWeb() throws {
        let android = try DeviceRegistration.validate(mode: "live", platform: "android", token: "fcm:tok",
                                                      userID: "u", apnsEnvironment: nil, encryptionPublicKey: .none, platforms: ProviderTable.standard.addressing)
        XCTAssertNil(android.apnsEnvironment)
        XCTAssertEqual(android.platform, .android)
        assertRefused("apns_environment") {
            try DeviceRegistration.validate(mode: "live", platform: "android", token: "fcm:tok", userID: "u",
                                            apnsEnvironment: "sandbox", encryptionPublicKey: .none, platforms: ProviderTable.standard.addressing)
        }
        assertRefused("apns_environment") {
            try DeviceRegistration.validate(mode: "live", platform: "web", token: nil, userID: "u",
                                            apnsEnvironment: "production", encryptionPublicKey: .none,
                                            subscriptionEndpoint: endpoint, subscriptionP256dh: browserKey.base64URL,
                                            subscriptionAuth: auth, platforms: ProviderTable.standard.addressing)
        }
    }

    func testRDEV1SubscriptionFieldsAreRefusedOnTokenPlatforms() {
        assertRefused("subscription") {
            try DeviceRegistration.validate(mode: "live", platform: "android", token: "t", userID: "u",
                                            apnsEnvironment: nil, encryptionPublicKey: .none,
                                            subscriptionEndpoint: endpoint, platforms: ProviderTable.standard.addressing)
        }
    }

    // MARK: - R-DEV-3 / R-DEV-4 encryption_public_key

    func testRDEV4AbsentKeyMeansKeepAndExplicitNullMeansRemove() throws {
        XCTAssertEqual(try ios(key: .none).key, .keep)
        XCTAssertEqual(try ios(key: .some(nil)).key, .remove)
        XCTAssertEqual(DeviceRegistration.KeyChange.keep.action, "keep")
        XCTAssertEqual(DeviceRegistration.KeyChange.remove.action, "remove")
    }

    func testRDEV3ValidKeyIsSetWithItsRawBytesAndKid() throws {
        let r = try ios(key: .some(publicKey.base64URL))
        XCTAssertEqual(r.key, .set(raw: publicKey.raw, kid: publicKey.kid))
        XCTAssertEqual(r.key.action, "set")
        guard case .set(let raw, let kid) = r.key else { return XCTFail("key not set") }
        XCTAssertEqual(raw.count, 65)
        XCTAssertEqual(raw.first, 0x04)
        // R-DEV-3: kid = first 16 characters of base64url(SHA-256(raw)).
        XCTAssertEqual(kid, String(Base64URL.encode(try SHA256.hash(raw)).prefix(16)))
    }

    func testRDEV3KeyOffTheCurveIsRefusedNamingTheField() {
        var offCurve = publicKey.raw
        offCurve[64] ^= 0x01
        assertRefused("encryption_public_key") { try ios(key: .some(Base64URL.encode(offCurve))) }
        let arbitrary: [UInt8] = [0x04] + [UInt8](repeating: 0x11, count: 64)
        assertRefused("encryption_public_key") { try ios(key: .some(Base64URL.encode(arbitrary))) }
    }

    func testRDEV3CompressedKeyIsRefusedNamingTheField() {
        let x = Array(publicKey.raw[1..<33])
        let parity: UInt8 = publicKey.raw[64] & 1 == 0 ? 0x02 : 0x03
        assertRefused("encryption_public_key") { try ios(key: .some(Base64URL.encode([parity] + x))) }
        // 65 bytes with a compressed-form prefix.
        assertRefused("encryption_public_key") {
            try ios(key: .some(Base64URL.encode([0x02] + publicKey.raw.dropFirst())))
        }
    }

    func testRDEV3KeyOfWrongLengthOrNotBase64URLIsRefusedNamingTheField() {
        for bytes in [[UInt8](), Array(publicKey.raw.prefix(64)), publicKey.raw + [0]] {
            assertRefused("encryption_public_key") { try ios(key: .some(Base64URL.encode(bytes))) }
        }
        assertRefused("encryption_public_key") { try ios(key: .some("not base64url!")) }
        assertRefused("encryption_public_key") { try ios(key: .some("")) }
        // R-DEV-3 says "without padding": the 87-character key with a trailing '=' is refused.
        assertRefused("encryption_public_key") { try ios(key: .some(publicKey.base64URL + "=")) }
    }

    // MARK: - R-DEV-1 web subscriptions

    func testRDEV1ValidWebSubscriptionIsAcceptedWithoutTokenOrKey() throws {
        let r = try web()
        XCTAssertEqual(r.platform, .web)
        XCTAssertNil(r.token)
        XCTAssertNil(r.apnsEnvironment)
        XCTAssertEqual(r.key, .keep)
        XCTAssertEqual(r.subscription?.endpoint, endpoint)
        XCTAssertEqual(r.subscription?.p256dh, browserKey.raw)
        XCTAssertEqual(r.subscription?.auth, [UInt8](0..<16))
    }

    func testRDEV4WebDeviceRefusesATokenAndAnEncryptionKey() {
        assertRefused("token") { try web(token: "tok_1") }
        assertRefused("encryption_public_key") { try web(key: .some(publicKey.base64URL)) }
    }

    func testRDEV1WebDeviceWithoutACompleteSubscriptionIsRefused() {
        assertRefused("subscription.keys.p256dh") {
            try DeviceRegistration.validate(mode: "test", platform: "web", token: nil, userID: "u",
                                            apnsEnvironment: nil, encryptionPublicKey: .none,
                                            subscriptionEndpoint: endpoint, subscriptionP256dh: nil,
                                            subscriptionAuth: auth, platforms: ProviderTable.standard.addressing)
        }
    }

    func testRDEV1WebEndpointMustBeHTTPS() {
        assertRefused("subscription.endpoint") { try web(endpoint: "http://fcm.googleapis.com/fcm/send/x") }
        assertRefused("subscription.endpoint") { try web(endpoint: "ftp://push.example.com/x") }
        assertRefused("subscription.endpoint") { try web(endpoint: "not a url") }
    }

    func testRDEV1WebEndpointOnLoopbackPrivateOrLinkLocalAddressIsRefused() {
        let internalEndpoints = [
            "https://127.0.0.1/push", "https://localhost/push", "https://[::1]/push",
            "https://10.1.2.3/push", "https://172.16.0.1/push", "https://192.168.1.1/push",
            "https://169.254.169.254/latest", "https://[fe80::1]/push", "https://[fc00::1]/push",
            "https://0.0.0.0/push", "https://100.64.0.1/push", "https://2130706433/push",
            "https://metadata.internal/push", "https://printer.local/push", "https://intranet/push",
        ]
        for url in internalEndpoints {
            assertRefused("subscription.endpoint") { try web(endpoint: url) }
        }
    }

    func testRDEV1LoopbackEndpointIsAcceptedOnlyWhenTestsOptIn() throws {
        assertRefused("subscription.endpoint") { try web(endpoint: "https://127.0.0.1:8443/push") }
        XCTAssertEqual(try web(endpoint: "https://127.0.0.1:8443/push", allowLoopback: true).subscription?.endpoint,
                       "https://127.0.0.1:8443/push")
        XCTAssertNotNil(try web(endpoint: "https://localhost:8443/push", allowLoopback: true).subscription)
        // The opt-in covers loopback only, never private networks.
        assertRefused("subscription.endpoint") { try web(endpoint: "https://10.0.0.1/push", allowLoopback: true) }
        assertRefused("subscription.endpoint") { try web(endpoint: "https://[fe80::1]/push", allowLoopback: true) }
    }

    func testRDEV1WebP256dhOffTheCurveIsRefusedNamingP256dh() {
        var offCurve = browserKey.raw
        offCurve[64] ^= 0x01
        assertRefused("subscription.keys.p256dh") { try web(p256dh: Base64URL.encode(offCurve)) }
        assertRefused("subscription.keys.p256dh") { try web(p256dh: Base64URL.encode(Array(browserKey.raw.prefix(33)))) }
        assertRefused("subscription.keys.p256dh") { try web(p256dh: "!!") }
    }

    func testRDEV1WebAuthNotSixteenBytesIsRefusedNamingAuth() {
        assertRefused("subscription.keys.auth") { try web(auth: Base64URL.encode([UInt8](repeating: 1, count: 15))) }
        assertRefused("subscription.keys.auth") { try web(auth: Base64URL.encode([UInt8](repeating: 1, count: 17))) }
        assertRefused("subscription.keys.auth") { try web(auth: "!!") }
    }
}
