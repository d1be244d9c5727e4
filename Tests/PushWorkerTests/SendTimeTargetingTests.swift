import Foundation
import XCTest
import PushCore
@testable import PushStore
import PushWorker

/// R-SEND-1 at send time: a batch's devices are re-checked when the batch runs (device deleted,
/// deactivated, or moved to a user outside the audience), and the check costs a primary-key probe
/// per device, not a scan of the audience or of the delivery and ledger tables.
final class SendTimeTargetingTests: PGWorkerTestCase {
    /// A notification to `users` users (one device each), started into batch jobs of `batchSize`
    /// by a claim of its own; returns the notification and the device of each user.
    private func startedBroadcast(_ app: UUID, users: Int, batchSize: Int) throws -> (UUID, [String: UUID]) {
        var devices: [String: UUID] = [:]
        for u in 0..<users { devices["a\(u)"] = try register(app, user: "a\(u)", token: "tok-a\(u)") }
        let n = try enqueue(app, users: (0..<users).map { "a\($0)" })
        let store = PGQueueStore(connection: workerConn)
        let start = try XCTUnwrap(try store.jobClaimBatch(owner: "t", limit: 1, leaseSeconds: 30).first)
        let started = try store.startOne(start, batchSize: batchSize)
        XCTAssertNil(started.inlineDeviceIDs, "split into batch jobs")
        return (n, devices)
    }

    func testADeviceMovedToAUserOutsideTheAudienceAfterTheStartIsNotSent() throws {
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 30, batchSize: 10)
        // The token of user a7 registers again for user "zz", who is not in the audience: same row, new user.
        let moved = try register(app, user: "zz", token: "tok-a7")
        XCTAssertEqual(moved, devices["a7"], "a re-registration of the token moves the device row")
        let router = RecordingRouter()
        try drain(try makeWorker(router, claimLimit: 16))
        XCTAssertFalse(router.pushes.contains { $0.deviceID == moved }, "nothing is sent to the moved device")
        XCTAssertEqual(router.pushes.count, 29)
        let rows = try deliveries(n)
        XCTAssertEqual(rows[moved]?.errorCode, ErrorCode.deviceGone.rawValue)
        XCTAssertEqual(rows.values.filter { $0.status == "sent" }.count, 29)
        try assertLedgerInvariants(n)
    }

    func testAMoveStampedJustBeforeTheStartButUnseenByItIsStillCaught() throws {
        // A registration whose clock reading precedes the start but which committed after the
        // start's snapshot: within the minute before the start, the audience is searched.
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 20, batchSize: 10)
        let device = try XCTUnwrap(devices["a3"])
        try conn.exec("""
            UPDATE push_devices d SET user_id = 'zz', last_registered_at = n.started_at - interval '30 seconds'
              FROM push_notifications n WHERE n.id = $1::uuid AND d.id = $2::uuid
            """, [.uuid(n), .uuid(device)])
        let router = RecordingRouter()
        try drain(try makeWorker(router, claimLimit: 16))
        XCTAssertFalse(router.pushes.contains { $0.deviceID == device })
        XCTAssertEqual(try deliveries(n)[device]?.errorCode, ErrorCode.deviceGone.rawValue)
        try assertLedgerInvariants(n)
    }

    func testDevicesRegisteredBeforeTheStartAreTargetedWithoutSearchingTheAudience() throws {
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 20, batchSize: 10)
        try conn.exec("UPDATE push_devices SET last_registered_at = last_registered_at - interval '1 day'")
        let store = PGQueueStore(connection: workerConn)
        let ids = devices.values.sorted { $0.uuidString < $1.uuidString }
        let rows = try store.batchLoadDevices([DeviceBatch(notificationID: n, deviceIDs: ids)])[0]
        XCTAssertEqual(rows.count, 20)
        XCTAssertTrue(rows.allSatisfy { $0.found && $0.targeted && $0.charged })
        // A deactivated device is not targeted, whatever its registration time.
        try conn.exec("UPDATE push_devices SET active = false, deactivated_at = now() WHERE id = $1::uuid", [.uuid(ids[0])])
        let again = try store.batchLoadDevices([DeviceBatch(notificationID: n, deviceIDs: ids)])[0]
        XCTAssertFalse(again[0].targeted)
        XCTAssertTrue(again.dropFirst().allSatisfy(\.targeted))
    }

    /// The batch load probes push_deliveries and push_ledger by primary key per device: with the
    /// tables' statistics up to date, a batch of 500 and 50,000 ledger rows, a plain join or EXISTS
    /// is planned as a hash over every ledger row of the table, read again for each batch.
    func testTheBatchLoadProbesDeliveriesAndLedgerByPrimaryKey() throws {
        let app = try createApp()
        let (n, devices) = try startedBroadcast(app, users: 40, batchSize: 10)
        try conn.exec("""
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT $1::uuid, gen_random_uuid(), 'charge', $2::uuid, 'test', 'accepted' FROM generate_series(1, 50000)
            """, [.uuid(n), .uuid(app)])
        try conn.exec("""
            INSERT INTO push_deliveries (notification_id, device_id, status, apns_id, updated_at, finished_at)
            SELECT $1::uuid, gen_random_uuid(), 'sent', gen_random_uuid(), now(), now() FROM generate_series(1, 50000)
            """, [.uuid(n)])
        try conn.exec("ANALYZE push_deliveries")
        try conn.exec("ANALYZE push_ledger")
        let ids = Array(devices.values) + (0..<460).map { _ in UUID() }
        let params: [PGValue?] = [.text("{" + ids.map { _ in "1" }.joined(separator: ",") + "}"),
                                  .text("{" + ids.map { _ in n.uuidString }.joined(separator: ",") + "}"),
                                  .text("{" + ids.map(\.uuidString).joined(separator: ",") + "}")]
        let plan = try conn.exec("EXPLAIN (FORMAT TEXT) " + JobQueries.loadBatchDevices, params)
        let text = (0..<plan.rows.count).map { (try? plan.string($0, 0)) ?? "" }.joined(separator: "\n")
        XCTAssertFalse(text.contains("Seq Scan on push_deliveries"), text)
        XCTAssertFalse(text.contains("Seq Scan on push_ledger"), text)
        XCTAssertTrue(text.contains("push_deliveries_pkey"), text)
        XCTAssertTrue(text.contains("push_ledger_pkey"), text)
    }
}
