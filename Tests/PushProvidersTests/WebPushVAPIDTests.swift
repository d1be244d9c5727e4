import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
import XCTest

/// VAPID keys and tokens (RFC 8292) without a network.
final class WebPushVAPIDTests: XCTestCase {
    /// RFC 8292 §3.2: `k` / `applicationServerKey` is the 65-byte uncompressed point, base64url.
    func testPublicKeyIsTheUncompressedPointInBase64URL() throws {
        let keys = try VAPIDKeys.generate()
        XCTAssertEqual(keys.publicKeyBase64URL.count, 87)
        XCTAssertFalse(keys.publicKeyBase64URL.contains("="))
        let decoded = try XCTUnwrap(Base64URL.decode(keys.publicKeyBase64URL))
        XCTAssertEqual(decoded, keys.publicKeyBytes)
        XCTAssertEqual(decoded.count, 65)
        XCTAssertEqual(decoded.first, 0x04)
        XCTAssertNoThrow(try P256PublicKey(raw: decoded), "a point on P-256")
        XCTAssertNotEqual(try VAPIDKeys.generate().publicKeyBase64URL, keys.publicKeyBase64URL)
        XCTAssertFalse(keys.description.contains(Base64URL.encode(keys.privateKey.rawScalar)))
    }

    /// Storage form: PKCS#8 PEM that reloads to the same key and that the JWT signer accepts.
    func testPrivateKeyPEMIsPKCS8AndRoundTrips() throws {
        let keys = try VAPIDKeys.generate()
        let pem = try keys.privateKeyPEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"), pem.prefix(40).description)
        XCTAssertTrue(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let reloaded = try VAPIDKeys(privateKeyPEM: pem)
        XCTAssertEqual(reloaded.privateKey.rawScalar, keys.privateKey.rawScalar)
        XCTAssertEqual(reloaded.publicKeyBase64URL, keys.publicKeyBase64URL)
        XCTAssertEqual(try reloaded.privateKeyPEM(), pem, "deterministic encoding")
        XCTAssertNoThrow(try JWTSigner.es256(privateKeyPEM: pem, keyId: ""))
        // The APNs .p8 of the fakes is a PKCS#8 P-256 key too: it loads.
        XCTAssertNoThrow(try VAPIDKeys(privateKeyPEM: try FakeMaterial.text("apns_key.p8")))
    }

    func testLoadingRefusesGarbageAndNonP256Keys() throws {
        XCTAssertThrowsError(try VAPIDKeys(privateKeyPEM: "")) { XCTAssertEqual(($0 as? JWTError)?.code, "jwt.malformed_pem") }
        XCTAssertThrowsError(try VAPIDKeys(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")) {
            XCTAssertEqual(($0 as? JWTError)?.code, "jwt.malformed_pem")
        }
        XCTAssertThrowsError(try VAPIDKeys(privateKeyPEM: try FakeMaterial.text("sa_key.pem"))) {
            XCTAssertEqual(($0 as? JWTError)?.code, "jwt.wrong_key_type", "an RSA key is not a VAPID key")
        }
    }

    /// RFC 8292 §2: header `{"typ":"JWT","alg":"ES256"}`, claims aud = origin, exp = now + 12 h,
    /// sub = contact; ES256 raw r||s that verifies with the public key.
    func testTokenHasTheRFC8292HeaderClaimsAndAValidSignature() throws {
        let keys = try VAPIDKeys.generate()
        let vapid = try WebPushVAPID.make(keys: keys, subject: "mailto:ops@example.com")
        let header = try vapid.authorization(origin: "https://push.example.net", now: 1_700_000_000)
        let prefix = "vapid t="
        XCTAssertTrue(header.hasPrefix(prefix))
        XCTAssertTrue(header.hasSuffix(", k=\(keys.publicKeyBase64URL)"))
        let jwt = String(header.dropFirst(prefix.count).prefix { $0 != "," })
        let parts = jwt.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(String(decoding: try XCTUnwrap(Base64URL.decode(parts[0])), as: UTF8.self), #"{"typ":"JWT","alg":"ES256"}"#)
        XCTAssertEqual(String(decoding: try XCTUnwrap(Base64URL.decode(parts[1])), as: UTF8.self),
                       #"{"aud":"https://push.example.net","exp":1700043200,"sub":"mailto:ops@example.com"}"#)
        XCTAssertEqual(try XCTUnwrap(Base64URL.decode(parts[2])).count, 64, "raw r||s, not DER")
        XCTAssertTrue(try JWTSigner.es256(privateKeyPEM: try keys.privateKeyPEM(), keyId: "").verify(jwt))
    }

    /// One token per origin, reused until an hour before `exp`; another origin gets its own.
    func testTokenIsCachedPerOriginUntilOneHourBeforeExpiry() throws {
        let vapid = try WebPushVAPID.make(keys: try VAPIDKeys.generate(), subject: "https://example.com/contact")
        let t0: Int64 = 1_700_000_000
        let first = try vapid.token(origin: "https://a.example", now: t0)
        XCTAssertEqual(first.refreshAt, t0 + 11 * 3600)
        XCTAssertEqual(try vapid.token(origin: "https://a.example", now: t0 + 11 * 3600 - 1), first)
        let other = try vapid.token(origin: "https://b.example", now: t0 + 10)
        XCTAssertNotEqual(other.value, first.value)
        let renewed = try vapid.token(origin: "https://a.example", now: t0 + 11 * 3600)
        XCTAssertNotEqual(renewed.value, first.value)
        XCTAssertEqual(renewed.issuedAt, t0 + 11 * 3600)
        XCTAssertEqual(try vapid.token(origin: "https://b.example", now: t0 + 11 * 3600), other)
    }

    /// Issue 11: clients sharing one cache share a token only when they hold the same key and
    /// subject; each token verifies with its own client's key and carries its own `sub`.
    func testSharedCacheGivesEachKeyAndSubjectItsOwnToken() throws {
        let cache = InMemoryProviderTokenCache()
        let origin = "https://push.example.net", t0: Int64 = 1_700_000_000
        let keysA = try VAPIDKeys.generate(), keysB = try VAPIDKeys.generate()
        let a = try WebPushVAPID.make(keys: keysA, subject: "mailto:a@example.com", tokenCache: cache)
        let b = try WebPushVAPID.make(keys: keysB, subject: "mailto:a@example.com", tokenCache: cache)
        let aOtherSubject = try WebPushVAPID.make(keys: keysA, subject: "mailto:other@example.com", tokenCache: cache)
        let aAgain = try WebPushVAPID.make(keys: try VAPIDKeys(privateKeyPEM: try keysA.privateKeyPEM()),
                                           subject: "mailto:a@example.com", tokenCache: cache)
        let tokenA = try a.token(origin: origin, now: t0).value
        let tokenB = try b.token(origin: origin, now: t0).value
        let tokenA2 = try aOtherSubject.token(origin: origin, now: t0).value
        XCTAssertNotEqual(tokenA, tokenB)
        XCTAssertNotEqual(tokenA, tokenA2)
        let signerA = try JWTSigner.es256(privateKeyPEM: try keysA.privateKeyPEM(), keyId: "")
        let signerB = try JWTSigner.es256(privateKeyPEM: try keysB.privateKeyPEM(), keyId: "")
        XCTAssertTrue(signerA.verify(tokenA))
        XCTAssertFalse(signerA.verify(tokenB))
        XCTAssertTrue(signerB.verify(tokenB))
        let claims = String(decoding: try XCTUnwrap(Base64URL.decode(String(tokenA2.split(separator: ".")[1]))), as: UTF8.self)
        XCTAssertTrue(claims.contains(#""sub":"mailto:other@example.com""#), claims)
        XCTAssertEqual(try aAgain.token(origin: origin, now: t0 + 5).value, tokenA, "the same key and subject share it")
    }

    /// RFC 8292 §2, §2.1: `sub` must be a mailto: or https: URI; lifetime ≤ 24 h.
    func testSubjectAndLifetimeAreChecked() throws {
        let keys = try VAPIDKeys.generate()
        for bad in ["", "ops@example.com", "http://example.com", "mailto:", "mailto:a b@example.com", "mailto:\"x\"@example.com",
                    "https://example.com/" + String(repeating: "x", count: 600)] {
            XCTAssertThrowsError(try WebPushVAPID.make(keys: keys, subject: bad), bad) {
                XCTAssertEqual(($0 as? WebPushClientError)?.code, "webpush.bad_subject", bad)
            }
        }
        XCTAssertThrowsError(try WebPushVAPID.make(keys: keys, subject: "mailto:a@example.com", lifetimeSeconds: 24 * 3600 + 1)) {
            XCTAssertEqual(($0 as? WebPushClientError)?.code, "webpush.bad_lifetime")
        }
        XCTAssertThrowsError(try WebPushVAPID.make(keys: keys, subject: "mailto:a@example.com", lifetimeSeconds: 3600,
                                                   renewalMarginSeconds: 3600))
        var config = WebPushClient.Configuration(subject: "ops@example.com")
        config.http = HTTP2Client.Configuration()
        XCTAssertThrowsError(try WebPushClient.make(keys: keys, configuration: config)) {
            XCTAssertEqual(($0 as? WebPushClientError)?.code, "webpush.bad_subject")
        }
    }

    /// The request a push becomes: headers in order, body unchanged, URL = endpoint (RFC 8030 §5).
    func testPreparedRequestCarriesTheRFC8030Headers() throws {
        let keys = try VAPIDKeys.generate()
        let clock = ManualClock(1_700_000_000)
        var config = WebPushClient.Configuration(subject: "mailto:ops@example.com")
        config.requestTimeoutMillis = 4_000
        let client = try WebPushClient.make(keys: keys, configuration: config, clock: clock,
                                            resolver: StubWebPushResolver(["push.example.com": ["93.184.216.34"]]))
        let body: [UInt8] = Array(repeating: 7, count: 120)
        let request = ProviderRequest(deliveryId: 9, deviceToken: "https://push.example.com/wpush/v2/abc", payload: body,
                                      priority: .normal, collapseId: "thread-1", apnsId: "ignored", ttlSeconds: 120)
        guard case .ready(let http) = client.prepare(request) else { return XCTFail("refused") }
        XCTAssertEqual(http.url, "https://push.example.com/wpush/v2/abc")
        XCTAssertEqual(http.method, "POST")
        XCTAssertEqual(http.body, body)
        XCTAssertEqual(http.timeoutMillis, 4_000)
        XCTAssertEqual(http.headers.map(\.0), ["ttl", "urgency", "topic", "content-encoding", "content-type", "authorization"])
        XCTAssertEqual(Array(http.headers.map(\.1).prefix(5)), ["120", "normal", "thread-1", "aes128gcm", "application/octet-stream"])
        XCTAssertEqual(http.headers[5].1, try client.vapid.authorization(origin: "https://push.example.com", now: clock.nowUnixSeconds()))
    }
}
