import Foundation
import XCTest
import PushCore
import PushTestSupport
@testable import PushStore

/// Issue 17, part 3: no statement of the claim-to-record path whose cost grows with the rows already
/// in the tables (issue 17's fourth pass: sql/0025 and the claim's SQL). On a queue of 2,000
/// single-device notifications whose statistics were taken with every job available (as the bench
/// and an enqueue burst leave them), a claim of 128, their start, the device load and the record
/// read push_jobs, push_notifications, push_devices and push_ledger by primary key only: not one
/// sequential scan in the session's counters (`pg_stat_xact_user_tables`). Before, custom plans of
/// these statements (costed with the ids' values against those statistics) scanned push_jobs twice
/// and push_notifications once per claim, push_notifications twice per start, push_devices and
/// push_notifications once per load, push_jobs and push_notifications four times each per record.
final class PrimaryKeyPlanTests: PGTestCase {
    private static let tables = ["push_devices", "push_jobs", "push_ledger", "push_notifications"]

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, directory: RepoPaths.sqlDirectory).migrate()
    }

    /// 2,000 users with one iOS device each and one notification each, statistics taken then.
    private func populate() throws {
        let app = try conn.exec("INSERT INTO push_apps (name) VALUES ('plans') RETURNING id").uuid(0, "id")
        try conn.exec("""
            INSERT INTO push_devices (app_id, mode, platform, token, user_id, apns_environment, last_registered_at)
            SELECT $1, 'test', 'ios', lpad(to_hex(g), 64, '0'), 'u' || g, 'production', now() - interval '1 day'
              FROM generate_series(1, 2000) g
            """, [.uuid(app)])
        XCTAssertEqual(try conn.exec("""
            SELECT count(e.notification_id) AS n FROM generate_series(1, 2000) g,
                   LATERAL push_enqueue($1, 'test', ARRAY['u' || g], NULL, 'Hi', 'Body', NULL, NULL, NULL, NULL,
                                        NULL, NULL, NULL, NULL, NULL, NULL, NULL) e
            """, [.uuid(app)]).int(0, "n"), 2000)
        try conn.exec("VACUUM ANALYZE push_jobs, push_notifications, push_devices, push_ledger")
    }

    /// Sequential scans of the hot path's tables by this session's transaction so far.
    private func seqScans(_ c: PGConnection) throws -> [String: Int] {
        let r = try c.exec("SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname = ANY ($1)",
                           [.textArray(Self.tables)])
        var out = Dictionary(uniqueKeysWithValues: Self.tables.map { ($0, 0) })
        for i in r.rows { out[try r.string(i, "relname")] = try r.int(i, "seq_scan") }
        return out
    }

    func testTheClaimStartLoadAndRecordOfAFullClaimReadNoTableBySequentialScan() throws {
        try populate()
        let session = try database.connect()
        let store = PGQueueStore(connection: session)
        try session.exec("BEGIN")
        let none = try seqScans(session)

        let jobs = try store.jobClaim(ClaimRequest(owner: "plans", limit: 128, leaseSeconds: 60))
        XCTAssertEqual(jobs.count, 128)
        XCTAssertEqual(try seqScans(session), none, "the claim")

        let leases = jobs.map { JobLease(id: $0.id, token: $0.leaseToken) }
        let started = try store.notificationStart(leases, batchSize: 500, goneLedger: .refund, now: nil)
        var batches: [DeviceBatch] = [], devices: [Int64: UUID] = [:]
        for job in jobs {
            guard case .started(let s)? = started[job.id], let ids = s.inlineDeviceIDs, ids.count == 1 else {
                return XCTFail("job \(job.id) did not start as a one-device batch: \(String(describing: started[job.id]))")
            }
            batches.append(DeviceBatch(notificationID: job.notification.id, deviceIDs: ids))
            devices[job.id] = ids[0]
        }
        XCTAssertEqual(try seqScans(session), none, "the start")

        let loaded = try store.batchLoadDevices(batches)
        XCTAssertEqual(loaded.map { $0.map(\.found) }, Array(repeating: [true], count: 128))
        XCTAssertEqual(try seqScans(session), none, "the device load")

        // As the worker records a sole batch: its delivery and the final state PushCore decided.
        let jobJSON = leases.map {
            #"{"job_id":\#($0.id),"lease_token":"\#(PGUUIDText.format($0.token))","records":1,"#
                + #""final_status":"sent","final_device_count":1}"#
        }.joined(separator: ",")
        let records = leases.map {
            #"{"job_id":\#($0.id),"device_id":"\#(PGUUIDText.format(devices[$0.id]!))","status":"sent","#
                + #""attempts":1,"failures":0,"ledger":"none"}"#
        }.joined(separator: ",")
        let r = try session.exec("SELECT outcome FROM push_record($1::json)",
                                 [.text(#"{"jobs":[\#(jobJSON)],"deliveries":[\#(records)],"credentials":[]}"#)])
        XCTAssertEqual(try r.rows.map { try r.string($0, "outcome") }, Array(repeating: "recorded", count: 128))
        XCTAssertEqual(try seqScans(session), none, "the record")
        try session.exec("COMMIT")
        XCTAssertEqual(try conn.exec("SELECT count(*) AS n FROM push_notifications WHERE status = 'sent'").int(0, "n"), 128)
    }

    /// The start and the record keep their generic plans whatever the session's setting.
    func testTheStartAndTheRecordAreAlwaysPlannedGenerically() throws {
        let r = try conn.exec("""
            SELECT proname, array_to_string(proconfig, ',') AS config FROM pg_proc
             WHERE proname IN ('push_start_notifications', 'push_record') ORDER BY proname
            """)
        XCTAssertEqual(try r.rows.map { try r.string($0, "proname") }, ["push_record", "push_start_notifications"])
        XCTAssertEqual(try r.rows.map { try r.string($0, "config") },
                       ["plan_cache_mode=force_generic_plan", "plan_cache_mode=force_generic_plan"])
    }

    /// sql/0025's contract step: the erasure index of the releases before sql/0020 is gone (one index
    /// entry less per final notification); the Maintainer's erasure reads its successor.
    func testTheErasureIndexOfTheReleasesBefore0020IsGone() throws {
        let r = try conn.exec("""
            SELECT to_regclass('push_notifications_erasable_idx') IS NULL AS gone,
                   to_regclass('push_notifications_erasable_v2_idx') IS NOT NULL AS kept
            """)
        XCTAssertTrue(try r.bool(0, "gone"))
        XCTAssertTrue(try r.bool(0, "kept"))
        try conn.exec("SET enable_seqscan = off")
        let plan = try conn.exec("EXPLAIN " + MaintenanceQueries.eraseFinalContent.replacingOccurrences(of: "$1::timestamptz", with: "now()")
            .replacingOccurrences(of: "$2::int", with: "100"))
        let text = try plan.rows.map { try plan.string($0, "QUERY PLAN") }.joined(separator: "\n")
        XCTAssertTrue(text.contains("push_notifications_erasable_v2_idx"), text)
    }
}
