import Foundation
import XCTest
import PushStore
import PushWorker
import PushTestSupport

/// Issue 4 part 7 (retention) and R-DEV-7 (cleanup) through the worker's maintainer.
/// (`WorkerTestCase` gives each test a fresh migrated database and `conn`.)
final class MaintainerTests: PGWorkerTestCase {
    /// One final notification (content set, finished long ago) with a completed job, one delivery,
    /// a delivered event and a device deactivated long ago.
    private func seedOldRows(daysAgo: Int) throws -> (notification: UUID, device: UUID) {
        let app = try AppStore(connection: conn).appCreate(name: "retention")
        try WebhookFixture.subscribeToEverything(conn, appID: app.id)   // so the delivered event is kept
        let device = try conn.exec("""
            INSERT INTO push_devices (app_id, mode, platform, token, user_id, active, deactivated_at, deactivation_reason)
            VALUES ($1::uuid, 'test', 'ios', 'old_token', 'u1', false, now() - make_interval(days => $2::int), 'DELETED')
            RETURNING id
            """, [.uuid(app.id), .int(daysAgo)]).uuid(0, "id")
        let n = try conn.exec("""
            INSERT INTO push_notifications (app_id, mode, user_ids, title, body, data, status, expires_at, finished_at)
            VALUES ($1::uuid, 'test', '{u1}', 'secret title', 'secret body', '{"k":"secret"}', 'sent',
                    now(), now() - make_interval(days => $2::int))
            RETURNING id
            """, [.uuid(app.id), .int(daysAgo)]).uuid(0, "id")
        try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, state, finalized_at)
            VALUES ('notification', $1::uuid, $2::uuid, 'completed', now() - make_interval(days => $3::int))
            """, [.uuid(n), .uuid(app.id), .int(daysAgo)])
        try conn.exec("""
            INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, finished_at)
            VALUES ($1::uuid, $2::uuid, 'sent', push_apns_id($1::uuid, $2::uuid), now() - make_interval(days => $3::int))
            """, [.uuid(n), .uuid(device), .int(daysAgo)])
        try conn.exec("""
            INSERT INTO push_events (app_id, type, payload, created_at, delivered_at)
            VALUES ($1::uuid, 'push_device.deactivated', '{}', now() - make_interval(days => $2::int),
                    now() - make_interval(days => $2::int))
            """, [.uuid(app.id), .int(daysAgo)])
        return (n, device)
    }

    private func count(_ sql: String) throws -> Int64 { try conn.exec(sql).int64(0, 0) }

    func testRetentionDeletesOldRowsAndErasesFinalContentButKeepsRecentOnes() throws {
        let old = try seedOldRows(daysAgo: 40)
        let recent = try seedOldRows(daysAgo: 0)
        _ = recent
        let r = try Maintainer().runOnce(connection: conn)
        XCTAssertTrue(r.ranLeader)
        XCTAssertEqual(r.jobs, 1, "finished jobs older than a day are pruned")
        XCTAssertEqual(r.deliveries, 1, "deliveries older than 30 days are deleted")
        XCTAssertEqual(r.events, 1, "delivered events older than 7 days are deleted")
        XCTAssertEqual(r.devices, 1, "R-DEV-7: devices deactivated more than 30 days ago are deleted")
        XCTAssertEqual(r.erased, 2, "final notifications' content is erased by default")
        XCTAssertEqual(try count("SELECT count(*) FROM push_devices WHERE id = '\(old.device.uuidString)'"), 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_devices"), 1, "the recently deactivated device stays")
        XCTAssertEqual(try count("SELECT count(*) FROM push_notifications WHERE title IS NOT NULL OR body IS NOT NULL OR data IS NOT NULL"), 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_notifications"), 2, "notifications themselves stay")
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries"), 1, "the recent delivery stays")
    }

    func testContentIsKeptWhenConfiguredAndOnlyOneWorkerRunsMaintenanceAtATime() throws {
        _ = try seedOldRows(daysAgo: 40)
        var config = Maintainer.Config()
        config.contentRetention = nil
        let other = try database.connect()
        let held = try MaintenanceStore(connection: other).withMaintenanceLock { () -> Maintainer.RunResult in
            // While another session holds the maintenance lock, this worker does nothing.
            try Maintainer(config: config).runOnce(connection: conn)
        }
        XCTAssertEqual(held?.ranLeader, false)
        XCTAssertEqual(try count("SELECT count(*) FROM push_jobs"), 1)
        let r = try Maintainer(config: config).runOnce(connection: conn)
        XCTAssertTrue(r.ranLeader)
        XCTAssertEqual(r.erased, 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_notifications WHERE title = 'secret title'"), 1)
    }

    func testEachStepDeletesInBoundedBatches() throws {
        for _ in 0..<5 { _ = try seedOldRows(daysAgo: 40) }
        var config = Maintainer.Config()
        config.batchLimit = 2
        config.maxBatchesPerRun = 2
        let r = try Maintainer(config: config).runOnce(connection: conn)
        XCTAssertEqual(r.jobs, 4, "two statements of at most two rows")
        XCTAssertEqual(try count("SELECT count(*) FROM push_jobs"), 1)
        let again = try Maintainer(config: config).runOnce(connection: conn)
        XCTAssertEqual(again.jobs, 1)
    }
}
