import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest

/// The API side's enqueue and cancel under the worker, on both stores: idempotency keys (R-SEND-1,
/// push_enqueue), cancellation (push_cancel), and the expiry the API side stores (R-SEND-10:
/// push_expires_at from the acceptance instant; the worker reads the stored instant). `LedgerTests`
/// runs these scenarios on the in-memory store, `PGQueueConformanceTests` on PostgreSQL (the SQL
/// functions themselves). The ledger nets of every ending are in the conformance suite
/// (`conformLedgerNetsForEveryEnding`), on both stores.
extension WorkerTestCase {
    /// R-SEND-1 / R-SEND-9: the same idempotency key twice gives one notification, one job and one
    /// set of acceptance charges; the second call reports `created` false.
    func conformIdempotencyKeyTwiceMakesOneNotificationAndOneSetOfCharges() throws {
        let app = try createApp()
        try register(app, user: "u1")
        try register(app, user: "u1", platform: "android")
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: ["u1"])
        q.title = "Once"
        q.idempotencyKey = "order-17-shipped"
        let first = try world.enqueue(q)
        let second = try world.enqueue(q)
        XCTAssertTrue(first.created)
        XCTAssertFalse(second.created)
        XCTAssertEqual(first.id, second.id)
        let counts = try world.rowCounts()
        XCTAssertEqual(counts.notifications, 1)
        XCTAssertEqual(counts.jobs, 1)
        XCTAssertEqual(counts.charges, 2)
        try drain(try makeWorker())
        XCTAssertEqual(try deliveries(first.id).count, 2)
        XCTAssertEqual(try world.rowCounts().charges, 2)
        XCTAssertEqual(try notification(first.id).deviceCount, 2)
        XCTAssertFalse(try world.enqueue(q).created, "still one notification after it was sent")
    }

    /// Cancel before send time refunds every acceptance charge and the job never runs; cancel after
    /// the send time started (job taken up) or after the end returns false and refunds nothing.
    func conformCancelBeforeSendTimeRefundsAllAndAfterStartReturnsFalse() throws {
        let app = try createApp()
        let a = try register(app, user: "u1"), b = try register(app, user: "u1", platform: "android")
        let sendAt = Date().addingTimeInterval(3600)
        let scheduled = try enqueue(app, users: ["u1"]) { $0.sendAt = sendAt }
        XCTAssertTrue(try world.cancel(scheduled))
        XCTAssertFalse(try world.cancel(scheduled), "cancelling twice is too late")
        XCTAssertEqual(try ledger(scheduled)[a]?.refunds, 1)
        XCTAssertEqual(try ledger(scheduled)[b]?.refunds, 1)
        XCTAssertEqual(try notification(scheduled).status, "cancelled")
        let queue: QueueStore = workerSession
        XCTAssertTrue(try queue.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30,
                                              now: sendAt.addingTimeInterval(60)).isEmpty, "the job never runs")
        XCTAssertTrue(try deliveries(scheduled).isEmpty)

        let started = try enqueue(app, users: ["u1"])
        let claimed = try queue.jobClaimBatch(owner: "w", limit: 10, leaseSeconds: 30)
        XCTAssertEqual(claimed.map { $0.notification.id }, [started])
        XCTAssertFalse(try world.cancel(started), "its job was taken up: too late")
        try queue.jobRelease([claimed[0].lease])
        try drain(try makeWorker())
        XCTAssertFalse(try world.cancel(started), "final: too late")
        XCTAssertEqual(try notification(started).status, "sent")
        XCTAssertEqual(try ledger(started).values.map(\.refunds).reduce(0, +), 0)
        try assertLedgerInvariants(started)
    }

    // MARK: - R-SEND-10: the expiry is computed once, where the notification is stored

    private func expiresAt(sendAt: Date?, ttl: Int?, now: Date) throws -> Date {
        let app = try createApp()
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: ["u"])
        q.title = "t"
        q.sendAt = sendAt
        q.ttlSeconds = ttl
        return try world.expiresAt(notification: try world.enqueue(q, now: now).id)
    }

    func conformExpiresAtIsStoredAsTheLaterOfAcceptedAndSendAtPlusTTL() throws {
        let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 1000).rounded() * 1000)
        XCTAssertEqual(try expiresAt(sendAt: nil, ttl: 60, now: now), now.addingTimeInterval(60))
        XCTAssertEqual(try expiresAt(sendAt: now.addingTimeInterval(100), ttl: 60, now: now), now.addingTimeInterval(160))
        XCTAssertEqual(try expiresAt(sendAt: now.addingTimeInterval(-100), ttl: 60, now: now), now.addingTimeInterval(60),
                       "a send_at in the past counts from acceptance")
        XCTAssertEqual(try expiresAt(sendAt: nil, ttl: nil, now: now), now.addingTimeInterval(2_419_200),
                       "the ttl defaults to four weeks")
    }
}

/// The enqueue and cancel scenarios above on the in-memory store; on PostgreSQL in `PGQueueConformanceTests`.
final class LedgerTests: WorkerTestCase {
    func testIdempotencyKeyTwiceMakesOneNotificationAndOneSetOfCharges() throws { try conformIdempotencyKeyTwiceMakesOneNotificationAndOneSetOfCharges() }
    func testCancelBeforeSendTimeRefundsAllAndAfterStartReturnsFalse() throws { try conformCancelBeforeSendTimeRefundsAllAndAfterStartReturnsFalse() }
    func testExpiresAtIsStoredAsTheLaterOfAcceptedAndSendAtPlusTTL() throws { try conformExpiresAtIsStoredAsTheLaterOfAcceptedAndSendAtPlusTTL() }
}
