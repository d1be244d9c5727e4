import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// Several workers on one queue, and the worker's own loop (`run`, graceful stop), on both stores:
/// `FleetTests` runs these scenarios on the in-memory store, `PGQueueConformanceTests` on
/// PostgreSQL (each worker on its own connection, the claim's `SKIP LOCKED`, the lease keeper's
/// heartbeats on theirs).
extension WorkerTestCase {
    /// DESIGN guarantees: two workers (threads, sessions) draining one split audience with
    /// retries in it end every (notification, device) with exactly one final delivery; a device the
    /// simulator accepts at once is handed to a provider exactly once; the ledger holds at most one
    /// charge and one refund per device and device_count matches it (R-SEND-8, R-SEND-9).
    func conformTwoWorkersDrainingOneAudienceEndEveryDeliveryExactlyOnce() throws {
        let app = try createApp()
        let special = ["test_unavailable", "test_rate_limited", "test_timeout", "test_unregistered"]
        var tokenOf: [UUID: String] = [:]
        try world.inOneTransaction {
            for u in 0..<60 {
                for d in 0..<20 {
                    let token = u == 0 && d < special.count ? special[d] : "fleet-\(u)-\(d)"
                    let id = try register(app, user: "user-\(u)", platform: d % 2 == 0 ? "ios" : "android", token: token,
                                          key: d % 5 == 0 ? try P256PrivateKey.generate() : nil, appLimit: 10_000)
                    tokenOf[id] = token
                }
            }
        }
        let n = try enqueue(app, users: (0..<60).map { "user-\($0)" })
        let router = RecordingRouter()
        let workers = [try makeWorker(router, owner: "fleet-a", batchSize: 100, claimLimit: 2),
                       try makeWorker(router, owner: "fleet-b", batchSize: 100, claimLimit: 2)]
        let sessions = [try world.session(), try world.session()]
        let errors = LockedBox<[String]>([])
        let group = DispatchGroup()
        for i in 0..<2 {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                do { try drain(workers[i], session: sessions[i], timeout: 90) } catch {
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
        var handed: [UUID: Int] = [:]
        for p in router.pushes { handed[p.deviceID, default: 0] += 1 }
        for (device, row) in rows where tokenOf[device]?.hasPrefix("fleet-") == true {
            XCTAssertEqual(row.status, "sent")
            XCTAssertEqual(handed[device], 1, "handed to the provider exactly once")
        }
        XCTAssertEqual(rows.values.filter { $0.errorCode == "RETRIES_EXHAUSTED" }.count, 1)
        XCTAssertEqual(rows.values.filter { $0.errorCode == "UNREGISTERED" }.count, 1)
        let jobs = try world.jobs()
        XCTAssertEqual(jobs.filter { $0.notificationID == n && $0.kind == .batch && $0.deviceIDs?.count == 100 }.count, 12)
        XCTAssertEqual(jobs.filter { $0.state != .completed }.count, 0)
        let state = try notification(n)
        XCTAssertEqual(state.status, "sent")
        XCTAssertEqual(state.deviceCount, 1199, "every device but the exhausted one nets one charge")
        try assertLedgerInvariants(n)
    }

    /// The worker's own loop (`run`, with its lease keeper) sends what is queued, and
    /// `requestStop` ends it promptly.
    func conformRunLoopSendsQueuedWorkAndStopsWhenAsked() throws {
        let app = try createApp()
        try register(app, user: "u1")
        try register(app, user: "u2", platform: "android", key: try P256PrivateKey.generate())
        let ids = [try enqueue(app, users: ["u1"]), try enqueue(app, users: ["u2"]), try enqueue(app, users: ["u1", "u2"])]
        let worker = try makeWorker()
        let done = worker.runOnItsOwnThread()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, try world.openNotifications() > 0 {
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
    func conformStopRequestedReleasesClaimedJobsUntouched() throws {
        let app = try createApp()
        try register(app, user: "u1")
        let ids = try (0..<3).map { _ in try enqueue(app, users: ["u1"]) }
        let stopping = try makeWorker()
        stopping.requestStop()
        XCTAssertEqual(try runOnce(stopping), 3)
        XCTAssertEqual(try world.jobs().filter { $0.state == .available && $0.attempt == 0 }.count, 3)
        for n in ids { XCTAssertEqual(try deliveries(n).count, 0) }
        XCTAssertEqual(stopping.processedJobs, 0)
        try drain(try makeWorker())
        for n in ids { XCTAssertEqual(try notification(n).status, "sent") }
    }
}

/// The fleet scenarios on the in-memory store (their PostgreSQL run: `PGQueueConformanceTests`).
final class FleetTests: WorkerTestCase {
    func testTwoWorkersDrainingOneAudienceEndEveryDeliveryExactlyOnce() throws {
        try conformTwoWorkersDrainingOneAudienceEndEveryDeliveryExactlyOnce()
    }
    func testRunLoopSendsQueuedWorkAndStopsWhenAsked() throws { try conformRunLoopSendsQueuedWorkAndStopsWhenAsked() }
    func testStopRequestedReleasesClaimedJobsUntouched() throws { try conformStopRequestedReleasesClaimedJobsUntouched() }
}
