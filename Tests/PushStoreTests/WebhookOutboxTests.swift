import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
import PushTestSupport
@testable import PushStore

/// Issue 19 parts 2-6 at the storage layer: fan-out in the recording transaction (R-PRV-4,
/// R-MODE-1), events nobody wants not kept, the leased outbox (claim with SKIP LOCKED, per-endpoint
/// bound, turns, lease-guarded record, rescue), endpoint health (R-HOOK-2), resend and retention.
final class WebhookOutboxTests: WebhookStoreTestCase {
    // MARK: - Fan-out

    func testAnEventGoesToEveryEnabledEndpointOfItsModeThatWantsItType() throws {
        let a = try endpoint(.test).endpoint, b = try endpoint(.test).endpoint
        let live = try endpoint(.live).endpoint
        let other = try endpoint(.test, types: ["push_app.encryption_disabled"]).endpoint
        let off = try endpoint(.test).endpoint
        _ = try endpoints.update(id: off.id, enabled: false)
        try insertEvents(2, mode: .test)
        XCTAssertEqual(try rows(a.id, "available"), 2)
        XCTAssertEqual(try rows(b.id, "available"), 2)
        XCTAssertEqual(try rows(live.id, "available"), 0, "R-MODE-1: test events go to test endpoints only")
        XCTAssertEqual(try rows(other.id, "available"), 0, "not subscribed to the type")
        XCTAssertEqual(try rows(off.id, "available"), 0, "disabled")
        try insertEvents(1, mode: .live)
        XCTAssertEqual(try rows(live.id, "available"), 1)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 3)
    }

    /// An event no endpoint wants is deleted in the transaction that records it; a rolled-back
    /// change leaves no event and no delivery (R-PRV-4).
    func testEventsNobodyWantsAreNotKeptAndRolledBackOnesLeaveNothing() throws {
        try insertEvents(5, mode: .test)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 0, "no endpoint at all")
        try endpoint(.live)
        try insertEvents(5, mode: .test)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 0, "only an endpoint of the other mode")
        try endpoint(.test)
        try conn.exec("BEGIN")
        try insertEvents(3, mode: .test)
        try conn.exec("ROLLBACK")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 0)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_outbox"), 0)
        // Through the product's own path: the 21st device of a user deactivates the oldest (R-DEV-5).
        let registry = DeviceRegistry(connection: conn)
        for token in (0...20).map({ "t\($0)" }) {
            _ = try registry.register(appID: appID, try DeviceRegistration.validate(
                mode: "test", platform: "android", token: token, userID: "u", apnsEnvironment: nil, encryptionPublicKey: .none,
                platforms: ProviderTable.standard.addressing))
        }
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_outbox o JOIN push_events e ON e.id = o.ref_id WHERE e.payload->>'reason' = 'DEVICE_LIMIT'"), 1)
    }

    func testFinishedNotificationsAreAnOptInEventOfTheirMode() throws {
        let plain = try endpoint(.test).endpoint
        let optedIn = try endpoint(.test, types: ["push_notification.finished"]).endpoint
        let live = try endpoint(.live, types: ["push_notification.finished"]).endpoint
        let store = NotificationStore(connection: conn)
        var q = EnqueueRequest(appID: appID, mode: "test", userIDs: ["nobody"])
        q.title = "t"
        q.sendAt = Date().addingTimeInterval(3600)
        let n = try store.enqueue(q).id
        XCTAssertTrue(try store.cancel(id: n))
        XCTAssertEqual(try rows(plain.id, "available"), 0, "opt-in: not in the default set")
        XCTAssertEqual(try rows(live.id, "available"), 0, "a test notification")
        XCTAssertEqual(try rows(optedIn.id, "available"), 1)
        let p = try conn.exec("SELECT payload::text FROM push_events WHERE type = 'push_notification.finished'").string(0, 0)
        let body = String(decoding: try WebhookBody.bytes(WebhookBody.Event(publicID: UUID(), type: "push_notification.finished",
                                                                          createdAt: Date(), appID: appID, payload: p)), as: UTF8.self)
        XCTAssertTrue(body.contains(#""status":"cancelled","device_count":0,"error_code":"CANCELLED""#), body)
        try conn.exec("UPDATE push_notifications SET device_count = 1 WHERE id = $1", [.uuid(n)])
        XCTAssertEqual(try rows(optedIn.id, "available"), 1, "only the change to final fires it")
    }

    func testTurningEncryptionOffIsALiveEvent() throws {
        let live = try endpoint(.live).endpoint, test = try endpoint(.test).endpoint
        let apps = AppStore(connection: conn)
        _ = try apps.appUpdate(id: appID, requireEncryption: true)
        _ = try apps.appUpdate(id: appID, requireEncryption: true)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 0, "turning it on fires nothing")
        _ = try apps.appUpdate(id: appID, requireEncryption: false)
        _ = try apps.appUpdate(id: appID, requireEncryption: false)
        XCTAssertEqual(try rows(live.id, "available"), 1, "once, when it goes off")
        XCTAssertEqual(try rows(test.id, "available"), 0)
    }

    // MARK: - Claim

    /// At most `perEndpoint` of one endpoint run at once, and endpoints take turns.
    func testClaimBoundsEachEndpointAndTakesTurns() throws {
        let a = try endpoint().endpoint
        try insertEvents(10)
        let b = try endpoint().endpoint
        try insertEvents(2)
        let turn = try dispatch().claim(owner: "w1", limit: 2, perEndpoint: 3, leaseSeconds: 30)
        XCTAssertEqual(Set(turn.map(\.endpointID)), [a.id, b.id],
                       "every endpoint's first before any second, though a's are older")
        let first = try dispatch().claim(owner: "w1", limit: 50, perEndpoint: 3, leaseSeconds: 30)
        XCTAssertEqual(first.filter { $0.endpointID == a.id }.count, 2, "a: 3 running at most")
        XCTAssertEqual(first.filter { $0.endpointID == b.id }.count, 1)
        XCTAssertEqual(try dispatch().claim(owner: "w2", limit: 50, perEndpoint: 3, leaseSeconds: 30).count, 0,
                       "a's room is taken, b has nothing left")
        let again = try dispatch().claim(owner: "w2", limit: 50, perEndpoint: 5, leaseSeconds: 30)
        XCTAssertEqual(again.count, 2, "a larger bound: 2 more of a")
        let d = try XCTUnwrap(turn.first { $0.endpointID == a.id })
        XCTAssertEqual(d.attempt, 1)
        XCTAssertEqual(d.event?.type, "push_device.deactivated")
        XCTAssertEqual(d.endpoint?.secrets.count, 1)
    }

    /// Many workers claiming at once never run more than the bound of one endpoint, and between
    /// them they finish every row (each claims until all 200 are done or 60 s pass: how many
    /// rounds that takes depends on the machine's load, the bound does not).
    func testTheBoundHoldsAcrossConcurrentClaimers() throws {
        let a = try endpoint().endpoint
        try insertEvents(200)
        let maxSeen = PGLockedBox(0)
        let recorded = PGLockedBox(0)
        let group = DispatchGroup()
        let keys = self.keys!
        let deadline = Date().addingTimeInterval(60)
        for w in 0..<6 {
            let c = try database.connect()
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                let store = WebhookDispatchStore(connection: c, keys: keys)
                while recorded.value < 200 && Date() < deadline {
                    guard let got = try? store.claim(owner: "w\(w)", limit: 10, perEndpoint: 4, leaseSeconds: 30) else { continue }
                    if let n = try? c.exec("SELECT count(*)::int FROM push_outbox WHERE state = 'running'").int(0, 0) {
                        maxSeen.update { $0 = max($0, n) }
                    }
                    let done = (try? store.record(got.map { WebhookAttemptRecord(outboxID: $0.outboxID, leaseToken: $0.leaseToken,
                                                                                   state: .done, error: nil, statusCode: 200,
                                                                                   attemptedAt: Date(), durationMillis: 1,
                                                                                   response: nil, countsAsEndpointFailure: false) })) ?? []
                    recorded.update { $0 += done.count }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 90), .success)
        XCTAssertLessThanOrEqual(maxSeen.value, 4)
        XCTAssertEqual(recorded.value, 200, "each row recorded once")
        XCTAssertEqual(try rows(a.id, "done"), 200, "and they finished every row")
    }

    /// A claim racing with transactions that record events always sees the event of every row it
    /// claims (the claim's statements see commits newer than an enclosing statement would).
    func testClaimedDeliveriesAlwaysCarryTheirEventUnderConcurrentInserts() throws {
        try endpoint()
        let writer = try database.connect(), app = appID!
        let stop = PGLockedBox(false)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            defer { done.signal() }
            for _ in 0..<400 where !stop.value {
                _ = try? writer.exec("""
                    INSERT INTO push_events (app_id, type, payload)
                    SELECT $1::uuid, 'push_device.deactivated', jsonb_build_object('device_id', gen_random_uuid(),
                           'user_id', 'u', 'mode', 'test', 'reason', 'UNREGISTERED') FROM generate_series(1, 3)
                    """, [.uuid(app)])
            }
        }
        var claimed = 0, orphans = 0
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            let got = try dispatch().claim(owner: "w", limit: 50, perEndpoint: 1000, leaseSeconds: 30)
            claimed += got.count
            orphans += got.filter { $0.event == nil || $0.endpoint == nil }.count
            _ = try dispatch().record(got.map { record($0, .done) })
            if done.wait(timeout: .now()) == .success {
                done.signal()
                if got.isEmpty { break }
            }
        }
        stop.update { $0 = true }
        _ = done.wait(timeout: .now() + 30)
        XCTAssertEqual(orphans, 0, "claimed rows whose event or endpoint the claim did not see")
        XCTAssertEqual(claimed, 1200, "every event claimed once")
    }

    // MARK: - Record

    func testRecordIsGuardedByTheLeaseToken() throws {
        try endpoint()
        try insertEvents(1)
        let d = try XCTUnwrap(try dispatch().claim(owner: "w1", limit: 1, perEndpoint: 1, leaseSeconds: 30).first)
        var stale = d
        stale.leaseToken = UUID()
        XCTAssertEqual(try dispatch().record([record(stale, .done)]), [], "another token: not recorded")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_webhook_attempts"), 0)
        XCTAssertEqual(try dispatch().record([record(d, .done)]), [d.outboxID])
        XCTAssertEqual(try dispatch().record([record(d, .done)]), [], "only once")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events WHERE delivered_at IS NOT NULL"), 1)
    }

    func testRetriesComeBackAtTheirTimeAndCountFailures() throws {
        let e = try endpoint().endpoint
        try insertEvents(1)
        let d = try XCTUnwrap(try dispatch().claim(owner: "w", limit: 1, perEndpoint: 1, leaseSeconds: 30).first)
        let at = Date().addingTimeInterval(120)
        XCTAssertEqual(try dispatch().record([record(d, .retry(at: at), error: "HTTP_500", status: 500)]).count, 1)
        XCTAssertTrue(try dispatch().claim(owner: "w", limit: 1, perEndpoint: 1, leaseSeconds: 30).isEmpty, "not before its time")
        let later = try XCTUnwrap(try dispatch().claim(owner: "w", limit: 1, perEndpoint: 1, leaseSeconds: 30,
                                                       now: at.addingTimeInterval(1)).first)
        XCTAssertEqual(later.attempt, 2)
        XCTAssertEqual(later.failures, 1)
        XCTAssertEqual(later.windowStartedAt, d.windowStartedAt, "the window counts from the first attempt")
        XCTAssertNotNil(try endpoints.get(id: e.id)?.failingSince)
    }

    /// 410 disables at once and fails what was waiting; a retry recorded for a disabled endpoint fails.
    func testDisablingFailsPendingRowsAndLateRetries() throws {
        let e = try endpoint().endpoint
        try insertEvents(5)
        let claimed = try dispatch().claim(owner: "w", limit: 5, perEndpoint: 2, leaseSeconds: 30)
        XCTAssertEqual(claimed.count, 2)
        XCTAssertEqual(try dispatch().record([record(claimed[0], .failed, error: "ENDPOINT_GONE", status: 410)],
                                             disable: [(e.id, .endpointGone)]).count, 1)
        let after = try XCTUnwrap(try endpoints.get(id: e.id))
        XCTAssertFalse(after.enabled)
        XCTAssertEqual(after.disabledReason, "ENDPOINT_GONE")
        XCTAssertEqual(try rows(e.id, "available"), 0)
        XCTAssertEqual(try rows(e.id, "failed"), 4)
        XCTAssertEqual(try rows(e.id, "running"), 1)
        _ = try dispatch().record([record(claimed[1], .retry(at: Date()), error: "HTTP_500", status: 500)])
        XCTAssertEqual(try rows(e.id, "failed"), 5, "the in-flight one's retry became a failure")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events WHERE delivered_at IS NULL"), 0, "all finished")
    }

    /// failing_since: set by the first failure, kept by later ones, cleared by a success.
    func testEndpointHealthFollowsAttemptsInTimeOrder() throws {
        let e = try endpoint().endpoint
        try insertEvents(4)
        let d = try dispatch().claim(owner: "w", limit: 4, perEndpoint: 4, leaseSeconds: 30)
        let t = Date()
        _ = try dispatch().record([record(d[0], .retry(at: t), status: 500, at: t),
                                   record(d[1], .retry(at: t), status: 500, at: t.addingTimeInterval(1))])
        XCTAssertEqual(try XCTUnwrap(try endpoints.get(id: e.id)?.failingSince).timeIntervalSince(t), 0, accuracy: 0.01)
        _ = try dispatch().record([record(d[2], .retry(at: t), error: "SECRET_UNAVAILABLE", status: nil,
                                          at: t.addingTimeInterval(2), counts: false)])
        XCTAssertEqual(try XCTUnwrap(try endpoints.get(id: e.id)?.failingSince).timeIntervalSince(t), 0, accuracy: 0.01)
        _ = try dispatch().record([record(d[3], .done, at: t.addingTimeInterval(3))])
        let healthy = try XCTUnwrap(try endpoints.get(id: e.id))
        XCTAssertNil(healthy.failingSince)
        XCTAssertNotNil(healthy.lastSuccessAt)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_webhook_attempts WHERE endpoint_id = $1", [.uuid(e.id)]), 4)
    }

    // MARK: - Rescue, resend, retention

    func testExpiredLeasesAreRescuedOrFailedPastTheWindow() throws {
        try endpoint()
        try insertEvents(2)
        let d = try dispatch().claim(owner: "dead", limit: 2, perEndpoint: 2, leaseSeconds: 1)
        try conn.exec("UPDATE push_outbox SET window_started_at = now() - interval '4 days' WHERE id = $1", [.int64(d[1].outboxID)])
        XCTAssertEqual(try dispatch().rescue(window: 3600, now: Date().addingTimeInterval(0.5)).rescued, 0, "leases still held")
        let r = try dispatch().rescue(window: 3 * 86_400, now: Date().addingTimeInterval(2))
        XCTAssertEqual(r.rescued, 1)
        XCTAssertEqual(r.failed, 1)
        XCTAssertEqual(try dispatch().record([record(d[0], .done)]), [], "the dead worker's late record is refused")
        let again = try XCTUnwrap(try dispatch().claim(owner: "w", limit: 2, perEndpoint: 2, leaseSeconds: 30,
                                                       now: Date().addingTimeInterval(2)).first)
        XCTAssertEqual(again.outboxID, d[0].outboxID)
        XCTAssertEqual(again.attempt, 2, "sent again: at least once")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events WHERE delivered_at IS NOT NULL"), 1)
    }

    func testResendQueuesTheSameDeliveryAgain() throws {
        let e = try endpoint().endpoint
        try insertEvents(1)
        let d = try XCTUnwrap(try dispatch().claim(owner: "w", limit: 1, perEndpoint: 1, leaseSeconds: 30).first)
        let event = try XCTUnwrap(d.event?.publicID)
        XCTAssertEqual(try endpoints.resend(eventID: event), 0, "still in flight: nothing to queue")
        _ = try dispatch().record([record(d, .done)])
        XCTAssertEqual(try endpoints.resend(eventID: event), 1)
        let again = try XCTUnwrap(try dispatch().claim(owner: "w", limit: 1, perEndpoint: 1, leaseSeconds: 30).first)
        XCTAssertEqual(again.outboxID, d.outboxID, "the same row: the same webhook-id")
        XCTAssertEqual(again.failures, 0)
        XCTAssertThrowsError(try endpoints.resend(eventID: UUID())) { XCTAssertEqual(($0 as? PushError)?.code, .notFound) }
        let late = try endpoint().endpoint
        _ = try dispatch().record([record(again, .done)])
        XCTAssertEqual(try endpoints.resend(eventID: event, endpointID: late.id), 1, "to an endpoint made after the event")
        _ = try endpoints.update(id: e.id, enabled: false)
        XCTAssertThrowsError(try endpoints.resend(eventID: event, endpointID: e.id)) {
            XCTAssertEqual(($0 as? PushError)?.code, .validationError, "disabled")
        }
    }

    func testRetentionDeletesFinishedEventsWithTheirRowsAndAttempts() throws {
        try endpoint()
        try insertEvents(3)
        let d = try dispatch().claim(owner: "w", limit: 3, perEndpoint: 3, leaseSeconds: 30)
        _ = try dispatch().record([record(d[0], .done), record(d[1], .failed, error: "RETRIES_EXHAUSTED", status: 500),
                                   record(d[2], .retry(at: Date()), status: 500)])
        let m = MaintenanceStore(connection: conn)
        XCTAssertEqual(try m.deleteDeliveredEvents(olderThan: Date().addingTimeInterval(-60), limit: 10), 0, "not old enough")
        XCTAssertEqual(try m.deleteDeliveredEvents(olderThan: Date().addingTimeInterval(60), limit: 10), 2)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_events"), 1, "the retrying one stays")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_outbox"), 1)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_webhook_attempts"), 1)
    }
}
