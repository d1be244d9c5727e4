import Foundation
import XCTest
import PushCore
@testable import PushStore

/// The registry's invariants under parallel callers: real commits, one connection per thread, all
/// threads released at once. None may see a deadlock or serialization error (DeviceRegistry
/// retries them), and the tables must hold the invariants afterwards (R-DEV-2, R-DEV-5, R-DEV-6).
final class DeviceRegistryConcurrencyTests: RegistryTestCase {
    func testRDEV2FiftyParallelRegistrationsOfOneTokenLeaveExactlyOneDevice() throws {
        let results = try inParallel(50) { i, c -> RegistrationResult in
            // Five users: the same token races both under one user's lock and across users.
            try DeviceRegistry(connection: c).register(appID: self.appID, try self.iosDevice("tok_shared", user: "u\(i % 5)"))
        }
        let ids = try results.map { try $0.get().deviceID }
        XCTAssertEqual(Set(ids).count, 1, "every registration names the same device")
        XCTAssertEqual(results.filter { (try? $0.get().created) == true }.count, 1, "exactly one created it")
        XCTAssertEqual(try rowCount(), 1)
        XCTAssertEqual(try activeCount(), 1)
        XCTAssertEqual(try counter(), 1)
    }

    func testRDEV5ThirtyParallelNewDevicesForOneUserLeaveTwentyActiveAndTenEvents() throws {
        let results = try inParallel(30) { i, c -> RegistrationResult in
            try DeviceRegistry(connection: c).register(appID: self.appID, try self.iosDevice("tok_\(i)", user: "alice"))
        }
        let outcomes = try results.map { try $0.get() }
        XCTAssertTrue(outcomes.allSatisfy(\.created))
        XCTAssertEqual(try activeCount(user: "alice"), 20)
        let events = try deactivationEvents(reason: "DEVICE_LIMIT")
        XCTAssertEqual(events.count, 10)
        XCTAssertEqual(Set(events).count, 10, "one event per deactivated device")
        let inactive = try registry.list(appID: appID, mode: .live, userID: "alice", active: false)
        XCTAssertEqual(Set(inactive.map(\.id)), Set(events))
        XCTAssertTrue(inactive.allSatisfy { $0.deactivationReason == "DEVICE_LIMIT" })
        XCTAssertEqual(Set(outcomes.flatMap(\.evicted)), Set(events), "each eviction reported to its caller")
        XCTAssertEqual(outcomes.flatMap(\.evicted).count, 10)
        // The survivors are the 20 most recently registered.
        let active = try registry.list(appID: appID, mode: .live, userID: "alice", active: true)
        let newestEvicted = try XCTUnwrap(inactive.map(\.lastRegisteredAt).max())
        XCTAssertTrue(active.allSatisfy { $0.lastRegisteredAt >= newestEvicted })
        XCTAssertEqual(try counter(), 20)
    }

    func testRDEV6ParallelRegistrationsAtTheAppLimitNeverExceedIt() throws {
        let results = try inParallel(25) { i, c -> RegistrationResult in
            try DeviceRegistry(connection: c, appLimitOverride: 10)
                .register(appID: self.appID, try self.iosDevice("tok_\(i)", user: "u\(i % 4)"))
        }
        var accepted = 0, refused = 0
        for result in results {
            switch result {
            case .success: accepted += 1
            case .failure(let e as PushError) where e.code == .pushDeviceLimit: refused += 1
            case .failure(let e): XCTFail("unexpected error \(e)")
            }
        }
        XCTAssertEqual(accepted, 10)
        XCTAssertEqual(refused, 15)
        XCTAssertEqual(try activeCount(), 10)
        XCTAssertEqual(try rowCount(), 10, "refused devices leave no row")
        XCTAssertEqual(try counter(), 10)
    }

