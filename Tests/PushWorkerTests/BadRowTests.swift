import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// Issue 13 "Rows the worker cannot use" and "Values that break the fleet": rows written past the
/// SQL functions (a partial restore with foreign keys bypassed, a hand-made INSERT). Each is set
/// aside or refused alone with a stable code; nothing else is lost, slowed or sent, and no row
/// takes the worker's readiness down.
final class BadRowTests: PGWorkerTestCase {
    /// Runs `sql` with foreign keys (and other triggers) off, as a partial restore does.
    private func pastForeignKeys(_ sql: String, _ params: [PGValue?] = []) throws {
        let c = try database.connect()
        try c.exec("SET session_replication_role = replica")
        try c.exec(sql, params)
    }

    func testAJobWhoseNotificationOrAppRowIsMissingIsSetAsideAtOnce() throws {
        let app = try createApp()
        try register(app, user: "good")
        let good = try enqueue(app, users: ["good"])
        try pastForeignKeys("""
            INSERT INTO push_jobs (kind, notification_id, app_id) VALUES ('notification', gen_random_uuid(), $1::uuid)
            """, [.uuid(app)])
        try pastForeignKeys("""
            WITH n AS (
                INSERT INTO push_notifications (app_id, mode, user_ids, title, expires_at)
                VALUES (gen_random_uuid(), 'test', '{good}', 't', now() + interval '1 day') RETURNING id, app_id)
            INSERT INTO push_jobs (kind, notification_id, app_id) SELECT 'notification', id, app_id FROM n
            """)
        let router = RecordingRouter()
        XCTAssertEqual(try makeWorker(router, claimLimit: 16).runOnce(connection: workerConn), 1,
                       "only the job that can run is handed over")
        XCTAssertEqual(try notification(good).status, "sent")
        let set = try conn.exec("SELECT state, attempt, last_error FROM push_jobs WHERE state <> 'completed' ORDER BY id")
        XCTAssertEqual(set.rowCount, 2)
        for i in set.rows {
            XCTAssertEqual(try set.string(i, "state"), "discarded", "set aside at once, not rescued again and again")
            XCTAssertEqual(try set.int(i, "attempt"), 1)
            XCTAssertTrue(try set.string(i, "last_error").hasPrefix("ORPHANED_JOB: "))
        }
        XCTAssertTrue(try set.string(0, "last_error").contains("notification row"))
        XCTAssertTrue(try set.string(1, "last_error").contains("app row"))
        XCTAssertEqual(router.pushes.count, 1)
    }

    /// A notification whose stored sound is 10 MB (written past push_enqueue, whose bound is 64
    /// bytes) is set aside without being loaded; the one claimed beside it is sent at once.
    func testAnOversizedStoredRowIsSetAsideWithoutLoadingIt() throws {
        let app = try createApp()
        try register(app, user: "u")
        let big = try enqueue(app, users: ["u"])
        let normal = try enqueue(app, users: ["u"])
        try conn.exec("UPDATE push_notifications SET sound = repeat('s', 10000000) WHERE id = $1", [.uuid(big)])
        let router = RecordingRouter()
        let claimed = try PGQueueStore(connection: workerConn).jobClaimBatch(owner: "t", limit: 8, leaseSeconds: 30)
        XCTAssertEqual(claimed.map(\.notification.id), [normal])
        let row = try conn.exec("SELECT state, last_error FROM push_jobs WHERE notification_id = $1", [.uuid(big)])
        XCTAssertEqual(try row.string(0, "state"), "discarded")
        XCTAssertTrue(try row.string(0, "last_error").hasPrefix("OVERSIZED_ROW: "))
        try conn.exec("UPDATE push_jobs SET state = 'available', lease_token = NULL, lease_expires_at = NULL WHERE notification_id = $1",
                      [.uuid(normal)])
        try drain(try makeWorker(router))
        XCTAssertEqual(try notification(normal).status, "sent")
        XCTAssertEqual(router.pushes.count, 1)
    }

