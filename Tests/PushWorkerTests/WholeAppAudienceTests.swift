import Foundation
import PushTestSupport
import XCTest
import PushAcceptance
import PushCore
@testable import PushStore
@testable import PushWorker

/// Whole-app audiences (issue 22, R-SEND-1 at the send time, R-KIND-5): `audience: all` accepted
/// through `AcceptanceService`, split at the send time by `push_split_audience` into batch jobs in
/// bounded steps, charged batch by batch as the jobs are made; in test mode at the R-DEV-6 cap.
final class WholeAppAudienceTests: PGWorkerTestCase {
    func registerMany(_ app: UUID, mode: Mode, count: Int, prefix: String) throws -> [UUID: String] {
        try conn.registerMany(app, mode: mode, count: count, prefix: prefix)
    }

    func deactivate(_ ids: [UUID]) throws {
        for id in ids {
            _ = try conn.exec("""
                SELECT push_delete_device(app_id, mode, id) FROM push_devices WHERE id = $1::uuid
                """, [.uuid(id)])
        }
    }

    func broadcast(_ app: UUID, mode: Mode, platforms: [String]? = nil) throws -> UUID {
        var q = SendRequest(appID: app, mode: mode, userIDs: [])
        q.audience = "all"
        q.platforms = platforms
        q.title = "Service update"
        q.body = "Back to normal"
        return try AcceptanceService(connection: conn).send(q).notificationID
    }

    /// Devices of the notification's batch jobs, with their multiplicity.
    func batchDevices(_ n: UUID) throws -> [UUID: Int] {
        let r = try conn.exec("""
            SELECT d AS device_id, count(*)::int AS n FROM push_jobs j, unnest(j.device_ids) d
             WHERE j.notification_id = $1::uuid AND j.kind = 'batch' GROUP BY d
            """, [.uuid(n)])
        var out: [UUID: Int] = [:]
        for i in r.rows { out[try r.uuid(i, "device_id")] = try r.int(i, "n") }
        return out
    }

