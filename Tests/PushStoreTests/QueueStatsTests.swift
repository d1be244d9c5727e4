import Foundation
import XCTest
import PushTestSupport
@testable import PushStore

/// `push_queue_stats` (sql/0013, issue 17 part 5): polled by KEDA, `stats --watch`,
/// `--until-drained` and the worker's gauges, it costs in proportion to the jobs available and
/// running, not to every job kept; the final states' counts come from `push_job_tally`, which the
/// triggers on push_jobs keep exact through every kind of write.
final class QueueStatsTests: PGTestCase {
    private var appID = UUID()
    private var notificationID = UUID()

    /// The counts by a scan of every job: 0006's definition of push_queue_stats (without its
    /// oldest-due column), the truth the view is compared with.
    private static let fullCount = """
        SELECT count(*) FILTER (WHERE state = 'available') AS available,
               count(*) FILTER (WHERE state = 'available' AND run_at <= now()) AS due,
               count(*) FILTER (WHERE state = 'running') AS running,
               count(*) FILTER (WHERE state = 'discarded') AS discarded,
               count(*) FILTER (WHERE state = 'completed') AS completed,
               count(*) FILTER (WHERE state = 'cancelled') AS cancelled
          FROM push_jobs
        """

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Migrator(connection: conn, directory: RepoPaths.sqlDirectory).migrate()
        appID = try conn.exec("INSERT INTO push_apps (name) VALUES ('stats') RETURNING id").uuid(0, "id")
        notificationID = try notification()
    }

    private func notification() throws -> UUID {
        try conn.exec("""
            INSERT INTO push_notifications (app_id, mode, user_ids, expires_at) VALUES ($1, 'test', '{u}', now() + interval '1 day')
            RETURNING id
            """, [.uuid(appID)]).uuid(0, "id")
    }

    /// Inserts `count` jobs of the notification in `state` (final states with their finalized_at,
    /// running ones with a lease), through the triggers.
    private func jobs(_ count: Int, _ state: String, notification: UUID? = nil, on c: PGConnection? = nil) throws {
        try (c ?? conn).exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, state, finalized_at, lease_token, lease_expires_at, run_at)
            SELECT 'notification', $1, $2, $3,
                   CASE WHEN $3 IN ('completed', 'discarded', 'cancelled') THEN now() END,
                   CASE WHEN $3 = 'running' THEN gen_random_uuid() END,
                   CASE WHEN $3 = 'running' THEN now() + interval '1 minute' END,
                   now() - interval '5 seconds'
              FROM generate_series(1, $4::int)
            """, [.uuid(notification ?? notificationID), .uuid(appID), .text(state), .int(count)])
    }

    /// The view's row and the same counts by a full scan, as text, for comparison.
    private func viewAndTruth(file: StaticString = #filePath, line: UInt = #line) throws {
        let view = try PGQueueStore(connection: conn).queueStats()
        let t = try conn.exec(Self.fullCount)
        let truth = try ["available", "due", "running", "discarded", "completed", "cancelled"].map { try t.int64(0, $0) }
        XCTAssertEqual([view.available, view.due, view.running, view.discarded, view.completed, view.cancelled], truth,
                       "push_queue_stats against a full count", file: file, line: line)
    }

    func testFinalStateCountsFollowEveryKindOfWriteFromEverySession() throws {
        var other: PGConnection! = try database.connect()
        try jobs(30, "available")
        try jobs(4, "running", on: other)
        try viewAndTruth()
        // The worker's own statements: claim, complete, fail for good, cancel, an operator's retry.
        try conn.exec("""
            UPDATE push_jobs SET state = 'running', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute'
             WHERE id IN (SELECT id FROM push_jobs WHERE state = 'available' ORDER BY id LIMIT 20)
            """)
        try other.exec("""
            UPDATE push_jobs SET state = 'completed', finalized_at = now(), lease_token = NULL, lease_expires_at = NULL
             WHERE id IN (SELECT id FROM push_jobs WHERE state = 'running' ORDER BY id LIMIT 15)
            """)
        try conn.exec("""
            UPDATE push_jobs SET state = 'discarded', finalized_at = now(), lease_token = NULL, lease_expires_at = NULL
             WHERE state = 'running'
            """)
        try other.exec("UPDATE push_jobs SET state = 'cancelled', finalized_at = now() WHERE state = 'available'")
        try viewAndTruth()
        try conn.exec("""
            UPDATE push_jobs SET state = 'available', finalized_at = NULL, attempt = 0
             WHERE id IN (SELECT id FROM push_jobs WHERE state = 'discarded' ORDER BY id LIMIT 3)
            """)
        // A heartbeat moves no job between states and writes no tally row.
        let before = try conn.exec("SELECT count(*) AS n FROM push_job_tally").int(0, "n")
        try conn.exec("UPDATE push_jobs SET run_at = run_at WHERE state = 'available'")
        XCTAssertEqual(try conn.exec("SELECT count(*) AS n FROM push_job_tally").int(0, "n"), before)
        try viewAndTruth()
        // Retention, a notification's cascade, a rolled-back write.
        try other.exec("DELETE FROM push_jobs WHERE id IN (SELECT id FROM push_jobs WHERE state = 'completed' ORDER BY id LIMIT 5)")
        let doomed = try notification()
        try jobs(7, "completed", notification: doomed, on: other)
        try jobs(2, "cancelled", notification: doomed)
        try viewAndTruth()
        try conn.exec("DELETE FROM push_notifications WHERE id = $1", [.uuid(doomed)])
        try conn.exec("BEGIN")
        try conn.exec("UPDATE push_jobs SET state = 'cancelled', finalized_at = now() WHERE state = 'available'")
        try conn.exec("ROLLBACK")
        try viewAndTruth()
        let stats = try PGQueueStore(connection: conn).queueStats()
        XCTAssertEqual([stats.completed, stats.discarded, stats.cancelled, stats.available], [10, 6, 10, 3])

        // The other session ends: the Maintainer's compaction folds its rows into one per state,
        // and the counts stay.
        let otherPID = try other.exec("SELECT pg_backend_pid() AS pid").int(0, "pid")
        other = nil  // closes the session
        var waited = 0
        while try conn.exec("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1", [.int(otherPID)]).int(0, "n") > 0,
              waited < 100 {
            Thread.sleep(forTimeInterval: 0.05)
            waited += 1
        }
        XCTAssertGreaterThan(try MaintenanceStore(connection: conn).compactJobTally(), 0)
        XCTAssertEqual(try conn.exec("SELECT count(*) AS n FROM push_job_tally WHERE backend_pid = $1", [.int(otherPID)])
                        .int(0, "n"), 0)
        try viewAndTruth()

        try conn.exec("TRUNCATE push_jobs")
        try viewAndTruth()
        XCTAssertEqual(try conn.exec("SELECT count(*) AS n FROM push_job_tally").int(0, "n"), 0)
    }

    /// Shared buffers read or hit by the plan's leaves (the scans), and the scans on push_jobs
    /// that read the whole table.
    private func planCost(_ sql: String) throws -> (buffers: Int, seqScansOnJobs: Int, text: String) {
        let json = try conn.exec("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) \(sql)").string(0, 0)
        let lines = try conn.exec("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) \(sql)")
        let text = try lines.rows.map { try lines.string($0, 0) }.joined(separator: "\n")
        let root = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])?.first?["Plan"]
                                  as? [String: Any])
        var buffers = 0, seqScans = 0
        func walk(_ node: [String: Any]) {
            let children = node["Plans"] as? [[String: Any]] ?? []
            if children.isEmpty {
                buffers += (node["Shared Hit Blocks"] as? Int ?? 0) + (node["Shared Read Blocks"] as? Int ?? 0)
            }
            if node["Node Type"] as? String == "Seq Scan", node["Relation Name"] as? String == "push_jobs" { seqScans += 1 }
            children.forEach(walk)
        }
        walk(root)
        return (buffers, seqScans, text)
    }

    func testWithAMillionCompletedJobsTheStatsReadOnlyTheAvailableAndRunningOnes() throws {
        // A million completed jobs, loaded as a restore would (no per-row triggers or foreign-key
        // checks: seconds instead of a minute), then recounted by push_recount_job_tally, the
        // documented repair after writes that bypass the triggers.
        try conn.exec("SET session_replication_role = replica")
        try jobs(1_000_000, "completed")
        try conn.exec("RESET session_replication_role")
        XCTAssertEqual(try conn.exec("SELECT push_recount_job_tally() AS n").int64(0, "n"), 1_000_000)
        try jobs(40, "available")
        try jobs(6, "running")
        try jobs(2, "discarded")
        try jobs(3, "cancelled")
        try conn.exec("VACUUM ANALYZE push_jobs")

        let s = try PGQueueStore(connection: conn).queueStats()
        XCTAssertEqual([s.available, s.due, s.running, s.discarded, s.completed, s.cancelled], [40, 40, 6, 2, 1_000_000, 3])
        XCTAssertGreaterThan(s.oldestDueAgeSeconds, 4)

        let now = try planCost("SELECT * FROM push_queue_stats")
        print("push_queue_stats with 1,000,000 completed jobs:\n\(now.text)")
        XCTAssertEqual(now.seqScansOnJobs, 0, now.text)
        XCTAssertLessThan(now.buffers, 50, "pages read for 46 live jobs and the tally\n\(now.text)")
        // The same figure for 0006's definition (a scan of every job), so the bound above tells
        // the two apart: the table holds thousands of pages.
        let before = try planCost(Self.fullCount)
        XCTAssertGreaterThan(before.buffers, 5_000, before.text)
    }
}
