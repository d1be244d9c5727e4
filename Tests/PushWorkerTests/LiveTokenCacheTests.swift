import Foundation
import XCTest
import PushCrypto
import PushTestSupport
import PushProviders
@testable import PushStore
@testable import PushWorker

/// `PGProviderTokenCache`: one APNs JWT per key for the whole fleet (Apple's "Establishing a token-based connection to APNs"), replaced at
/// once when the provider rejects it, stored sealed (issue 11).
final class LiveTokenCacheTests: XCTestCase {
    var database: PGTestDatabase!
    var keys: CredentialKeys!

    override func setUpWithError() throws {
        try super.setUpWithError()
        database = try MigratedTestDatabase.create().database
        keys = try CredentialKeys(current: SecretBox.generateKey())
    }

    override func tearDownWithError() throws {
        try database?.drop()
        try super.tearDownWithError()
    }

    func cache(keys: CredentialKeys? = nil) -> PGProviderTokenCache {
        let url = database.conninfo
        return PGProviderTokenCache(keys: keys ?? self.keys, log: Log(level: .error)) { try PGConnection.connect(url) }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func next() -> Int { lock.withLock { n += 1; return n } }
        var value: Int { lock.withLock { n } }
    }

    func testTwoCachesOnTwoConnectionsMintingConcurrentlyProduceOneToken() throws {
        let caches = [cache(), cache()]
        let mints = Counter()
        let results = NSMutableArray()
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let t = try? caches[i].currentToken(for: "apns:T:K", now: 1_000_000) { now in
                let n = mints.next()
                Thread.sleep(forTimeInterval: 0.3)  // widen the window a second minter would use
                return ProviderToken(value: "jwt-\(n)", issuedAt: now, refreshAt: now + 2700)
            }
            lock.withLock { results.add(t?.value ?? "error") }
        }
        XCTAssertEqual(mints.value, 1)
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results[0] as? String, "jwt-1")
        XCTAssertEqual(results[1] as? String, "jwt-1")
    }

    func testStoredTokenIsReusedUntilRefreshThenReminted() throws {
        let a = cache(), b = cache()
        let first = try a.currentToken(for: "k", now: 1000) { ProviderToken(value: "one", issuedAt: $0, refreshAt: $0 + 2700) }
        let reused = try b.currentToken(for: "k", now: 3000) { _ in XCTFail("must not mint"); return first }
        XCTAssertEqual(reused, first)
        let fresh = try b.currentToken(for: "k", now: 3700) { ProviderToken(value: "two", issuedAt: $0, refreshAt: $0 + 2700) }
        XCTAssertEqual(fresh.value, "two")
        XCTAssertEqual(try a.currentToken(for: "k", now: 3701) { _ in XCTFail("must not mint"); return fresh }.value, "two")
    }

    /// Issue 11: a rejected token is replaced at once, even 10 minutes old (APNs called it expired);
    /// a caller still holding it gets the replacement without a second mint.
    func testRejectedTokenIsReplacedAtOnceWhateverItsAgeAndOnlyOnce() throws {
        let a = cache()
        let t0 = try a.currentToken(for: "k", now: 10_000) { ProviderToken(value: "old", issuedAt: $0, refreshAt: $0 + 2700) }
        let replaced = try cache().replaceToken(for: "k", rejected: "old", now: 10_000 + 600) {
            ProviderToken(value: "new", issuedAt: $0, refreshAt: $0 + 2700)
        }
        XCTAssertEqual(replaced.value, "new")
        XCTAssertEqual(replaced.issuedAt, 10_600)
        let other = try a.replaceToken(for: "k", rejected: "old", now: 10_000 + 601) { _ in
            XCTFail("already replaced"); return t0
        }
        XCTAssertEqual(other.value, "new")
        XCTAssertEqual(try a.currentToken(for: "k", now: 10_602) { _ in XCTFail("stored"); return t0 }.value, "new")
    }

    /// Two processes (two caches, two connections) rejected by the provider at the same moment:
    /// exactly one of them mints the replacement, under the key's advisory lock.
    func testTwoCachesReplacingOneRejectedTokenConcurrentlyMintOnce() throws {
        _ = try cache().currentToken(for: "apns:T:K:fp", now: 1_000) { ProviderToken(value: "old", issuedAt: $0, refreshAt: $0 + 2700) }
        let caches = [cache(), cache()]
        let mints = Counter()
        var results = [String](repeating: "", count: 2)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let t = try? caches[i].replaceToken(for: "apns:T:K:fp", rejected: "old", now: 1_100) { now in
                let n = mints.next()
                Thread.sleep(forTimeInterval: 0.3)  // widen the window a second minter would use
                return ProviderToken(value: "new-\(n)", issuedAt: now, refreshAt: now + 2700)
            }
            lock.withLock { results[i] = t?.value ?? "error" }
        }
        XCTAssertEqual(mints.value, 1)
        XCTAssertEqual(results, ["new-1", "new-1"])
    }

    /// Issue 11: the row holds no usable JWT in clear: `token` is NULL and `sealed_token` is an
    /// AES-256-GCM box that opens only with the credentials key and this row's cache key.
    func testStoredTokenIsSealedUnderTheCredentialsKeyAndBoundToItsRow() throws {
        let jwt = "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJl"
        _ = try cache().currentToken(for: "apns:T:K:fp", now: 1_000) { ProviderToken(value: jwt, issuedAt: $0, refreshAt: $0 + 2700) }
        let conn = try PGConnection.connect(database.conninfo)
        let r = try conn.exec("SELECT token, sealed_token, cache_key FROM push_provider_tokens")
        XCTAssertEqual(r.rowCount, 1)
        XCTAssertNil(try r.decode(0, "token") as String?)
        let box = try r.bytes(0, "sealed_token")
        XCTAssertEqual(box.count, jwt.utf8.count + SecretBox.overhead)
        let text = String(decoding: box, as: UTF8.self)
        XCTAssertFalse(text.contains("eyJ"), "no JOSE header in clear")
        XCTAssertNil(Self.find(Array(jwt.utf8.prefix(16)), in: box))
        XCTAssertEqual(try SecretBox.open(box, key: keys.current, aad: Array("push_provider_tokens/apns:T:K:fp".utf8)),
                       Array(jwt.utf8))
        XCTAssertThrowsError(try SecretBox.open(box, key: try SecretBox.generateKey(), aad: Array("push_provider_tokens/apns:T:K:fp".utf8)))

        // A box moved to another key's row does not open there: that row reads as absent and is re-minted.
        _ = try conn.exec("INSERT INTO push_provider_tokens (cache_key, sealed_token, issued_at, expires_at) VALUES ('apns:T:K:other', $1::bytea, now(), now() + interval '1 hour')",
                          [.bytea(box)])
        let other = try cache().currentToken(for: "apns:T:K:other", now: 1_001) { ProviderToken(value: "minted", issuedAt: $0, refreshAt: $0 + 2700) }
        XCTAssertEqual(other.value, "minted")
        // A cache with another credentials key cannot read the token either: it mints its own.
        let stranger = try cache(keys: try CredentialKeys(current: SecretBox.generateKey()))
            .currentToken(for: "apns:T:K:fp", now: 1_002) { ProviderToken(value: "stranger", issuedAt: $0, refreshAt: $0 + 2700) }
        XCTAssertEqual(stranger.value, "stranger")
    }

    /// `rotate-key` re-seals the stored tokens under the new key (opened with the previous one) and
    /// deletes a token that opens with neither.
    func testRotateKeyResealsStoredTokens() throws {
        _ = try cache().currentToken(for: "k1", now: 1_000) { ProviderToken(value: "jwt-1", issuedAt: $0, refreshAt: $0 + 2700) }
        let lost = try CredentialKeys(current: SecretBox.generateKey())
        _ = try cache(keys: lost).currentToken(for: "k2", now: 1_000) { ProviderToken(value: "jwt-2", issuedAt: $0, refreshAt: $0 + 2700) }
        let rotated = try CredentialKeys(current: SecretBox.generateKey(), previous: keys.current)
        let conn = try PGConnection.connect(database.conninfo)
        XCTAssertEqual(try CredentialStore(connection: conn, keys: rotated).rotateKey(), 0, "no credential set in this database")
        let newOnly = try CredentialKeys(current: rotated.current)
        XCTAssertEqual(try cache(keys: newOnly).currentToken(for: "k1", now: 1_001) { _ in XCTFail("re-sealed"); throw PGError(code: .decode, message: "") }.value,
                       "jwt-1")
        XCTAssertEqual(try conn.exec("SELECT count(*)::int AS n FROM push_provider_tokens WHERE cache_key = 'k2'").int(0, "n"), 0)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }

    func testUnreachableDatabaseFallsBackToAProcessLocalToken() throws {
        let broken = PGProviderTokenCache(keys: keys, log: Log(level: .error)) {
            throw PGError(code: .connection, message: "down", connectionBroken: true)
        }
        let t = try broken.currentToken(for: "k", now: 5) { ProviderToken(value: "local", issuedAt: $0, refreshAt: $0 + 60) }
        XCTAssertEqual(t.value, "local")
        XCTAssertEqual(try broken.currentToken(for: "k", now: 6) { _ in XCTFail("cached locally"); return t }.value, "local")
    }
}


