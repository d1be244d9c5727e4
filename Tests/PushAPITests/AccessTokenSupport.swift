import Foundation
import XCTest
import PushAPI
import PushCore
import PushCrypto
import PushProviders

/// A clock a test moves (the API judges `exp`, `nbf` and the JWKS refresh rate by it).
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var t: Date
    init(_ start: Date = Date()) { t = start }
    func now() -> Date { lock.withLock { t } }
    func advance(_ seconds: Double) { lock.withLock { t = t.addingTimeInterval(seconds) } }
}

/// An authorization server's signing key for the tests, made at test time by `openssl genpkey`
/// (no key is committed): the signer and its public JWK as a JWKS publishes it.
struct TestSigningKey {
    let signer: JWTSigner
    let kid: String
    let jwk: [String: String]

    /// A fresh key: P-256 for ES256, RSA 2048 for RS256.
    static func make(_ algorithm: JWTSigner.Algorithm, kid: String) throws -> TestSigningKey {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = algorithm == .es256 ? ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
                                          : ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice   // genpkey's progress dots
        try p.run()
        let pem = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "openssl genpkey")
        let signer = algorithm == .es256 ? try JWTSigner.es256(privateKeyPEM: pem, keyId: kid)
                                         : try JWTSigner.rs256(privateKeyPEM: pem, keyId: kid)
        var jwk = try signer.publicJWK()
        jwk["kid"] = kid
        jwk["use"] = "sig"
        jwk["alg"] = algorithm.rawValue
        return TestSigningKey(signer: signer, kid: kid, jwk: jwk)
    }

    /// A token signed by this key: `header` members over the defaults (`alg`, `typ` at+jwt,
    /// `kid`), `claims` as given (JSON values).
    func token(_ claims: [String: Any], header: [String: Any] = [:], kid: String? = nil) throws -> String {
        var h: [String: Any] = ["alg": signer.algorithm.rawValue, "typ": "at+jwt", "kid": kid ?? self.kid]
        for (k, v) in header { h[k] = v }
        return try signer.sign(header: Self.json(h), claims: Self.json(claims))
    }

    static func json(_ o: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self)
    }

    /// `{"keys": [...]}` of `keys`.
    static func jwks(_ keys: [TestSigningKey]) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["keys": keys.map(\.jwk)], options: [.sortedKeys])
    }
}

/// Base of the OAuth tests: the server of `APITestCase`, restarted to take access tokens from the
/// issuer `https://auth.example.com/` for the audience `https://push.example.com`, verified against a
/// JWKS file this test writes, on a clock it moves.
class AccessTokenTestCase: APITestCase {
    static let issuer = "https://auth.example.com/"
    static let audience = "https://push.example.com"
    var clock: TestClock!
    var jwksPath = ""
    var rsa: TestSigningKey!
    var ec: TestSigningKey!

    override func setUpWithError() throws {
        try super.setUpWithError()
        clock = TestClock()
        rsa = try TestSigningKey.make(.rs256, kid: "rsa-1")
        ec = try TestSigningKey.make(.es256, kid: "ec-1")
        jwksPath = NSTemporaryDirectory() + "pushfleet-jwks-\(UUID().uuidString).json"
        try writeJWKS([rsa, ec])
        server.stop()
        server = try startServer { [clock, jwksPath] config in
            var oauth = OAuthSettings(tokens: AccessTokenSettings(issuer: Self.issuer, audience: Self.audience, leewaySeconds: 30),
                                      jwks: .file(jwksPath))
            oauth.now = { clock!.now() }
            oauth.rateLimitPerSecond = 100_000
            config.oauth = oauth
        }
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: jwksPath)
        try super.tearDownWithError()
    }

    func writeJWKS(_ keys: [TestSigningKey]) throws {
        try TestSigningKey.jwks(keys).write(to: URL(fileURLWithPath: jwksPath), options: .atomic)
    }

    /// Claims of a valid token for the test's account in `mode` with `scope`, valid for five
    /// minutes from the test clock's now; `changes` override members (`NSNull()` removes one).
    func claims(scope: String, mode: Mode = .test, _ changes: [String: Any] = [:]) -> [String: Any] {
        let t = clock.now().timeIntervalSince1970.rounded(.down)
        var c: [String: Any] = [
            "iss": Self.issuer, "aud": Self.audience, "sub": "service-backend", "client_id": "backend",
            "iat": t, "nbf": t, "exp": t + 300, "jti": UUID().uuidString, "scope": scope,
            "pushfleet_account": PrefixedID.format(.account, account.id), "pushfleet_mode": mode.rawValue,
        ]
        for (k, v) in changes { if v is NSNull { c[k] = nil } else { c[k] = v } }
        return c
    }

    /// A token of the RSA key with `claims(scope:)` and `changes`.
    func token(scope: String = "push:send push:devices push:apps push:webhooks", _ changes: [String: Any] = [:],
               key: TestSigningKey? = nil) throws -> String {
        try (key ?? rsa).token(claims(scope: scope, changes))
    }
}