    func testMixedParallelRegistrationsMovesAndDeletesKeepEveryInvariant() throws {
        // 12 threads x 25 operations on 60 tokens shared by 2 users: creations, moves between
        // users (evicting at 20), deletes and reactivations, all racing, at an app limit of 45.
        let results = try inParallel(12) { worker, c -> Int in
            let registry = DeviceRegistry(connection: c, appLimitOverride: 45)
            var generator = SystemRandomNumberGenerator()
            var limited = 0
            for step in 0..<25 {
                let token = "tok_\(Int.random(in: 0..<60, using: &generator))"
                let user = (worker + step) % 2 == 0 ? "alice" : "bob"
                do {
                    let r = try registry.register(appID: self.appID, try self.iosDevice(token, user: user))
                    if step % 5 == 4 { _ = try registry.delete(appID: self.appID, mode: .live, deviceID: r.deviceID) }
                } catch let e as PushError where e.code == .pushDeviceLimit {
                    limited += 1
                }
            }
            return limited
        }
        for result in results { XCTAssertNoThrow(try result.get()) }
        XCTAssertLessThanOrEqual(try activeCount(user: "alice"), 20)
        XCTAssertLessThanOrEqual(try activeCount(user: "bob"), 20)
        XCTAssertLessThanOrEqual(try activeCount(), 45)
        XCTAssertEqual(try counter(), try activeCount(), "the counter equals the truth")
        XCTAssertLessThanOrEqual(try rowCount(), 60)
        let duplicates = try conn.exec("""
            SELECT count(*) FROM (SELECT token FROM push_devices WHERE app_id = $1 GROUP BY mode, token HAVING count(*) > 1) d
            """, [.uuid(appID)]).int(0, 0)
        XCTAssertEqual(duplicates, 0)
    }

    func testDeadlockAgainstAnotherSessionIsRetriedNotSurfaced() throws {
        try register(iosDevice("seed", user: "seed"))
        let victim = try database.connect()
        try victim.exec("SET deadlock_timeout = '300ms'")
        try conn.exec("SET deadlock_timeout = '30s'")
        let deadlocksBefore = try deadlockCount()
        // This session holds the app's count row, which the registration will wait for...
        try conn.exec("BEGIN")
        try conn.exec("SELECT active_count FROM push_device_counts WHERE app_id = $1 AND mode = 'live' FOR UPDATE",
                      [.uuid(appID)])
        let outcome = PGLockedBox<Result<RegistrationResult, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let registration = try iosDevice("tok_new", user: "alice")
        let appID = self.appID!
        let victimBox = PGLockedBox(victim)
        Thread {
            outcome.update { $0 = Result { try DeviceRegistry(connection: victimBox.value).register(appID: appID, registration) } }
            done.signal()
        }.start()
        // ...once it waits (holding alice's advisory lock), ask for that lock: a cycle.
        let pid = Int(victim.serverProcessID)
        var waiting = false
        for _ in 0..<500 where !waiting {
            waiting = try conn.exec("SELECT coalesce(wait_event_type = 'Lock', false) AS w FROM pg_stat_activity WHERE pid = $1",
                                    [.int(pid)]).bool(0, "w")
            if !waiting { Thread.sleep(forTimeInterval: 0.01) }
        }
        XCTAssertTrue(waiting, "the registration never waited for the count row")
        try conn.exec("SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/live/alice', 0))", [.uuid(appID)])
        try conn.exec("ROLLBACK")
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let result = try XCTUnwrap(outcome.value).get()
        XCTAssertTrue(result.created, "the registration went through on a later attempt")
        XCTAssertEqual(try activeCount(), 2)
        XCTAssertEqual(try counter(), 2)
        // The victim's statistics reach pg_stat_database when it next goes idle with a forced flush.
        try victim.exec("SELECT pg_stat_force_next_flush()")
        try victim.exec("SELECT 1")
        var deadlocks = try deadlockCount()
        for _ in 0..<50 where deadlocks == deadlocksBefore {
            Thread.sleep(forTimeInterval: 0.1)
            deadlocks = try deadlockCount()
        }
        XCTAssertGreaterThan(deadlocks, deadlocksBefore, "the server saw the deadlock the registry retried")
    }

    private func deadlockCount() throws -> Int {
        try conn.exec("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").int(0, 0)
    }
}