    /// R-DEV-1 at send time: stored tokens with CR/LF, `/`, a space or `@`, and an iOS device
    /// without apns_environment, fail their own delivery INVALID_STORED_DEVICE: refunded, never
    /// handed to a provider, the device row untouched. The good devices of the batch are sent.
    func testStoredDevicesTheRegistryWouldRefuseFailInvalidStoredDevice() throws {
        let app = try createApp()
        let good = try (0..<3).map { try register(app, user: "u", platform: $0 % 2 == 0 ? "ios" : "android") }
        let tokens = ["bad\r\napns-topic: x", "a/b", "a b", "a@b"]
        var bad: [UUID] = []
        for (i, token) in tokens.enumerated() {
            let d = try register(app, user: "u", platform: i % 2 == 0 ? "ios" : "android")
            try conn.exec("UPDATE push_devices SET token = $1 WHERE id = $2", [.text(token), .uuid(d)])
            bad.append(d)
        }
        let noEnvironment = try register(app, user: "u", platform: "ios")
        try conn.exec("UPDATE push_devices SET apns_environment = NULL WHERE id = $1", [.uuid(noEnvironment)])
        bad.append(noEnvironment)
        let n = try enqueue(app, users: ["u"])
        let router = RecordingRouter()
        try drain(try makeWorker(router))

        let rows = try deliveries(n)
        for d in bad {
            XCTAssertEqual(rows[d]?.status, "failed")
            XCTAssertEqual(rows[d]?.errorCode, "INVALID_STORED_DEVICE")
            XCTAssertEqual(try net(n, d), 0, "refunded")
        }
        for d in good { XCTAssertEqual(rows[d]?.status, "sent") }
        XCTAssertEqual(Set(router.pushes.map(\.deviceID)), Set(good), "no provider call for a refused device")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_devices WHERE active"), good.count + bad.count, "devices untouched")
        XCTAssertEqual(try notification(n).deviceCount, good.count)
        try assertLedgerInvariants(n)
    }

    /// Times written past push_enqueue at PostgreSQL's infinities (a notification never due, a job
    /// due since forever) never take the worker's readiness down: it stays ready, with no database
    /// error, delivers what is due, and `jobs list`, the queue view and `notifications show` read them.
    func testInfiniteTimesNeverTakeTheWorkersReadinessDown() throws {
        let app = try createApp()
        try register(app, user: "u")
        let never = try enqueue(app, users: ["u"])
        try conn.exec("UPDATE push_notifications SET send_at = 'infinity', expires_at = 'infinity' WHERE id = $1", [.uuid(never)])
        try conn.exec("UPDATE push_jobs SET run_at = 'infinity' WHERE notification_id = $1", [.uuid(never)])
        let always = try enqueue(app, users: ["u"])
        try conn.exec("UPDATE push_jobs SET run_at = '-infinity' WHERE notification_id = $1", [.uuid(always)])

        let metrics = WorkerMetrics()
        let config = WorkerConfig(owner: "inf", claimLimit: 8, batchSize: 500, leaseSeconds: 30, pollInterval: 0.05,
                                  rescueInterval: 0.1, statsInterval: 0.1, retryPolicy: Self.fastRetry)
        let worker = try Worker(config: config, databaseURL: database.conninfo, router: RecordingRouter(), metrics: metrics,
                                log: Self.quietLog)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { worker.run(); done.signal() }
        defer {
            worker.requestStop()
            _ = done.wait(timeout: .now() + 10)
        }
        let deadline = Date().addingTimeInterval(10)
        while try notification(always).status != "sent", Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 1)  // several loop turns: sleeps until the next run time, stats refreshes
        XCTAssertEqual(try notification(always).status, "sent")
        XCTAssertEqual(metrics.ready.current, 1)
        XCTAssertEqual(metrics.dbErrors.current, 0, "no db_error loop")

        let store = PGQueueStore(connection: conn)
        let available = try store.jobList(state: .available)
        XCTAssertEqual(available.count, 1)
        XCTAssertEqual(available.first?.runAt, .distantFuture)
        XCTAssertEqual(try store.queueStats().available, 1)
        let report = try XCTUnwrap(try NotificationStore(connection: conn).report(id: never))
        XCTAssertEqual(report.sendAt, .distantFuture)
        XCTAssertEqual(try NotificationStore(connection: conn).report(id: always)?.status, "sent")
    }

    /// R-KIND-1..3 (moved here from `PushKindWorkerTests`, whose other scenarios run on both stores):
    /// a row written past push_enqueue that breaks a kind rule (a background push with a title, an
    /// unknown push type) fails its deliveries INVALID_DATA, refunded, nothing handed to a provider.
    func testKindRowsWrittenPastTheFunctionAreRefusedAtSendTime() throws {
        let app = try createApp()
        let d = try kindDevices(app, user: "u1")
        let titled = try enqueue(app, users: ["u1"])
        let unknown = try enqueue(app, users: ["u1"], title: nil)
        XCTAssertEqual(try conn.exec("UPDATE push_notifications SET push_type = 'background' WHERE id = $1", [.uuid(titled)])
            .affectedRowCount, 1)
        XCTAssertEqual(try conn.exec("UPDATE push_notifications SET push_type = 'voip' WHERE id = $1", [.uuid(unknown)])
            .affectedRowCount, 1)
        let router = RecordingRouter()
        try drain(try makeWorker(router))
        XCTAssertTrue(router.pushes.isEmpty)
        for n in [titled, unknown] {
            let rows = try deliveries(n)
            for device in [d.iosKey, d.iosPlain, d.androidKey, d.androidPlain, d.web] {
                XCTAssertEqual(rows[device]?.errorCode, "INVALID_DATA")
            }
            XCTAssertEqual(try notification(n).status, "failed")
            try assertLedgerInvariants(n)
        }
    }
}