/// `TokenIsolationScenarios` (issue 11, R-PRV-3; LiveTokenIsolationTests.swift, run there on the
/// in-memory store) on PostgreSQL, each APNs run also finding one stored JWT per signing key in
/// push_provider_tokens; and the fleet-wide sharing through that table, PostgreSQL only.
final class PGTokenIsolationTests: TokenIsolationScenarios {
    override class var backend: Backend { .postgres }

    func testAPNsSetsWithSameTeamAndKeyIdsButAnotherKeyRightOneFirstR_PRV_3() throws {
        try checkAPNsIsolation(rightFirst: true)
        try assertOneStoredJWTPerSigningKey()
    }

    func testAPNsSetsWithSameTeamAndKeyIdsButAnotherKeyWrongOneFirstR_PRV_3() throws {
        try checkAPNsIsolation(rightFirst: false)
        try assertOneStoredJWTPerSigningKey()
    }

    func testFCMSetsWithSameClientEmailButAnotherKeyRightOneFirstR_PRV_3() throws { try checkFCMIsolation(rightFirst: true) }
    func testFCMSetsWithSameClientEmailButAnotherKeyWrongOneFirstR_PRV_3() throws { try checkFCMIsolation(rightFirst: false) }

    private func assertOneStoredJWTPerSigningKey() throws {
        let keys = try conn.exec("SELECT cache_key FROM push_provider_tokens ORDER BY cache_key").rows.count
        XCTAssertEqual(keys, 2, "one stored JWT per signing key")
    }