    func testTestModeAtTheCapReachesEveryActiveTestDeviceOnceAndNothingElse() throws {
        let app = try createApp()
        var test = try registerMany(app, mode: .test, count: 1000, prefix: "t")
        // At the cap (R-DEV-6): a 1,001st test device is refused.
        XCTAssertThrowsError(try register(app, user: "one-more")) { error in
            XCTAssertTrue(String(describing: error).contains("DEVICE_LIMIT"), String(describing: error))
        }
        // Five removed (inactive, left out), five others registered: 1,000 active again.
        let removed = Array(test.keys.sorted { $0.uuidString < $1.uuidString }.prefix(5))
        try deactivate(removed)
        for id in removed { test[id] = nil }
        test.merge(try registerMany(app, mode: .test, count: 5, prefix: "t2")) { a, _ in a }
        XCTAssertEqual(test.count, 1000)
        let live = try registerMany(app, mode: .live, count: 30, prefix: "l")
        let other = try createApp(name: "other")
        _ = try registerMany(other, mode: .test, count: 10, prefix: "o")

        let n = try broadcast(app, mode: .test)
        let android = try broadcast(app, mode: .test, platforms: ["android"])
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_ledger WHERE notification_id = ANY ($1::uuid[])",
                               [.uuidArray([n, android])]), 0, "nothing is charged at acceptance (R-KIND-5)")
        let router = RecordingRouter()
        let worker = try makeWorker(router, batchSize: 100, claimLimit: 8) {
            $0.split = SplitRequest(chunkDevices: 300, maxPendingBatches: 3, waitSeconds: 0)
        }
        try drain(worker, timeout: 60)

        let rows = try deliveries(n)
        XCTAssertEqual(Set(rows.keys), Set(test.keys), "one delivery row per active test device of the app")
        XCTAssertTrue(rows.values.allSatisfy { $0.status == "sent" })
        XCTAssertTrue(Set(rows.keys).isDisjoint(with: removed), "inactive devices are left out")
        XCTAssertTrue(Set(rows.keys).isDisjoint(with: live.keys), "the other mode's devices are left out")
        XCTAssertEqual(try batchDevices(n), Dictionary(uniqueKeysWithValues: test.keys.map { ($0, 1) }),
                       "every device in exactly one batch job")
        XCTAssertEqual(try notification(n).status, "sent")
        XCTAssertEqual(try notification(n).deviceCount, 1000)
        XCTAssertTrue(try ledger(n).values.allSatisfy { $0.charges == 1 && $0.refunds == 0 })
        try assertLedgerInvariants(n)

        let androidRows = try deliveries(android)
        XCTAssertEqual(Set(androidRows.keys), Set(test.filter { $0.value == "android" }.keys), "narrowed by platform")
        try assertLedgerInvariants(android)
        // Each device pushed once per notification that targets it: iOS once, Android twice.
        let pushed = Dictionary(router.pushes.map { ($0.deviceID, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(pushed, test.mapValues { $0 == "android" ? 2 : 1 })
    }

    private var processes: [WorkerProcess] = []

    override func tearDownWithError() throws {
        for p in processes { p.stop() }
        processes = []
        try super.tearDownWithError()
    }

    private func startWorker(_ name: String, simulatorLog: String) throws -> WorkerProcess {
        let p = try WorkerProcess.start(LiveWebPushCLI.executable, [
            "worker", "--poll-interval", "0.1", "--metrics-addr", "off", "--lease-seconds", "1",
            "--batch-size", "50", "--split-chunk", "100",
        ], environment: ["DATABASE_URL": database.conninfo, "PUSHFLEET_LOG_LEVEL": "info", "PUSHFLEET_WEBHOOKS": "off",
                         "PUSHFLEET_SIMULATOR_LOG": simulatorLog], name: name)
        processes.append(p)
        return p
    }

    private func waitUntil(_ what: String, timeout: Double = 60, _ condition: () throws -> Bool) throws {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw DrainTimeout(seconds: timeout, what: what + ":\n"
                           + processes.map { "\($0.name): \($0.logText().suffix(3000))" }.joined(separator: "\n"))
    }

    /// kill -9 of a `pushfleet worker` in the middle of a split step (its chunk's transaction open,
    /// waiting on the notification row), after earlier steps committed: the step it was in leaves
    /// nothing, and after the lease rescue another worker resumes after the cursor. Every device is
    /// in exactly one batch job, has one delivery row and reached the simulator exactly once.
    func testKillNineDuringTheSplitThenRescueSendsEveryDeviceExactlyOnce() throws {
        let app = try createApp()
        let devices = try registerMany(app, mode: .test, count: 1000, prefix: "k")
        let n = try broadcast(app, mode: .test)
        // The send time and three steps, by this test, as a worker would take them.
        let store = PGQueueStore(connection: workerConn)
        let job = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        XCTAssertNil(try store.startOne(job, batchSize: 50).inlineDeviceIDs)
        for _ in 0..<3 {
            // Claim what is due (the split job and the batches it made), keep the split job.
            let claimed = try store.jobClaimBatch(owner: "t", limit: 100, leaseSeconds: 30)
            let split = try XCTUnwrap(claimed.first { $0.kind == .split })
            try store.jobRelease(claimed.filter { $0.id != split.id }.map(\.lease))
            XCTAssertEqual(try store.audienceSplit(split.lease, batchSize: 50, request: SplitRequest(chunkDevices: 100), now: nil),
                           .split(batchJobs: 2, devices: 100, charged: 100))
        }
        let cursor = try conn.exec("SELECT split_cursor::text AS c FROM push_notifications WHERE id = $1::uuid", [.uuid(n)])
            .string(0, "c")
        // The next step waits on the notification row this session holds; the worker is killed there.
        let blocker = try database.connect()
        _ = try blocker.exec("BEGIN")
        _ = try blocker.exec("SELECT 1 FROM push_notifications WHERE id = $1::uuid FOR UPDATE", [.uuid(n)])
        let logA = NSTemporaryDirectory() + "h22-sim-a-\(UUID().uuidString).log"
        let logB = NSTemporaryDirectory() + "h22-sim-b-\(UUID().uuidString).log"
        let first = try startWorker("split-a", simulatorLog: logA)
        try waitUntil("the worker's split step to wait on the notification row") {
            try conn.exec("""
                SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE '%push_split_audience%'
                """).int(0, "n") == 1
        }
        first.kill9()
        _ = try blocker.exec("ROLLBACK")
        XCTAssertEqual(try conn.exec("SELECT split_cursor::text AS c FROM push_notifications WHERE id = $1::uuid", [.uuid(n)])
            .string(0, "c"), cursor, "the killed step wrote nothing")
        XCTAssertEqual(try batchDevices(n).count, 300)

        _ = try startWorker("split-b", simulatorLog: logB)
        try waitUntil("the broadcast to end") { try self.notification(n).status == "sent" }
        XCTAssertEqual(try batchDevices(n), Dictionary(uniqueKeysWithValues: devices.keys.map { ($0, 1) }),
                       "every device in exactly one batch job")
        let rows = try deliveries(n)
        XCTAssertEqual(Set(rows.keys), Set(devices.keys))
        XCTAssertTrue(rows.values.allSatisfy { $0.status == "sent" })
        // One line `apns_id device_id app_id` per push the simulator took, from both workers.
        let lines = [logA, logB].flatMap { path in
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
        }
        let pushed = Dictionary(lines.map { (String($0.split(separator: " ")[1]).lowercased(), 1) }, uniquingKeysWith: +)
        XCTAssertEqual(pushed, Dictionary(uniqueKeysWithValues: devices.keys.map { ($0.uuidString.lowercased(), 1) }),
                       "each device reached the simulator exactly once")
        try assertLedgerInvariants(n)
        XCTAssertEqual(try notification(n).deviceCount, 1000)
    }

    func testAWholeAppAudienceIsCancelledBeforeItsSendTime() throws {
        let app = try createApp()
        _ = try registerMany(app, mode: .test, count: 20, prefix: "c")
        var q = SendRequest(appID: app, mode: .test, userIDs: [])
        q.audience = "all"
        q.title = "Later"
        q.sendAt = Date().addingTimeInterval(3600)
        let service = AcceptanceService(connection: conn)
        let n = try service.send(q).notificationID
        try service.cancelNotification(id: n)
        let worker = try makeWorker()
        try drain(worker)
        XCTAssertEqual(try notification(n).status, "cancelled")
        XCTAssertTrue(try deliveries(n).isEmpty)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE notification_id = $1::uuid AND kind <> 'notification'",
                               [.uuid(n)]), 0, "never split")
    }

    func testTheAudienceFieldsAreRefusedOneByOneByTheServiceAndTheSQLFunction() throws {
        let app = try createApp()
        let service = AcceptanceService(connection: conn)
        func refusal(_ change: (inout SendRequest) -> Void) -> String? {
            var q = SendRequest(appID: app, mode: .test, userIDs: [])
            q.audience = "all"
            q.title = "x"
            change(&q)
            do { _ = try service.send(q); return nil } catch let e as AcceptanceError { return e.field } catch { return "\(error)" }
        }
        XCTAssertEqual(refusal { $0.audience = "some" }, "audience")
        XCTAssertEqual(refusal { $0.userIDs = ["u1"] }, "audience")
        XCTAssertEqual(refusal { $0.deviceIDs = [UUID()] }, "audience")
        XCTAssertEqual(refusal { $0.platforms = [] }, "platforms")
        XCTAssertEqual(refusal { $0.platforms = ["ios", "ios"] }, "platforms")
        XCTAssertEqual(refusal { $0.platforms = ["windows"] }, "platforms")
        XCTAssertEqual(refusal { $0.audience = nil; $0.userIDs = ["u1"]; $0.platforms = ["ios"] }, "platforms")
        XCTAssertNil(refusal { $0.platforms = ["web", "ios"] })
        // The SQL function bounds them too, for a backend that calls it directly.
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: [])
        q.title = "x"
        q.audience = "all"
        q.audiencePlatforms = ["ios", "ios"]
        XCTAssertThrowsError(try NotificationStore(connection: conn).enqueue(q)) { XCTAssertTrue("\($0)".contains("platforms"), "\($0)") }
        q.audiencePlatforms = nil
        q.userIDs = ["u1"]
        XCTAssertThrowsError(try NotificationStore(connection: conn).enqueue(q)) { XCTAssertTrue("\($0)".contains("audience"), "\($0)") }
        q.userIDs = []
        q.audience = nil
        XCTAssertThrowsError(try NotificationStore(connection: conn).enqueue(q)) { XCTAssertTrue("\($0)".contains("user_ids"), "\($0)") }
    }

    /// A step's device read (push_split_audience's query, the same predicates) is a keyset scan of
    /// push_devices_broadcast_idx after the cursor, in index order: no sort, a bounded slice.
    func testAStepIsAKeysetScanOfTheBroadcastIndex() throws {
        let app = try createApp()
        _ = try registerMany(app, mode: .test, count: 200, prefix: "p")
        // With 200 rows a sequential scan and a sort are cheaper; what matters is that the index
        // serves the step's predicates in its order, with no sort, which it must at any size.
        _ = try conn.exec("BEGIN")
        _ = try conn.exec("SET LOCAL enable_seqscan = off")
        _ = try conn.exec("SET LOCAL enable_sort = off")
        defer { _ = try? conn.exec("ROLLBACK") }
        let text = try conn.exec("""
            EXPLAIN (FORMAT JSON) SELECT d.id FROM push_devices d
             WHERE d.app_id = $1::uuid AND d.mode = 'test' AND d.active AND d.id > $2::uuid AND d.created_at <= now()
             ORDER BY d.id LIMIT 5000
            """, [.uuid(app), .uuid(UUID())]).string(0, 0)
        XCTAssertTrue(text.contains("push_devices_broadcast_idx"), text)
        XCTAssertFalse(text.contains("\"Sort\""), "no sort: the index gives the order")
    }
}

