import Foundation
import XCTest
import PushCore
import PushStore

/// Concurrency and replicas (issue 14): 50 parallel PUTs of one token leave one device; a key
/// revoked while two replicas serve it is refused by both on the next request (R-API-3); a key's
/// rate limit holds across replicas within 20 %.
final class APIReplicaTests: APITestCase {
    /// Runs `body(i)` on `n` threads at once and waits for all.
    private func parallel(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for i in 0..<n {
            group.enter()
            Thread.detachNewThread {
                start.wait()
                body(i)
                group.leave()
            }
        }
        for _ in 0..<n { start.signal() }
        group.wait()
    }

    func testFiftyParallelRegistrationsOfOneTokenLeaveOneDevice() throws {
        let port = self.port, key = testKey
        let bodies = (0..<50).map { i in deviceJSON(token: "same_token", user: "user_\(i % 3)", key: i % 2 == 0 ? Self.vectorPublicKey : nil) }
        let results = LockedList<(Int, String?)>()
        parallel(50) { i in
            let r = try? RawHTTP.call(port: port, "PUT", "/v1/push/devices",
                                      headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")],
                                      body: Array(bodies[i].utf8))
            results.append((r?.status ?? 0, r?.json["id"] as? String))
        }
        let all = results.items
        XCTAssertEqual(all.map(\.0), Array(repeating: 200, count: 50), "every registration answered 200")
        XCTAssertEqual(Set(all.compactMap(\.1)).count, 1, "one device id for one token (R-DEV-2)")
        XCTAssertEqual(try count("push_devices", "token = 'same_token'"), 1)
        XCTAssertEqual(try conn.exec("SELECT active_count FROM push_device_counts WHERE app_id = $1::uuid AND mode = 'test'",
                                     [.uuid(app)]).int(0, 0), 1)
    }

    func testARevokedKeyIsRefusedByEveryReplicaOnItsNextRequest() throws {
        let replica = try startServer()
        extraServers.append(replica)
        let key = try issue(.test)
        for port in [self.port, replica.api.port] {
            for _ in 0..<3 { XCTAssertEqual(try call("GET", "/v1/push/apps", key: key, on: port).status, 200) }
        }
        // Revoked through replica A's database session (the CLI's path), then asked at once of both.
        let id = try conn.exec("SELECT id FROM push_api_keys WHERE key_hash = $1::bytea", [.bytea(try APIKeyFormat.hash(key))]).uuid(0, 0)
        let revoked = try XCTUnwrap(try AccountStore(connection: conn).revokeKey(id: id))
        XCTAssertNotNil(revoked.revokedAt)
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: key, on: replica.api.port).status, 401)
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: key, on: self.port).status, 401)
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: testKey, on: replica.api.port).status, 200, "other keys unaffected")
    }

    func testARateLimitHoldsAcrossReplicasWithinTwentyPercent() throws {
        let replica = try startServer()
        extraServers.append(replica)
        let rate = 40
        let key = try issue(.test, rate: rate)
        let ports = [self.port, replica.api.port]
        let admitted = LockedList<Int>(), limited = LockedList<String>()
        let seconds = 3.0
        let started = Date()
        parallel(8) { i in
            guard let c = try? RawHTTP(port: ports[i % 2]) else { return }
            while Date().timeIntervalSince(started) < seconds {
                guard let r = try? c.request("GET", "/v1/push/apps", headers: [("Authorization", "Bearer \(key)")]) else { return }
                if r.status == 200 { admitted.append(1) }
                if r.status == 429 { limited.append(r.headers["retry-after"] ?? "") }
            }
        }
        let elapsed = Date().timeIntervalSince(started)
        // A bucket of one second's worth, refilled at the rate: rate * (elapsed + 1) at most.
        let expected = Double(rate) * (elapsed + 1)
        let got = Double(admitted.items.count)
        XCTAssertLessThanOrEqual(got, expected * 1.2, "admitted \(got) in \(elapsed) s at \(rate)/s across 2 replicas")
        XCTAssertGreaterThanOrEqual(got, expected * 0.8, "admitted \(got) in \(elapsed) s at \(rate)/s across 2 replicas")
        XCTAssertFalse(limited.items.isEmpty)
        XCTAssertTrue(limited.items.allSatisfy { (Int($0) ?? 0) >= 1 }, "429 carries Retry-After")
        let refused = try call("GET", "/v1/push/apps", key: key)
        if refused.status == 429 { XCTAssertEqual(refused.errorCode, "RATE_LIMITED") }
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: testKey).status, 200, "another key has its own budget")
    }
}

/// A list appended to from several threads.
final class LockedList<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [T] = []
    func append(_ item: T) { lock.withLock { storage.append(item) } }
    var items: [T] { lock.withLock { storage } }
}
