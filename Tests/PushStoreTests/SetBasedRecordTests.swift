import Foundation
import XCTest
import PushCore
import PushTestSupport
@testable import PushStore

/// The set-based send time and record of sql/0013 (issue 17, part 3) in the cases a per-job loop
/// handled one job at a time: two batches of one notification in one call, a device recorded twice
/// in one call, a lost lease beside held ones. The rest of their behaviour is held by the queue
/// conformance suite (PGQueueConformanceTests) and the worker tests, unchanged.
final class SetBasedRecordTests: PGTestCase {
    private var appID = UUID()

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, directory: RepoPaths.sqlDirectory).migrate()
        appID = try conn.exec("INSERT INTO push_apps (name) VALUES ('set-based') RETURNING id").uuid(0, "id")
    }

    private func device(_ token: String) throws -> UUID {
        try conn.exec("""
            INSERT INTO push_devices (app_id, mode, platform, token, user_id, apns_environment, last_registered_at)
            VALUES ($1, 'test', 'ios', $2, 'u1', 'production', now() - interval '1 day') RETURNING id
            """, [.uuid(appID), .text(token)]).uuid(0, "id")
    }

    /// Leases job `id` as a claim would; returns its lease token.
    private func lease(_ id: Int64) throws -> UUID {
        try conn.exec("""
            UPDATE push_jobs SET state = 'running', attempt = attempt + 1, lease_owner = 'test',
                   lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute'
             WHERE id = $1 RETURNING lease_token
            """, [.int64(id)]).uuid(0, "lease_token")
    }

    private func record(_ job: Int64, _ token: UUID, _ devices: [(UUID, String)]) -> (String, String) {
        let jobJSON = #"{"job_id":\#(job),"lease_token":"\#(PGUUIDText.format(token))","records":\#(devices.count)}"#
        let records = devices.map { d, status in
            #"{"job_id":\#(job),"device_id":"\#(PGUUIDText.format(d))","status":"\#(status)","attempts":1,"failures":0,"ledger":"none""#
                + (status == "retrying" ? #","next_attempt_at":"2030-01-01T00:00:00.000000Z"}"# : "}")
        }.joined(separator: ",")
        return (jobJSON, records)
    }

    func testTwoBatchesOfOneNotificationAndADeviceRecordedTwiceInOneCall() throws {
        let a = try device("aaaa"), b = try device("bbbb")
        let notification = try conn.exec("""
            SELECT notification_id FROM push_enqueue($1, 'test', ARRAY['u1'], NULL, 'Hi', 'Body', NULL, NULL, NULL, NULL,
                                                    NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """, [.uuid(appID)]).uuid(0, "notification_id")
        let start = try conn.exec("SELECT id FROM push_jobs WHERE notification_id = $1", [.uuid(notification)]).int64(0, "id")
        let started = try conn.exec("""
            SELECT outcome, batch_jobs, inline_device_ids IS NULL AS split FROM push_start_notifications(ARRAY[$1::bigint], ARRAY[$2::uuid], 1, 'refund')
            """, [.int64(start), .uuid(try lease(start))])
        XCTAssertEqual(try started.string(0, "outcome"), "started")
        XCTAssertEqual(try started.int(0, "batch_jobs"), 2, "two devices in batches of one")
        XCTAssertTrue(try started.bool(0, "split"))

        let batches = try conn.exec("SELECT id, device_ids[1] AS device FROM push_jobs WHERE notification_id = $1 AND kind = 'batch' ORDER BY id",
                                    [.uuid(notification)])
        XCTAssertEqual(batches.rowCount, 2)
        let (j1, j2) = (try batches.int64(0, "id"), try batches.int64(1, "id"))
        let (t1, t2) = (try lease(j1), try lease(j2))
        // Job 1 delivers device a; job 2 delivers device b and, by mistake, device a again as
        // retrying: the final record of a is kept and no successor job is made for it. A third
        // entry carries a lease token that no longer holds.
        let first = record(j1, t1, [(a, "sent")])
        let second = record(j2, t2, [(b, "sent"), (a, "retrying")])
        let lost = #"{"job_id":\#(start),"lease_token":"\#(PGUUIDText.format(UUID()))","records":0}"#
        let json = #"{"jobs":[\#(first.0),\#(second.0),\#(lost)],"deliveries":[\#(first.1),\#(second.1)],"credentials":[]}"#
        let r = try conn.exec("""
            SELECT job_id, outcome, remaining_batches, ending_codes, has_sms FROM push_record($1::json)
            """, [.text(json)])
        XCTAssertEqual(r.rowCount, 3, "one answer per job, in the order given")
        XCTAssertEqual(try r.rows.map { try r.int64($0, "job_id") }, [j1, j2, start])
        XCTAssertEqual(try r.rows.map { try r.string($0, "outcome") }, ["recorded", "recorded", "lease_lost"])
        XCTAssertEqual(try r.int(0, "remaining_batches"), 0, "both batches of the notification are recorded")
        XCTAssertEqual(try r.int(1, "remaining_batches"), 0)
        XCTAssertEqual(try r.string(1, "ending_codes"), "{sent,sent}")
        XCTAssertTrue(try r.isNull(2, "remaining_batches"))

        let rows = try conn.exec("SELECT device_id, status FROM push_deliveries WHERE notification_id = $1 ORDER BY device_id",
                                 [.uuid(notification)])
        XCTAssertEqual(try rows.rows.map { try rows.string($0, "status") }, ["sent", "sent"])
        XCTAssertEqual(try conn.exec("SELECT count(*) AS n FROM push_jobs WHERE notification_id = $1 AND state <> 'completed'",
                                     [.uuid(notification)]).int(0, "n"), 0, "no successor for a device already final")
        // The notification's last batch: its row is left to push_finalize_notifications (below).
        XCTAssertEqual(try conn.exec("SELECT remaining_batches FROM push_notifications WHERE id = $1", [.uuid(notification)])
                        .int(0, "remaining_batches"), 2)
        XCTAssertEqual(try PGQueueStore(connection: conn).queueStats().completed, 3)
    }

    /// A notification enqueued to user u1 and started with batches of `batchSize`: its id and
    /// the start's job.
    private func startedNotification(batchSize: Int) throws -> (UUID, Int64) {
        let notification = try conn.exec("""
            SELECT notification_id FROM push_enqueue($1, 'test', ARRAY['u1'], NULL, 'Hi', 'Body', NULL, NULL, NULL, NULL,
                                                    NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """, [.uuid(appID)]).uuid(0, "notification_id")
        let job = try conn.exec("SELECT id FROM push_jobs WHERE notification_id = $1", [.uuid(notification)]).int64(0, "id")
        let started = try conn.exec("""
            SELECT outcome FROM push_start_notifications(ARRAY[$1::bigint], ARRAY[$2::uuid], $3, 'refund')
            """, [.int64(job), .uuid(try lease(job)), .int(batchSize)])
        XCTAssertEqual(try started.string(0, "outcome"), "started")
        return (notification, job)
    }

    private func notificationRow(_ id: UUID, _ c: PGConnection) throws -> (String, Int) {
        let r = try c.exec("SELECT status, remaining_batches FROM push_notifications WHERE id = $1", [.uuid(id)])
        return (try r.string(0, "status"), try r.int(0, "remaining_batches"))
    }

    /// Issue 17: a single-batch notification's row is written once by the record (push_record
    /// leaves the counter of a last batch to push_finalize_notifications, which the store runs next
    /// in the same transaction and which sets it to 0 with the final status), not twice.
    func testALastBatchWritesItsNotificationRowOnceWithTheFinalize() throws {
        let a = try device("aaaa")
        let (notification, job) = try startedNotification(batchSize: 500)
        let token = try conn.exec("SELECT lease_token FROM push_jobs WHERE id = $1", [.int64(job)]).uuid(0, "lease_token")
        let (jobJSON, records) = record(job, token, [(a, "sent")])
        // A fresh session: pg_stat_xact_user_tables then counts this transaction's writes only.
        let session = try database.connect()
        try session.exec("BEGIN")
        let r = try session.exec("SELECT outcome, remaining_batches, ending_codes FROM push_record($1::json)",
                                 [.text(#"{"jobs":[\#(jobJSON)],"deliveries":[\#(records)],"credentials":[]}"#)])
        XCTAssertEqual(try r.string(0, "outcome"), "recorded")
        XCTAssertEqual(try r.int(0, "remaining_batches"), 0, "the answer says the last batch is recorded")
        XCTAssertEqual(try r.string(0, "ending_codes"), "{sent}")
        let (status, remaining) = try notificationRow(notification, session)
        XCTAssertEqual(status, "sending")
        XCTAssertEqual(remaining, 1, "the row is left to the finalize")
        _ = try session.exec("SELECT push_finalize_notifications(ARRAY[$1::uuid], ARRAY['sent'], ARRAY[NULL::text], ARRAY[1])",
                             [.uuid(notification)])
        let updates = try session.exec("""
            SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'push_notifications'
            """).int64(0, "n_tup_upd")
        XCTAssertEqual(updates, 1, "record and finalize write the notification row once")
        let (final, left) = try notificationRow(notification, session)
        XCTAssertEqual(final, "sent")
        XCTAssertEqual(left, 0)
        try session.exec("COMMIT")
    }

    /// The counter push_record still writes: a batch that is not the last counts down at once, and
    /// the last batch of a notification that is already final (cancelled meanwhile: no finalize
    /// follows, push_finalize_notifications skips final rows) counts down to 0 itself.
    func testABatchThatIsNotTheLastAndTheLastOfAFinishedNotificationCountDownInTheRecord() throws {
        let a = try device("aaaa"), b = try device("bbbb")
        let (notification, _) = try startedNotification(batchSize: 1)
        let batches = try conn.exec("SELECT id, device_ids[1] AS device FROM push_jobs WHERE notification_id = $1 AND kind = 'batch' ORDER BY id",
                                    [.uuid(notification)])
        XCTAssertEqual(batches.rowCount, 2)
        let jobs = [try batches.int64(0, "id"), try batches.int64(1, "id")]
        let devices = [try batches.uuid(0, "device"), try batches.uuid(1, "device")]
        XCTAssertEqual(Set(devices), [a, b])
        for (i, (job, device)) in zip(jobs, devices).enumerated() {
            if i == 1 {
                try conn.exec("UPDATE push_notifications SET status = 'cancelled', finished_at = now() WHERE id = $1",
                              [.uuid(notification)])
            }
            let (jobJSON, records) = record(job, try lease(job), [(device, "sent")])
            let r = try conn.exec("SELECT outcome, remaining_batches FROM push_record($1::json)",
                                  [.text(#"{"jobs":[\#(jobJSON)],"deliveries":[\#(records)],"credentials":[]}"#)])
            XCTAssertEqual(try r.string(0, "outcome"), "recorded")
            XCTAssertEqual(try r.int(0, "remaining_batches"), 1 - i)
            XCTAssertEqual(try notificationRow(notification, conn).1, 1 - i, "batch \(i + 1): the row counts down")
        }
    }

    /// The start's lease check (read by primary key since issue 17's second pass): a job running
    /// under another lease token answers lease_lost and its notification stays pending, while the
    /// held job beside it in the same call starts.
    func testTheStartStartsOnlyTheJobsWhoseLeaseTokenHolds() throws {
        _ = try device("aaaa")
        var jobs: [Int64] = [], notifications: [UUID] = []
        for _ in 0..<2 {
            let n = try conn.exec("""
                SELECT notification_id FROM push_enqueue($1, 'test', ARRAY['u1'], NULL, 'Hi', 'Body', NULL, NULL, NULL, NULL,
                                                        NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                """, [.uuid(appID)]).uuid(0, "notification_id")
            notifications.append(n)
            jobs.append(try conn.exec("SELECT id FROM push_jobs WHERE notification_id = $1", [.uuid(n)]).int64(0, "id"))
        }
        let held = try lease(jobs[0])
        _ = try lease(jobs[1])   // running, under a token this caller does not have
        let r = try conn.exec("""
            SELECT job_id, outcome, status FROM push_start_notifications($1::bigint[], $2::uuid[], 500, 'refund')
            """, [.int64Array(jobs), .uuidArray([held, UUID()])])
        XCTAssertEqual(try r.rows.map { try r.int64($0, "job_id") }, jobs)
        XCTAssertEqual(try r.rows.map { try r.string($0, "outcome") }, ["started", "lease_lost"])
        XCTAssertTrue(try r.isNull(1, "status"))
        XCTAssertEqual(try notificationRow(notifications[0], conn).0, "sending")
        XCTAssertEqual(try notificationRow(notifications[1], conn).0, "pending", "a lost lease writes nothing")
        XCTAssertEqual(try conn.exec("SELECT kind FROM push_jobs WHERE id = $1", [.int64(jobs[1])]).string(0, "kind"),
                       "notification")
    }

    /// sql/0017 leaves room on the queue's pages for the start's heap-only updates (issue 17).
    func testTheQueueTablesLeaveRoomForHeapOnlyUpdates() throws {
        let r = try conn.exec("""
            SELECT relname, array_to_string(reloptions, ',') AS options FROM pg_class
             WHERE relname IN ('push_jobs', 'push_notifications') ORDER BY relname
            """)
        XCTAssertEqual(try r.rows.map { try r.string($0, "options") }, ["fillfactor=30", "fillfactor=50"])
    }
}

/// sql/0023 (issue 17, fewer steps): a record that carries its notification's final state (a sole
/// batch's, decided by PushCore beforehand) stores it in the record's own statement.
extension SetBasedRecordTests {
    private func finalJSON(_ job: Int64, _ token: UUID, _ device: UUID, status: String, code: String?, count: Int) -> String {
        let (jobJSON, records) = record(job, token, [(device, "sent")])
        let final = #","final_status":"\#(status)""# + (code.map { #","final_error_code":"\#($0)""# } ?? "")
            + #","final_device_count":\#(count)}"#
        return #"{"jobs":[\#(jobJSON.dropLast())\#(final)],"deliveries":[\#(records)],"credentials":[]}"#
    }

    private func leaseToken(_ job: Int64) throws -> UUID {
        try conn.exec("SELECT lease_token FROM push_jobs WHERE id = $1", [.int64(job)]).uuid(0, "lease_token")
    }

    /// The notification row is written once, by push_record, with the state given: no endings
    /// answered, no push_finalize_notifications to follow.
    func testAFinalStateGivenWithTheLastBatchIsWrittenByTheRecordItself() throws {
        let a = try device("aaaa")
        let (notification, job) = try startedNotification(batchSize: 500)
        let json = finalJSON(job, try leaseToken(job), a, status: "sent", code: nil, count: 1)
        let session = try database.connect()
        try session.exec("BEGIN")
        let r = try session.exec("SELECT outcome, remaining_batches, ending_codes, ending_nets FROM push_record($1::json)",
                                 [.text(json)])
        XCTAssertEqual(try r.string(0, "outcome"), "recorded")
        XCTAssertEqual(try r.int(0, "remaining_batches"), 0)
        XCTAssertTrue(try r.isNull(0, "ending_codes"), "stored here: no endings for a decision")
        XCTAssertTrue(try r.isNull(0, "ending_nets"))
        let updates = try session.exec("SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'push_notifications'")
            .int64(0, "n_tup_upd")
        XCTAssertEqual(updates, 1, "the record alone writes the row, once")
        let row = try session.exec("""
            SELECT status, error_code, remaining_batches, device_count, finished_at IS NOT NULL AS finished
              FROM push_notifications WHERE id = $1
            """, [.uuid(notification)])
        XCTAssertEqual(try row.string(0, "status"), "sent")
        XCTAssertTrue(try row.isNull(0, "error_code"))
        XCTAssertEqual(try row.int(0, "remaining_batches"), 0)
        XCTAssertEqual(try row.int(0, "device_count"), 1)
        XCTAssertTrue(try row.bool(0, "finished"))
        try session.exec("COMMIT")
    }

    /// 'sms_fallback' given with the record queues the SMS once, as push_finalize_notifications
    /// does; a state that is not final is refused; a notification final already (cancelled) keeps
    /// its state and answers its endings.
    func testAGivenSMSFallbackIsQueuedOnceAndANotFinalStateIsRefused() throws {
        let a = try device("aaaa")
        let (notification, job) = try startedNotification(batchSize: 500)
        try conn.exec("UPDATE push_notifications SET sms_phone = '+35812345670', sms_text = 'fallback' WHERE id = $1",
                      [.uuid(notification)])
        let token = try leaseToken(job)
        XCTAssertThrowsError(try conn.exec("SELECT * FROM push_record($1::json)",
                                           [.text(finalJSON(job, token, a, status: "sending", code: nil, count: 0))])) {
            XCTAssertTrue(String(describing: $0).contains("VALIDATION_ERROR"), "\($0)")
        }
        let json = finalJSON(job, token, a, status: "sms_fallback", code: "ALL_DEVICES_REFUSED", count: 0)
        XCTAssertEqual(try conn.exec("SELECT outcome FROM push_record($1::json)", [.text(json)]).string(0, "outcome"), "recorded")
        XCTAssertEqual(try notificationRow(notification, conn).0, "sms_fallback")
        let outbox = try conn.exec("SELECT phone, text FROM push_sms_outbox WHERE notification_id = $1", [.uuid(notification)])
        XCTAssertEqual(outbox.rowCount, 1)
        XCTAssertEqual(try outbox.string(0, "text"), "fallback")

        let (cancelled, job2) = try startedNotification(batchSize: 500)
        try conn.exec("UPDATE push_notifications SET status = 'cancelled', finished_at = now() WHERE id = $1", [.uuid(cancelled)])
        let r = try conn.exec("SELECT remaining_batches, ending_codes FROM push_record($1::json)",
                              [.text(finalJSON(job2, try leaseToken(job2), a, status: "sent", code: nil, count: 1))])
        XCTAssertEqual(try r.int(0, "remaining_batches"), 0)
        XCTAssertFalse(try r.isNull(0, "ending_codes"), "not stored: the endings are answered as before")
        let (status, remaining) = try notificationRow(cancelled, conn)
        XCTAssertEqual(status, "cancelled")
        XCTAssertEqual(remaining, 0)
    }

    /// PGQueueStore: a record with a final state is one round trip less than one without (no
    /// push_finalize_notifications), each after both statements were prepared.
    func testTheStoreRecordsASoleBatchWithItsFinalStateWithoutAFinalize() throws {
        let a = try device("aaaa")
        var notifications: [UUID] = []
        for _ in 0..<3 {
            notifications.append(try conn.exec("""
                SELECT notification_id FROM push_enqueue($1, 'test', ARRAY['u1'], NULL, 'Hi', 'Body', NULL, NULL, NULL, NULL,
                                                        NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                """, [.uuid(appID)]).uuid(0, "notification_id"))
        }
        let store = PGQueueStore(connection: try database.connect())
        let jobs = try store.jobClaimBatch(owner: "t", limit: 3, leaseSeconds: 60)
        XCTAssertEqual(jobs.count, 3)
        _ = try store.notificationStart(jobs.map(\.lease), batchSize: 500)
        var trips: [Int] = []
        for (i, job) in jobs.enumerated() {
            let records = [DeliveryRecord(deviceID: a, status: .sent, attempts: 1)]
            let final = i == 2 ? NotificationOutcome(status: .sent, errorCode: nil, deviceCount: 1) : nil
            let before = store.roundTrips
            let r = try store.batchRecord([BatchOutcome(job: job, records: records, final: final)])
            trips.append(store.roundTrips - before)
            XCTAssertEqual(r[job.id], .recorded(BatchRecordResult(remainingBatches: 0, deactivated: 0, endings: [.sent],
                                                                  hasSMSFallback: false)))
        }
        XCTAssertEqual(trips[2], trips[1] - 1, "no finalize: \(trips)")
        for n in notifications { XCTAssertEqual(try notificationRow(n, conn).0, "sent") }
    }
}
