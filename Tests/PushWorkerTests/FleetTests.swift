import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// Several workers on one queue, and the worker's own loop (`run`, graceful stop).
final class FleetTests: PGWorkerTestCase {
    /// DESIGN guarantees: two workers (threads, connections) draining one split audience with
    /// retries in it end every (notification, device) with exactly one final delivery; a device the
    /// simulator accepts at once is handed to a provider exactly once; the ledger holds at most one
    /// charge and one refund per device and device_count matches it.
    func testTwoWorkersDrainingOneAudienceEndEveryDeliveryExactlyOnce() throws {
        let app = try createApp()
        let special = ["test_unavailable", "test_rate_limited", "test_timeout", "test_unregistered"]
        try conn.exec("BEGIN")
        for u in 0..<60 {
            for d in 0..<20 {
                let token = u == 0 && d < special.count ? special[d] : "fleet-\(u)-\(d)"
                try register(app, user: "user-\(u)", platform: d % 2 == 0 ? "ios" : "android", token: token,
                             key: d % 5 == 0 ? try P256PrivateKey.generate() : nil, appLimit: 10_000)
            }
        }
        try conn.exec("COMMIT")
        let n = try enqueue(app, users: (0..<60).map { "user-\($0)" })
        let router = RecordingRouter()
        let workers = [try makeWorker(router, owner: "fleet-a", batchSize: 100, claimLimit: 2),
                       try makeWorker(router, owner: "fleet-b", batchSize: 100, claimLimit: 2)]
        let connections = [try database.connect(), try database.connect()]
        let errors = LockedBox<[String]>([])
        let group = DispatchGroup()
        for i in 0..<2 {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                do { try drain(workers[i], connection: connections[i], timeout: 90) } catch {
                    errors.update { $0.append(String(describing: error)) }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(errors.value, [])
        XCTAssertGreaterThan(workers[0].processedJobs, 0)
        XCTAssertGreaterThan(workers[1].processedJobs, 0)

        let rows = try deliveries(n)
        XCTAssertEqual(rows.count, 1200)
        XCTAssertTrue(rows.values.allSatisfy { $0.status != "retrying" })
        let tokens = try conn.exec("SELECT id, token FROM push_devices")
        var tokenOf: [UUID: String] = [:]
        for i in tokens.rows { tokenOf[try tokens.uuid(i, "id")] = try tokens.string(i, "token") }
        var handed: [UUID: Int] = [:]
        for p in router.pushes { handed[p.deviceID, default: 0] += 1 }
        for (device, row) in rows where tokenOf[device]?.hasPrefix("fleet-") == true {
            XCTAssertEqual(row.status, "sent")
            XCTAssertEqual(handed[device], 1, "handed to the provider exactly once")
        }
        XCTAssertEqual(rows.values.filter { $0.errorCode == "RETRIES_EXHAUSTED" }.count, 1)
        XCTAssertEqual(rows.values.filter { $0.errorCode == "UNREGISTERED" }.count, 1)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE notification_id = $1 AND kind = 'batch'"
                               + " AND device_ids IS NOT NULL AND cardinality(device_ids) = 100", [.uuid(n)]), 12)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state <> 'completed'"), 0)
        let state = try notification(n)
        XCTAssertEqual(state.status, "sent")
        XCTAssertEqual(state.deviceCount, 1199, "every device but the exhausted one nets one charge")
        try assertLedgerInvariants(n)
    }

    /// The worker's own loop (`run`, with its lease keeper) sends what is queued, and
    /// `requestStop` ends it promptly.
    func testRunLoopSendsQueuedWorkAndStopsWhenAsked() throws {
        let app = try createApp()
        try register(app, user: "u1")
        try register(app, user: "u2", platform: "android", key: try P256PrivateKey.generate())
        let ids = [try enqueue(app, users: ["u1"]), try enqueue(app, users: ["u2"]), try enqueue(app, users: ["u1", "u2"])]
        let worker = try makeWorker()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            worker.run()
            done.signal()
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline,
              try int("SELECT count(*)::int FROM push_notifications WHERE finished_at IS NULL") > 0 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        worker.requestStop()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "run() returns after requestStop()")
        for n in ids { XCTAssertEqual(try notification(n).status, "sent") }
        XCTAssertEqual(try notification(ids[2]).deviceCount, 2)
        XCTAssertEqual(worker.processedJobs, 3)
    }

    /// Graceful shutdown: jobs claimed after a stop was requested are given back untouched
    /// (available, attempt not spent, nothing recorded), and another worker sends them.
    func testStopRequestedReleasesClaimedJobsUntouched() throws {
        let app = try createApp()
        try register(app, user: "u1")
        let ids = try (0..<3).map { _ in try enqueue(app, users: ["u1"]) }
        let stopping = try makeWorker()
        stopping.requestStop()
        XCTAssertEqual(try stopping.runOnce(connection: workerConn), 3)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE state = 'available' AND attempt = 0"), 3)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_deliveries"), 0)
        XCTAssertEqual(stopping.processedJobs, 0)
        try drain(try makeWorker())
        for n in ids { XCTAssertEqual(try notification(n).status, "sent") }
    }
}
