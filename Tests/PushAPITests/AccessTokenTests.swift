import Foundation
import XCTest
import PushAPI
import PushCore
@testable import PushCrypto
import PushStore
import PushTestSupport

/// OAuth access tokens (issue 15 part 1, R-API-2): bearer JWTs of the RFC 9068 profile, signed by
/// a key of the configured JWKS (RS256 or ES256), for this API's issuer and audience, within their
/// validity; the scope decides the permissions. Every refusal is 401 `UNAUTHORIZED` with
/// `WWW-Authenticate: Bearer ... error="invalid_token"`, except a scope that lacks the route's
/// permission: 403 `PERMISSION_DENIED`. Nothing is written by a refused request.
final class AccessTokenTests: AccessTokenTestCase {
    private func expectRefused(_ token: String, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try fingerprint()
        let r = try call("PUT", "/v1/push/devices", key: token, json: deviceJSON(token: "refused_token"))
        XCTAssertEqual(r.status, 401, "\(label): \(r.text)", file: file, line: line)
        XCTAssertEqual(r.errorCode, "UNAUTHORIZED", label, file: file, line: line)
        XCTAssertEqual(r.headers["www-authenticate"], "Bearer realm=\"pushfleet\", error=\"invalid_token\"", label,
                       file: file, line: line)
        XCTAssertEqual(try fingerprint(), before, "\(label) wrote something", file: file, line: line)
    }

