import Foundation
import XCTest
import PushAcceptance
import PushCore
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// A whole-app audience in live mode (issue 22) against the project's fake APNs and FCM: 20,000
/// devices split at the send time, each reached once; inactive devices, the test mode's and a
/// device registered after the send time are left out; charged at send time, one charge each.
final class WholeAppAudienceLiveTests: LiveTestCase {
    override class var backend: Backend { .postgres }

    func testTwentyThousandLiveDevicesEachReachTheFakeOnce() throws {
        try setAPNs()
        try setFCM()
        var live = try conn.registerMany(appID, mode: .live, count: 20_000, prefix: "ok-\(tag)", environment: "production")
        let gone = Array(live.keys.sorted { $0.uuidString < $1.uuidString }.prefix(100))
        for id in gone {
            _ = try conn.exec("SELECT push_delete_device(app_id, mode, id) FROM push_devices WHERE id = $1::uuid", [.uuid(id)])
            live[id] = nil
        }
        let testMode = try conn.registerMany(appID, mode: .test, count: 50, prefix: "ok-\(tag)-test")
        var q = SendRequest(appID: appID, mode: .live, userIDs: [])
        q.audience = "all"
        q.title = "Service update"
        q.body = "Back to normal"
        let n = try AcceptanceService(connection: conn).send(q).notificationID

        var config = WorkerConfig(owner: "live-audience", claimLimit: 32, batchSize: 500)
        config.split = SplitRequest(chunkDevices: 5_000, maxPendingBatches: 8)
        let worker = try Worker(config: config, sessions: world.sessions, router: router, log: Log(level: .error))
        // The send time: the first claim holds only the notification job, which starts it.
        XCTAssertEqual(try worker.runOnce(store: workerSession), 1)
        XCTAssertEqual(try notification(n).status, "sending")
        let late = try device("ok", platform: .android, user: "late", n: 999_999)
        try drain(worker, timeout: 300)

        let rows = try world.deliveries(n)
        XCTAssertEqual(rows.count, live.count)
        XCTAssertEqual(Set(rows.keys), Set(live.keys), "one delivery row per active live device at the send time")
        XCTAssertNil(rows[late.id], "a device registered after the send time is left out")
        XCTAssertTrue(Set(rows.keys).isDisjoint(with: gone), "inactive devices are left out")
        XCTAssertTrue(Set(rows.keys).isDisjoint(with: testMode.keys), "the test mode's devices are left out")
        XCTAssertTrue(rows.values.allSatisfy { $0.status == "sent" })
        let report = try world.notification(n)
        XCTAssertEqual(report.status, "sent")
        XCTAssertEqual(report.deviceCount, live.count)
        let ledger = try world.ledger(n)
        XCTAssertEqual(ledger.count, live.count)
        XCTAssertTrue(ledger.values.allSatisfy { $0.charges == 1 && $0.refunds == 0 }, "one send-time charge each")

        // What the fakes saw: each token once.
        let tokens = (pushes(fakes.apns) + pushes(fakes.sandbox) + pushes(fakes.fcm)).compactMap { $0["token"] as? String }
        let seen = Dictionary(tokens.map { ($0, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(seen.count, live.count)
        XCTAssertTrue(seen.values.allSatisfy { $0 == 1 }, "no token pushed twice")
        XCTAssertNil(seen[late.token])
    }
}