extension PGConnection {
    /// Registers `count` devices of `mode` through push_register_device_v2, 500 per statement (the
    /// registry's SQL function, its limits passed as DeviceRegistry passes them; one transaction
    /// per 500, as a device count row updated many times in one transaction slows every update):
    /// tokens `prefix-i`, users `prefix-u-i`, iOS (`environment`) for odd i and Android for even i.
    /// Returns each device's platform by id.
    func registerMany(_ app: UUID, mode: Mode, count: Int, prefix: String,
                      environment: String = "sandbox") throws -> [UUID: String] {
        var out: [UUID: String] = [:]
        for first in stride(from: 1, through: count, by: 500) {
            let r = try exec("""
                SELECT r.device_id, r.platform FROM generate_series($2::int, $8::int) g,
                  LATERAL push_register_device_v2($1::uuid, $3::text, CASE WHEN g % 2 = 0 THEN 'android' ELSE 'ios' END,
                      $4::text || '-' || g, NULL, NULL, NULL, $4::text || '-u-' || g,
                      CASE WHEN g % 2 = 1 THEN $7::text END, 'keep', NULL, NULL, $5::bigint, $6::int) r
                """, [.uuid(app), .int(first), .text(mode.rawValue), .text(prefix), .int64(DeviceLimits.perApp(mode)),
                      .int(DeviceLimits.perUser), .text(environment), .int(min(count, first + 499))])
            for i in r.rows { out[try r.uuid(i, "device_id")] = try r.string(i, "platform") }
        }
        return out
    }
}