    /// RS256 and ES256 tokens work; the scope maps to the permissions of R-API-2: `push:send`
    /// sends, reads notifications and lists devices, and cannot register one (403);
    /// `push:devices` registers and removes devices and cannot list them.
    func testScopesGrantThePermissionsOfRAPI2() throws {
        let devices = try token(scope: "push:devices")
        let registered = try call("PUT", "/v1/push/devices", key: devices, json: deviceJSON(token: "oauth_device"))
        XCTAssertEqual(registered.status, 200, registered.text)
        XCTAssertEqual(try call("GET", "/v1/push/devices?app_id=\(appID)", key: devices).status, 403)

        let send = try ec.token(claims(scope: "openid push:send"))
        let refused = try call("PUT", "/v1/push/devices", key: send, json: deviceJSON(token: "oauth_other"))
        XCTAssertEqual(refused.status, 403, refused.text)
        XCTAssertEqual(refused.errorCode, "PERMISSION_DENIED")
        XCTAssertEqual((refused.json["error"] as? [String: Any])?["message"] as? String,
                       "this token's scope lacks push:devices (push_devices:w)", "names the scope, not a key")
        let sent = try call("POST", "/v1/push/notifications", key: send,
                            json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"hi"}"#)
        XCTAssertEqual(sent.status, 201, sent.text)
        let id = try XCTUnwrap(sent.json["id"] as? String)
        XCTAssertEqual(try call("GET", "/v1/push/notifications/\(id)", key: send).status, 200)
        XCTAssertEqual(try call("GET", "/v1/push/devices?app_id=\(appID)", key: send).status, 200)
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: send).status, 403, "push:send is not push:apps")
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: try token(scope: "push:apps")).status, 200)
        XCTAssertEqual(try call("GET", "/v1/push/webhook_endpoints?app_id=\(appID)", key: try token(scope: "push:webhooks")).status, 200)
        // The mode is the claim's (R-MODE-1): a live token does not see the test notification.
        XCTAssertEqual(try call("GET", "/v1/push/notifications/\(id)", key: try token(scope: "push:send", ["pushfleet_mode": "live"])).status, 404)
        // Another account's app answers 404 like a missing one (R-API-1).
        let other = try call("POST", "/v1/push/notifications", key: send,
                             json: #"{"app_id":"\#(otherAppID)","user_ids":["user_1042"],"title":"hi"}"#)
        XCTAssertEqual(other.status, 404, other.text)
    }

    func testATokenSignedByAKeyNotInTheJWKSIsRefused() throws {
        let stranger = try TestSigningKey.make(.rs256, kid: "rsa-1")   // the JWKS's kid, another key
        try expectRefused(try token(key: stranger), "same kid, other key")
        let unknown = try TestSigningKey.make(.rs256, kid: "rsa-unknown")
        try expectRefused(try token(key: unknown), "unknown kid")
        // The signature over other claims: a token whose claims were changed after signing.
        let good = try token(scope: "push:send")
        let parts = good.split(separator: ".")
        let forged = try TestSigningKey.json(claims(scope: "push:send push:devices push:apps"))
        try expectRefused("\(parts[0]).\(Base64URL.encode(Array(forged.utf8))).\(parts[2])", "claims changed")
    }

    /// After the JWKS rotates to a new kid, a token of the new key is accepted without a restart:
    /// at once when the last fetch is a minute old, not sooner (an unknown kid refreshes at most
    /// once a minute), and the old key's tokens are refused once the set no longer holds it.
    func testRotationToANewKidIsPickedUpWithoutARestartAtMostOnceAMinute() throws {
        let next = try TestSigningKey.make(.es256, kid: "ec-2")
        try writeJWKS([next])
        // The server fetched at start (this clock's now): within the minute the new kid is unknown.
        clock.advance(30)
        try expectRefused(try token(scope: "push:devices", key: next), "new kid within the minute")
        clock.advance(31)
        let fresh = try token(scope: "push:devices", key: next)
        let r = try call("PUT", "/v1/push/devices", key: fresh, json: deviceJSON(token: "rotated"))
        XCTAssertEqual(r.status, 200, r.text)
        // The old key is gone from the set now held.
        try expectRefused(try token(scope: "push:devices", ["exp": clock.now().timeIntervalSince1970 + 300]), "old key after rotation")
    }

    func testExpiredNotYetValidWrongAudienceAndWrongIssuerAreRefused() throws {
        let t = clock.now().timeIntervalSince1970.rounded(.down)
        try expectRefused(try token(["exp": t - 31, "iat": t - 400, "nbf": t - 400]), "expired past the leeway")
        try expectRefused(try token(["nbf": t + 31]), "nbf ahead past the leeway")
        try expectRefused(try token(["iat": t + 31]), "iat ahead past the leeway")
        try expectRefused(try token(["aud": "https://other.example.com"]), "wrong audience")
        try expectRefused(try token(["aud": ["https://other.example.com"]]), "wrong audience list")
        try expectRefused(try token(["iss": "https://evil.example.com/"]), "wrong issuer")
        try expectRefused(try token(["exp": NSNull()]), "no exp")
        try expectRefused(try token(["sub": NSNull()]), "no sub")
        try expectRefused(try token(["pushfleet_account": NSNull()]), "no account claim")
        try expectRefused(try token(["pushfleet_mode": "prod"]), "bad mode claim")
        // A well-signed token for an account that does not exist: the same 401, on reads too (it
        // was a 200 with empty lists).
        let ghost = ["pushfleet_account": PrefixedID.format(.account, UUID())]
        try expectRefused(try token(ghost), "unknown account")
        let list = try call("GET", "/v1/push/apps", key: try token(ghost))
        XCTAssertEqual(list.status, 401, list.text)
        XCTAssertEqual(list.headers["www-authenticate"], "Bearer realm=\"pushfleet\", error=\"invalid_token\"")
        // Within the leeway: accepted.
        let skewed = try token(scope: "push:devices", ["exp": t - 20, "aud": ["x", Self.audience]])
        XCTAssertEqual(try call("PUT", "/v1/push/devices", key: skewed, json: deviceJSON(token: "skewed")).status, 200)
    }

    /// `alg: none`, HS256 keyed with the RSA key's public numbers (the confusion of RFC 8725 §2.1),
    /// an ES256 token claiming RS256, a DER-encoded ES256 signature and a missing `typ` are refused.
    func testAlgorithmConfusionIsRefused() throws {
        let body = try TestSigningKey.json(claims(scope: "push:devices"))
        func unsigned(_ header: [String: Any], signature: [UInt8]) throws -> String {
            let h = Base64URL.encode(Array(try TestSigningKey.json(header).utf8)), c = Base64URL.encode(Array(body.utf8))
            return "\(h).\(c).\(Base64URL.encode(signature))"
        }
        try expectRefused(try unsigned(["alg": "none", "typ": "at+jwt"], signature: []), "alg none")
        try expectRefused(try unsigned(["alg": "none", "typ": "at+jwt", "kid": "rsa-1"], signature: []), "alg none with kid")
        for secret in [Array(try XCTUnwrap(rsa.jwk["n"]).utf8), Array(try TestSigningKey.jwks([rsa]))] {
            let h = Base64URL.encode(Array(try TestSigningKey.json(["alg": "HS256", "typ": "at+jwt", "kid": "rsa-1"]).utf8))
            let input = "\(h).\(Base64URL.encode(Array(body.utf8)))"
            let mac = try HMACSHA256.mac(key: secret, message: Array(input.utf8))
            try expectRefused("\(input).\(Base64URL.encode(mac))", "HS256 keyed with the public key")
        }
        try expectRefused(try ec.token(claims(scope: "push:devices"), header: ["alg": "RS256"]), "ES256 signature as RS256")
        try expectRefused(try ec.token(claims(scope: "push:devices"), kid: "rsa-1"), "EC signature under the RSA kid")
        try expectRefused(try rsa.token(claims(scope: "push:devices"), header: ["typ": "JWT"]), "typ JWT")
        let good = try ec.token(claims(scope: "push:devices"))
        let parts = good.split(separator: ".")
        let der = try XCTUnwrap(JWTSigner.derFromRaw(try XCTUnwrap(Base64URL.decode(String(parts[2])))))
        try expectRefused("\(parts[0]).\(parts[1]).\(Base64URL.encode(der))", "ES256 as DER")
        XCTAssertEqual(try call("PUT", "/v1/push/devices", key: good, json: deviceJSON(token: "ec_ok")).status, 200,
                       "the same token with its raw r||s signature is good")
    }

    /// A token over 8,192 bytes is refused as a token saying so (it was read as an API key:
    /// "unknown or revoked API key", without the invalid_token challenge).
    func testAnOversizedTokenIsRefusedAsATokenNamingItsLimit() throws {
        let big = try token(scope: "push:devices", ["pad": String(repeating: "x", count: 9_000)])
        XCTAssertGreaterThan(big.utf8.count, 8_192)
        try expectRefused(big, "a 12 KB token")
        let r = try call("GET", "/v1/push/apps", key: big)
        XCTAssertEqual((r.json["error"] as? [String: Any])?["message"] as? String, "the access token is over 8192 bytes", r.text)
    }

    /// `pushfleet_apps` limits a token to those apps, as `--apps` does a key.
    func testAnAppsClaimLimitsTheToken() throws {
        let sibling = try AppStore(connection: conn).appCreate(name: "sibling", accountID: account.id).id
        let scoped = try token(scope: "push:devices push:apps", ["pushfleet_apps": [appID]])
        XCTAssertEqual(try call("PUT", "/v1/push/devices", key: scoped, json: deviceJSON(token: "a")).status, 200)
        let other = try call("PUT", "/v1/push/devices", key: scoped, json: deviceJSON(token: "b", app: PrefixedID.format(.app, sibling)))
        XCTAssertEqual(other.status, 404, other.text)
        let apps = try call("GET", "/v1/push/apps", key: scoped)
        XCTAssertEqual((apps.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [appID])
    }

    /// API keys keep working beside tokens, and a server without OAuth settings refuses tokens.
    func testKeysStillWorkAndAServerWithoutOAuthRefusesTokens() throws {
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: testKey).status, 200)
        let plain = try startServer()
        extraServers.append(plain)
        let r = try call("GET", "/v1/push/apps", key: try token(), on: plain.api.port)
        XCTAssertEqual(r.status, 401)
    }

    /// The JWKS fetched from an https URL with libcurl (a local HTTPS server, a CA of the test's
    /// own): a token is accepted; with the system store instead of that CA the certificate is
    /// refused, no key is ever read, and tokens are refused.
    func testTheJWKSIsFetchedFromAnHTTPSURLWithTheCertificateVerified() throws {
        let fake = try FakeProcess.start("jwks_server.py", arguments: [
            "--file", jwksPath, "--cert", try FakeMaterial.file("server.pem"), "--key", try FakeMaterial.file("server.key"),
        ])
        defer { fake.stop() }
        let url = "\(fake.baseURL)/jwks.json"
        func server(caFile: String?) throws -> APIServer {
            let s = try startServer { [clock] config in
                var oauth = OAuthSettings(tokens: AccessTokenSettings(issuer: Self.issuer, audience: Self.audience),
                                          jwks: .url(url, caFile: caFile))
                oauth.now = { clock!.now() }
                config.oauth = oauth
            }
            extraServers.append(s)
            return s
        }
        let verified = try server(caFile: try FakeMaterial.file("ca.pem"))
        let r = try call("PUT", "/v1/push/devices", key: try token(scope: "push:devices"), json: deviceJSON(token: "https_jwks"),
                         on: verified.api.port)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual(fake.log(where: "path", is: "/jwks.json").count, 1, "one fetch at start")
        let untrusted = try server(caFile: nil)
        let refused = try call("PUT", "/v1/push/devices", key: try token(scope: "push:devices"), json: deviceJSON(token: "https_no_ca"),
                               on: untrusted.api.port)
        XCTAssertEqual(refused.status, 401, refused.text)
        XCTAssertEqual(fake.log(where: "path", is: "/jwks.json").count, 1, "the untrusted server never read the set")
    }
}