    /// Issue 11: one APNs JWT per signing key for the whole fleet, shared through
    /// push_provider_tokens (sealed): two notifications, two worker "processes", one signature.
    func testAcceptedSendsAcrossNotificationsAndWorkersCarryOneJWT() throws {
        try setAPNs()
        for i in 0..<4 { _ = try device("ok", user: "u\(i)", n: i) }
        try drainSend(users: ["u0", "u1"])
        try makeWorker(apnsTimeoutMillis: 10_000)  // a second worker "process": new router, clients and cache
        try drainSend(users: ["u2", "u3"])
        let logged = pushes(fakes.apns)
        XCTAssertEqual(logged.count, 4)
        XCTAssertEqual(Set(logged.compactMap { $0["jwt_sig"] as? String }).count, 1)
        let fingerprint = try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_key.p8"), keyId: LiveFakes.keyID)
            .publicKeyFingerprint
        let r = try conn.exec("SELECT count(*)::int AS n FROM push_provider_tokens WHERE cache_key = $1::text AND token IS NULL",
                              [.text("apns:\(LiveFakes.teamID):\(LiveFakes.keyID):\(fingerprint)")])
        XCTAssertEqual(try r.int(0, "n"), 1, "one sealed row, keyed by the signing key (issue 11)")
    }

    private func drainSend(users: [String]) throws {
        let n = try send(users: users)
        try drain()
        XCTAssertTrue(try report(n).deliveries.allSatisfy { $0.status == "sent" }, "setup send did not succeed")
    }
}
