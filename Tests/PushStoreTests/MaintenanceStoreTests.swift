import Foundation
import XCTest
import PushCore
@testable import PushStore

/// The fleet's maintenance: R-DEV-7 device cleanup and retention, each in bounded batches of the
/// oldest rows, and the lock that lets one worker at a time run it.
final class MaintenanceStoreTests: RegistryTestCase {
    private var store: MaintenanceStore!
    private let day: TimeInterval = 86_400

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = MaintenanceStore(connection: conn)
    }

    /// The server's now, so cutoffs and backdated rows share one clock.
    private func serverNow() throws -> Date {
        try conn.exec("SELECT now() AS t").date(0, "t")
    }

    private func notification(status: String = "sent", finishedDaysAgo: Double? = nil) throws -> UUID {
        try conn.exec("""
            INSERT INTO push_notifications (app_id, mode, user_ids, title, body, data, sound, thread_id, expires_at, status,
                                            finished_at)
            VALUES ($1, 'live', '{u1}', 'Your code', '123456', '{"order":"42"}', 'chime', 'orders', now() + interval '1 day', $2,
                    now() - make_interval(secs => $3::float8))
            RETURNING id
            """, [.uuid(appID), .text(status), finishedDaysAgo.map { .double($0 * day) }]).uuid(0, "id")
    }

    private func delivery(_ notificationID: UUID, device: UUID = UUID(), finishedDaysAgo: Double?) throws {
        try conn.exec("""
            INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, next_attempt_at, finished_at)
            VALUES ($1, $2, CASE WHEN $3::float8 IS NULL THEN 'retrying' ELSE 'sent' END, gen_random_uuid(),
                    CASE WHEN $3::float8 IS NULL THEN now() END, now() - make_interval(secs => $3::float8))
            """, [.uuid(notificationID), .uuid(device), finishedDaysAgo.map { .double($0 * day) }])
    }

    private func count(_ sql: String, _ params: [PGValue?] = []) throws -> Int {
        try conn.exec(sql, params).int(0, 0)
    }

    // MARK: - R-DEV-7 cleanup

    func testRDEV7DevicesDeactivatedOverThirtyDaysAgoAreDeletedInBoundedBatchesKeepingHistory() throws {
        let n = try notification(finishedDaysAgo: 40)
        var old: [UUID] = []
        for (i, age) in [31.0, 33, 32].enumerated() {
            let id = try register(iosDevice("old_\(i)", user: "u\(i)")).deviceID
            XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: id))
            try conn.exec("UPDATE push_devices SET deactivated_at = now() - make_interval(secs => $2::float8) WHERE id = $1",
                          [.uuid(id), .double(age * day)])
            try delivery(n, device: id, finishedDaysAgo: 35)
            old.append(id)
        }
        let recent = try register(iosDevice("recent")).deviceID
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: recent))
        try conn.exec("UPDATE push_devices SET deactivated_at = now() - interval '29 days' WHERE id = $1", [.uuid(recent)])
        let active = try register(iosDevice("active")).deviceID
        try conn.exec("UPDATE push_devices SET last_registered_at = now() - interval '90 days' WHERE id = $1", [.uuid(active)])

        let cutoff = try serverNow().addingTimeInterval(-MaintenanceStore.deactivatedDeviceRetention)
        XCTAssertEqual(try store.deleteDeactivatedDevices(olderThan: cutoff, limit: 2), 2)
        let left = try conn.exec("SELECT id FROM push_devices WHERE app_id = $1", [.uuid(appID)])
        let remaining = Set(try left.rows.map { try left.uuid($0, "id") })
        XCTAssertEqual(remaining, [old[0], recent, active], "the two oldest deactivations went first")
        XCTAssertEqual(try store.deleteDeactivatedDevices(olderThan: cutoff, limit: 2), 1)
        XCTAssertEqual(try store.deleteDeactivatedDevices(olderThan: cutoff, limit: 2), 0)
        XCTAssertEqual(try rowCount(), 2)
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries WHERE notification_id = $1", [.uuid(n)]), 3,
                       "delivery history stays, keyed by the deleted devices' ids")
        XCTAssertEqual(try counter(), try activeCount())
        // The token registers again as a new device.
        let again = try register(iosDevice("old_0", user: "u0"))
        XCTAssertTrue(again.created)
        XCTAssertNotEqual(again.deviceID, old[0])
    }

    func testRDEV7ReactivatedDeviceIsNeverCleanedUp() throws {
        let id = try register(iosDevice("tok_a")).deviceID
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: id))
        try conn.exec("UPDATE push_devices SET deactivated_at = now() - interval '60 days' WHERE id = $1", [.uuid(id)])
        XCTAssertTrue(try register(iosDevice("tok_a")).reactivated)
        XCTAssertEqual(try store.deleteDeactivatedDevices(olderThan: try serverNow(), limit: 10), 0)
        XCTAssertEqual(try activeCount(), 1)
    }

    // MARK: - Retention

    func testPruneFinishedJobsDeletesOnlyOldFinalJobsInBoundedBatches() throws {
        let n = try notification(status: "sending")
        for (state, age) in [("completed", 10.0), ("discarded", 12), ("cancelled", 11), ("completed", 1)] {
            try conn.exec("""
                INSERT INTO push_jobs (kind, notification_id, app_id, state, finalized_at)
                VALUES ('notification', $1, $2, $3, now() - make_interval(secs => $4::float8))
                """, [.uuid(n), .uuid(appID), .text(state), .double(age * day)])
        }
        try conn.exec("INSERT INTO push_jobs (kind, notification_id, app_id) VALUES ('notification', $1, $2)",
                      [.uuid(n), .uuid(appID)])
        try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, state, lease_token, lease_expires_at, created_at)
            VALUES ('notification', $1, $2, 'running', gen_random_uuid(), now() + interval '1 minute', now() - interval '30 days')
            """, [.uuid(n), .uuid(appID)])
        let cutoff = try serverNow().addingTimeInterval(-7 * day)
        XCTAssertEqual(try store.pruneFinishedJobs(olderThan: cutoff, limit: 2), 2)
        XCTAssertEqual(try conn.exec("SELECT state FROM push_jobs WHERE finalized_at < now() - interval '7 days'")
                        .string(0, "state"), "completed", "the two oldest (12 and 11 days) went first")
        XCTAssertEqual(try store.pruneFinishedJobs(olderThan: cutoff, limit: 2), 1)
        XCTAssertEqual(try store.pruneFinishedJobs(olderThan: cutoff, limit: 2), 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_jobs"), 3, "recent final, available and running jobs stay")
        XCTAssertEqual(try count("SELECT count(*) FROM push_jobs WHERE state IN ('available', 'running')"), 2)
    }

    func testDeleteOldDeliveriesKeepsRetryingAndRecentRows() throws {
        let n = try notification(finishedDaysAgo: 100)
        for age in [91.0, 95, 93, 10] { try delivery(n, finishedDaysAgo: age) }
        try delivery(n, finishedDaysAgo: nil)
        let cutoff = try serverNow().addingTimeInterval(-90 * day)
        XCTAssertEqual(try store.deleteOldDeliveries(olderThan: cutoff, limit: 2), 2)
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries WHERE finished_at < now() - interval '92 days'"), 0,
                       "the two oldest went first")
        XCTAssertEqual(try store.deleteOldDeliveries(olderThan: cutoff, limit: 2), 1)
        XCTAssertEqual(try store.deleteOldDeliveries(olderThan: cutoff, limit: 2), 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries"), 2)
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries WHERE status = 'retrying'"), 1)
        XCTAssertEqual(try count("SELECT count(*) FROM push_notifications WHERE id = $1", [.uuid(n)]), 1)
    }

    func testDeleteDeliveredEventsKeepsUndeliveredOnesWhateverTheirAge() throws {
        for delivered in [20.0, 22, 21, 1] {
            try conn.exec("""
                INSERT INTO push_events (app_id, type, payload, created_at, delivered_at)
                VALUES ($1, 'push_device.deactivated', '{}', now() - interval '30 days',
                        now() - make_interval(secs => $2::float8))
                """, [.uuid(appID), .double(delivered * day)])
        }
        try conn.exec("""
            INSERT INTO push_events (app_id, type, payload, created_at) VALUES ($1, 'push_device.deactivated', '{}',
                    now() - interval '60 days')
            """, [.uuid(appID)])
        let cutoff = try serverNow().addingTimeInterval(-14 * day)
        XCTAssertEqual(try store.deleteDeliveredEvents(olderThan: cutoff, limit: 2), 2)
        XCTAssertEqual(try count("SELECT count(*) FROM push_events WHERE delivered_at < now() - interval '20.5 days'"), 0,
                       "the two oldest deliveries went first")
        XCTAssertEqual(try store.deleteDeliveredEvents(olderThan: cutoff, limit: 2), 1)
        XCTAssertEqual(try store.deleteDeliveredEvents(olderThan: cutoff, limit: 2), 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_events WHERE delivered_at IS NULL"), 1)
        XCTAssertEqual(try eventCount(), 2)
    }

    func testEraseFinalContentNullsContentOfOldFinalNotificationsOnly() throws {
        let old = try [("sent", 40.0), ("failed", 45), ("cancelled", 42)].map {
            try notification(status: $0.0, finishedDaysAgo: $0.1)
        }
        let recent = try notification(status: "sent", finishedDaysAgo: 2)
        let pending = try notification(status: "pending")
        try conn.exec("UPDATE push_notifications SET accepted_at = now() - interval '60 days' WHERE id = $1", [.uuid(pending)])
        let cutoff = try serverNow().addingTimeInterval(-30 * day)
        XCTAssertEqual(try store.eraseFinalContent(olderThan: cutoff, limit: 2), 2)
        let erased = try conn.exec("""
            SELECT id FROM push_notifications
             WHERE content_erased_at IS NOT NULL AND title IS NULL AND body IS NULL AND data IS NULL
               AND sound IS NULL AND thread_id IS NULL
            """)
        XCTAssertEqual(Set(try erased.rows.map { try erased.uuid($0, "id") }), [old[1], old[2]], "oldest first")
        XCTAssertEqual(try store.eraseFinalContent(olderThan: cutoff, limit: 2), 1)
        XCTAssertEqual(try store.eraseFinalContent(olderThan: cutoff, limit: 2), 0, "erased rows are not counted again")
        let kept = try conn.exec("""
            SELECT count(*) FROM push_notifications
             WHERE title = 'Your code' AND sound = 'chime' AND thread_id = 'orders' AND id = ANY ($1)
            """,
                                 [.uuidArray([recent, pending])])
        XCTAssertEqual(try kept.int(0, 0), 2)
        XCTAssertEqual(try conn.exec("SELECT status FROM push_notifications WHERE id = $1", [.uuid(old[1])])
                        .string(0, "status"), "failed", "only the content goes")
    }

    /// Test mode stores each delivery's exact request body, which holds the content in clear for a
    /// plaintext delivery: erasing a notification's content erases those copies too.
    func testEraseFinalContentErasesTheStoredRequestBodiesOfItsDeliveries() throws {
        let erasable = try notification(status: "sent", finishedDaysAgo: 40)
        let recent = try notification(status: "sent", finishedDaysAgo: 2)
        for n in [erasable, recent] {
            try conn.exec("""
                INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, payload, updated_at, finished_at)
                SELECT $1::uuid, gen_random_uuid(), 'sent', gen_random_uuid(), convert_to('{"aps":{"alert":"Your code"}}', 'UTF8'),
                       now(), now() FROM generate_series(1, 3)
                """, [.uuid(n)])
        }
        XCTAssertEqual(try store.eraseFinalContent(olderThan: try serverNow().addingTimeInterval(-30 * day), limit: 10), 1)
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries WHERE payload IS NOT NULL AND notification_id = '\(erasable)'"), 0)
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries WHERE status = 'sent' AND notification_id = '\(erasable)'"), 3,
                       "the outcomes stay")
        XCTAssertEqual(try count("SELECT count(*) FROM push_deliveries WHERE payload IS NOT NULL AND notification_id = '\(recent)'"), 3)
    }

    func testNonPositiveLimitIsRefused() {
        for limit in [0, -1] {
            let error = expectPGError { _ = try self.store.pruneFinishedJobs(olderThan: Date(), limit: limit) }
            XCTAssertEqual(error?.code, .usage)
        }
    }

    // MARK: - One worker at a time

    func testMaintenanceLockIsExclusiveAcrossTwoConnections() throws {
        let other = MaintenanceStore(connection: try database.connect())
        var innerRan = false
        let outer = try store.withMaintenanceLock { () -> Int? in
            try other.withMaintenanceLock { () -> Int in
                innerRan = true
                return 1
            }
        }
        XCTAssertEqual(outer, .some(nil), "the outer body ran; the other session was refused")
        XCTAssertFalse(innerRan)
        XCTAssertEqual(try other.withMaintenanceLock { 2 }, 2, "released when the holder's body returned")
        struct Boom: Error {}
        XCTAssertThrowsError(try store.withMaintenanceLock { throw Boom() })
        XCTAssertEqual(try other.withMaintenanceLock { 3 }, 3, "released when the holder's body threw")
    }

    func testMaintenanceLockOfADeadSessionIsFreed() throws {
        let holder = try database.connect()
        let holderStore = MaintenanceStore(connection: holder)
        let pid = Int(holder.serverProcessID)
        try holderStore.withMaintenanceLock {
            XCTAssertEqual(try store.withMaintenanceLock { 1 }, nil)
            try conn.exec("SELECT pg_terminate_backend($1)", [.int(pid)])
            var freed = false
            for _ in 0..<100 where !freed {
                freed = try store.withMaintenanceLock { true } ?? false
                if !freed { Thread.sleep(forTimeInterval: 0.02) }
            }
            XCTAssertTrue(freed, "the server released the dead session's lock")
        }
    }
}
