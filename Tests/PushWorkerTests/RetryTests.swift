import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// R-SEND-12 per-delivery retries through the real worker and the simulator's tokens (R-MODE-2).
final class RetryTests: WorkerTestCase {
    /// R-SEND-12: `test_rate_limited` is a deferral (retrying with `failures` 0), then sent;
    /// `test_unavailable` fails transiently twice, then is sent on attempt 3 with the same apns-id
    /// every time; `test_timeout` ends RETRIES_EXHAUSTED after the policy's 3 failed attempts and
    /// is refunded (R-SEND-9).
    func testSimulatorRetryTokensDeferRetryAndExhaust() throws {
        let app = try createApp()
        let limited = try register(app, user: "u1", platform: "ios", token: "test_rate_limited")
        let unavailable = try register(app, user: "u1", platform: "android", token: "test_unavailable")
        let timeout = try register(app, user: "u1", platform: "ios", token: "test_timeout")
        let n = try enqueue(app, users: ["u1"])
        let router = RecordingRouter()
        var limitedRowsSeen: [(status: String, attempts: Int, failures: Int)] = []
        router.onSend = { [unowned self] pushes in
            guard pushes.contains(where: { $0.deviceID == limited }) else { return }
            if let row = try? self.deliveries(n)[limited] {
                limitedRowsSeen.append((row.status, row.attempts, row.failures))
            }
        }
        try drain(try makeWorker(router))

        let rows = try deliveries(n)
        // Rate limited: one deferral (not a failure), then accepted.
        XCTAssertEqual(limitedRowsSeen.count, 1, "the retry saw the deferred row")
        XCTAssertEqual(limitedRowsSeen.first?.status, "retrying")
        XCTAssertEqual(limitedRowsSeen.first?.attempts, 1)
        XCTAssertEqual(limitedRowsSeen.first?.failures, 0, "a deferral is not a failed attempt")
        XCTAssertEqual(rows[limited]?.status, "sent")
        XCTAssertEqual(rows[limited]?.attempts, 2)
        XCTAssertEqual(rows[limited]?.failures, 0)

        // Unavailable twice, then sent on attempt 3, same apns-id throughout.
        let u = try XCTUnwrap(rows[unavailable])
        XCTAssertEqual(u.status, "sent")
        XCTAssertEqual(u.attempts, 3)
        XCTAssertEqual(u.failures, 2)
        let uPushes = router.pushes.filter { $0.deviceID == unavailable }
        XCTAssertEqual(uPushes.map { $0.previousAttempts }, [0, 1, 2])
        XCTAssertEqual(Set(uPushes.map { $0.apnsID }), [u.apnsID], "the same apns-id across retries")
        XCTAssertEqual(u.providerMessageID, "sim-\(u.apnsID.uuidString.lowercased())")

        // Timeout every time: exhausted after the policy's failed attempts.
        let t = try XCTUnwrap(rows[timeout])
        XCTAssertEqual(t.status, "failed")
        XCTAssertEqual(t.errorCode, "RETRIES_EXHAUSTED")
        XCTAssertEqual(t.attempts, Self.fastRetry.maxFailedAttempts)
        XCTAssertEqual(t.failures, Self.fastRetry.maxFailedAttempts)
        XCTAssertEqual(router.pushes.filter { $0.deviceID == timeout }.count, Self.fastRetry.maxFailedAttempts)
        XCTAssertEqual(Set(router.pushes.filter { $0.deviceID == timeout }.map { $0.apnsID }), [t.apnsID])
        XCTAssertEqual(try net(n, timeout), 0, "RETRIES_EXHAUSTED is refunded")

        let state = try notification(n)
        XCTAssertEqual(state.status, "sent")
        XCTAssertEqual(state.deviceCount, 2)
        XCTAssertTrue(try world.jobs().allSatisfy { $0.state == .completed })
        try assertLedgerInvariants(n)
    }

    /// R-SEND-10 / R-SEND-12: ttl 0 is "now or never": a transient answer on the single attempt
    /// ends EXPIRED (refunded), with no second attempt.
    func testTTLZeroWithTransientAnswerEndsExpired() throws {
        let app = try createApp()
        let device = try register(app, user: "u1", platform: "ios", token: "test_unavailable")
        let n = try enqueue(app, users: ["u1"]) { $0.ttlSeconds = 0 }
        let router = RecordingRouter()
        try drain(try makeWorker(router))

        let row = try XCTUnwrap(try deliveries(n)[device])
        XCTAssertEqual(row.status, "failed")
        XCTAssertEqual(row.errorCode, "EXPIRED")
        XCTAssertEqual(row.attempts, 1)
        XCTAssertEqual(router.pushes.count, 1, "no retry after expiry")
        XCTAssertEqual(router.pushes.first?.apnsExpiration, 0, "apns-expiration 0 for now-or-never")
        XCTAssertEqual(try ledger(n)[device]?.refunds, 1)
        XCTAssertEqual(try notification(n).status, "failed")
        XCTAssertEqual(try notification(n).errorCode, "ALL_DEVICES_REFUSED")
        try assertLedgerInvariants(n)
    }
}
