import Foundation
import XCTest
import PushTestSupport
import PushProviders
@testable import PushStore
@testable import PushWorker

/// `PGProviderTokenCache`: one APNs JWT per key for the whole fleet (Apple's "Establishing a
/// token-based connection to APNs").
final class LiveTokenCacheTests: XCTestCase {
    var database: PGTestDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        database = try MigratedTestDatabase.create().database
    }

    override func tearDownWithError() throws {
        try database?.drop()
        try super.tearDownWithError()
    }

    func cache() -> PGProviderTokenCache {
        let url = database.conninfo
        return PGProviderTokenCache(log: Log(level: .error)) { try PGConnection.connect(url) }
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

    func testReplaceAfterRejectionHonoursTheTwentyMinuteFloor() throws {
        let a = cache()
        let t0 = try a.currentToken(for: "k", now: 10_000) { ProviderToken(value: "old", issuedAt: $0, refreshAt: $0 + 2700) }
        let young = try a.replaceToken(for: "k", rejected: "old", now: 10_000 + 600, minimumAgeSeconds: 1200) { _ in
            XCTFail("a token younger than 20 minutes is not replaced"); return t0
        }
        XCTAssertEqual(young.value, "old")
        let replaced = try cache().replaceToken(for: "k", rejected: "old", now: 10_000 + 1300, minimumAgeSeconds: 1200) {
            ProviderToken(value: "new", issuedAt: $0, refreshAt: $0 + 2700)
        }
        XCTAssertEqual(replaced.value, "new")
        // A caller still holding "old" gets the newer token, no second mint.
        let other = try a.replaceToken(for: "k", rejected: "old", now: 10_000 + 1301, minimumAgeSeconds: 1200) { _ in
            XCTFail("already replaced"); return replaced
        }
        XCTAssertEqual(other.value, "new")
    }

    func testUnreachableDatabaseFallsBackToAProcessLocalToken() throws {
        let broken = PGProviderTokenCache(log: Log(level: .error)) {
            throw PGError(code: .connection, message: "down", connectionBroken: true)
        }
        let t = try broken.currentToken(for: "k", now: 5) { ProviderToken(value: "local", issuedAt: $0, refreshAt: $0 + 60) }
        XCTAssertEqual(t.value, "local")
        XCTAssertEqual(try broken.currentToken(for: "k", now: 6) { _ in XCTFail("cached locally"); return t }.value, "local")
    }
}
