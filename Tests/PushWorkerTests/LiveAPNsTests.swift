import Foundation
import XCTest
import PushCore
import PushCrypto
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// The worker with `LiveRouter` against the fake APNs, one test per row of the answer table
/// (`ProviderAnswerTable`; Apple's "Handling notification responses from APNs"), with device,
/// credential, event and ledger effects.
final class LiveAPNsTests: LiveTestCase {
    func testAccepted200RecordsApnsIDAndVerifiesCredentialsR_APP_3() throws {
        try setAPNs()
        let d = try device("ok")
        let n = try send(collapseKey: "c1", priority: "normal")
        try drain()
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.status, "sent")
        XCTAssertEqual(del.provider, "apns")
        XCTAssertEqual(del.providerMessageID, del.apnsID.uuidString.lowercased())
        let logged = try XCTUnwrap(pushes(fakes.apns).first)
        XCTAssertEqual(logged["apns_id"] as? String, del.apnsID.uuidString.lowercased())
        XCTAssertEqual(logged["topic"] as? String, LiveFakes.topic)
        XCTAssertEqual(logged["priority"] as? String, "5")  // R-SEND-10: normal → 5
        XCTAssertEqual(logged["collapse_id"] as? String, "c1")
        let cred = try XCTUnwrap(try credential(.apns))
        XCTAssertEqual(cred.state, .verified)
        XCTAssertNotNil(cred.firstAcceptedAt)
        XCTAssertEqual(try ledger(n, d.id), ["charge"])  // R-SEND-9: sent nets one charge
        XCTAssertEqual(try report(n).status, "sent")
    }

    func testUnregistered410DeactivatesDeviceWithEventR_PRV_1() throws {
        try setAPNs()
        let d = try device("unregistered")
        // Registered before the fake's 410 timestamp (2023-11-14), so the verdict is newer (R-DEV-8).
        try world.setDeviceLastRegistered(d.id, ISO8601DateFormatter().date(from: "2023-01-01T00:00:00Z")!)
        let n = try send()
        try drain()
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.status, "failed")
        XCTAssertEqual(del.errorCode, "UNREGISTERED")
        let state = try deviceState(d.id)
        XCTAssertFalse(state.active)
        XCTAssertEqual(state.reason, "UNREGISTERED")
        let ev = try events("push_device.deactivated")
        XCTAssertEqual(ev.count, 1)
        XCTAssertEqual(ev.first?["device_id"] as? String, d.id.uuidString.lowercased())
        XCTAssertEqual(try ledger(n, d.id), ["charge"])  // R-SEND-9: rejected for the token itself
    }

    func testUnregistered410OlderThanReRegistrationKeepsDeviceR_DEV_8() throws {
        try setAPNs()
        let d = try device("unregistered")  // registered now: after the 410's 2023 timestamp
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "UNREGISTERED")
        XCTAssertTrue(try deviceState(d.id).active)
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
    }

    func testBadDeviceTokenDeactivatesAsInvalidTokenR_PRV_1() throws {
        try setAPNs()
        let d = try device("baddevice")
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "INVALID_TOKEN")
        let state = try deviceState(d.id)
        XCTAssertFalse(state.active)
        XCTAssertEqual(state.reason, "INVALID_TOKEN")
        XCTAssertEqual(try events("push_device.deactivated").count, 1)
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testDeviceTokenNotForTopicBeforeVerificationInvalidatesCredentialsKeepsDeviceR_PRV_2() throws {
        try setAPNs()
        let d = try device("notfortopic")
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "APP_MISMATCH")
        XCTAssertTrue(try deviceState(d.id).active)
        let cred = try XCTUnwrap(try credential(.apns))
        XCTAssertEqual(cred.state, .invalid)
        XCTAssertEqual(cred.invalidReason, "DeviceTokenNotForTopic")
        let ev = try events("push_app.credentials_invalid")
        XCTAssertEqual(ev.count, 1)
        XCTAssertEqual(ev.first?["kind"] as? String, "apns")
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
        XCTAssertEqual(try ledger(n, d.id), ["charge", "refund"])  // R-SEND-9: blamed on the credentials
    }

    func testDeviceTokenNotForTopicAfterVerificationDeactivatesDeviceR_PRV_2() throws {
        try setAPNs()
        _ = try device("ok", user: "u1")
        try drainSend(users: ["u1"])
        XCTAssertEqual(try credential(.apns)?.state, .verified)
        let bad = try device("notfortopic", user: "u2")
        let n = try send(users: ["u2"])
        try drain()
        XCTAssertEqual(try delivery(n, bad.id).errorCode, "APP_MISMATCH")
        let state = try deviceState(bad.id)
        XCTAssertFalse(state.active)
        XCTAssertEqual(state.reason, "APP_MISMATCH")
        XCTAssertEqual(try credential(.apns)?.state, .verified)
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 0)
        XCTAssertEqual(try ledger(n, bad.id), ["charge"])  // R-SEND-9: the device's own mismatch
    }

    func testTopicDisallowedInvalidatesCredentialsThenDeliveriesFailWithoutCallUntilReplacedR_PRV_3_R_APP_4() throws {
        try setAPNs(topic: "com.example.other")
        try setFCM()
        let ios = try device("ok", user: "u1")
        let n1 = try send(users: ["u1"])
        try drain()
        XCTAssertEqual(try delivery(n1, ios.id).errorCode, "CREDENTIALS_INVALID")
        XCTAssertTrue(try deviceState(ios.id).active)
        XCTAssertEqual(try credential(.apns)?.state, .invalid)
        XCTAssertEqual(try credential(.apns)?.invalidReason, "TopicDisallowed")
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 1)

        // R-APP-4: the next live delivery fails at once, no provider call; the FCM set is unaffected.
        let android = try device("ok", platform: .android, user: "u2", n: 1)
        let n2 = try send(users: ["u1", "u2"])
        try drain()
        let refused = try delivery(n2, ios.id)
        XCTAssertEqual(refused.errorCode, "CREDENTIALS_INVALID")
        XCTAssertNil(refused.provider)
        XCTAssertEqual(refused.attempts, 0)
        XCTAssertEqual(try ledger(n2, ios.id), ["charge", "refund"])
        XCTAssertEqual(try delivery(n2, android.id).status, "sent")
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 1)

        // Replacing the set lifts the refusal (unverified again; the client is rebuilt for the new version).
        XCTAssertEqual(try setAPNs().state, .unverified)
        let n3 = try send(users: ["u1"])
        try drain()
        XCTAssertEqual(try delivery(n3, ios.id).status, "sent")
        XCTAssertEqual(try credential(.apns)?.state, .verified)
    }

    func testProviderPayloadTooLargeFailsRefundedDeviceKept() throws {
        try setAPNs()
        let d = try device("toolarge")
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertTrue(try deviceState(d.id).active)
        XCTAssertEqual(try ledger(n, d.id), ["charge", "refund"])  // R-SEND-9
    }

    func testTooManyRequestsWithRetryAfterIsADeferralR_SEND_12() throws {
        try setAPNs()
        let d = try device("toomany")
        let n = try send()
        try drain()
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.status, "retrying")
        XCTAssertEqual(del.attempts, 1)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(del.nextAttemptAt).timeIntervalSinceNow, 5)  // retry-after: 7
        XCTAssertEqual(del.failures, 0)  // a deferral is not a failed attempt
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testServerError500IsTransientThenSentWithSameApnsID() throws {
        try setAPNs()
        let d = try device("fail500")
        let n = try send()
        try drain()
        let first = try delivery(n, d.id)
        XCTAssertEqual(first.status, "retrying")
        // The provider recovers: the device's token now answers 200 (stands in for a healthy APNs).
        try world.setDeviceToken(d.id, "ok-\(tag)-recovered")
        try dueNow()
        try drain()
        let second = try delivery(n, d.id)
        XCTAssertEqual(second.status, "sent")
        XCTAssertEqual(second.attempts, 2)
        XCTAssertEqual(second.apnsID, first.apnsID)
        XCTAssertEqual(pushes(fakes.apns).first?["apns_id"] as? String, first.apnsID.uuidString.lowercased())
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testResetStreamAndGoawayAreRetriedThenSentWithTheSameApnsIDAndNoOtherDeliveryIsLost() throws {
        // Issue 18: "GOAWAY and resets retried as today", in one batch with 30 healthy devices.
        try setAPNs()
        var users = ["u-reset", "u-goaway"]
        let reset = try device("reset", user: "u-reset", n: 0), goaway = try device("goaway", user: "u-goaway", n: 1)
        var healthy: [UUID] = []
        for i in 0..<30 {
            users.append("u\(i)")
            healthy.append(try device("ok", user: "u\(i)", n: 10 + i).id)
        }
        let n = try send(users: users)
        try drain(rounds: 1)  // one claim: all 32 devices in one batch; a retry due soon is not taken
        let first = try report(n).deliveries
        XCTAssertEqual(first.count, 32)
        for d in [reset.id, goaway.id] {
            let del = try delivery(n, d)
            XCTAssertEqual(del.status, "retrying", "RST_STREAM / GOAWAY: transport failure, transient")
            XCTAssertEqual(del.attempts, 1)
        }
        // Healthy devices: sent now, or (if caught by the GOAWAY) retrying; never failed or missing.
        XCTAssertTrue(healthy.allSatisfy { id in first.contains { $0.deviceID == id && ["sent", "retrying"].contains($0.status) } })
        for d in [reset, goaway] {
            try world.setDeviceToken(d.id, "ok-\(tag)-\(d.token)")
        }
        for _ in 0..<3 {
            guard try report(n).deliveries.contains(where: { $0.status == "retrying" }) else { break }
            try dueNow()
            try drain()
        }
        let final = try report(n).deliveries
        XCTAssertEqual(final.filter { $0.status == "sent" }.count, 32, "\(final.map(\.status))")
        let logged = pushes(fakes.apns).compactMap { $0["apns_id"] as? String }
        XCTAssertEqual(logged.count, 32, "each delivery accepted exactly once")
        XCTAssertEqual(Set(logged), Set(final.map { $0.apnsID.uuidString.lowercased() }))
        XCTAssertEqual(try delivery(n, reset.id).apnsID, try XCTUnwrap(first.first { $0.deviceID == reset.id }).apnsID)
    }

    func testHangingRequestTimesOutAndIsRetriedWithSameApnsID() throws {
        try makeWorker(apnsTimeoutMillis: 800)
        try setAPNs()
        let d = try device("hang")
        let n = try send()
        try drain(rounds: 1)
        XCTAssertEqual(try delivery(n, d.id).status, "retrying")
        XCTAssertEqual(try delivery(n, d.id).attempts, 1)
        try dueNow()
        try drain(rounds: 1)
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.attempts, 2)
        let hung = pushes(fakes.apns, kind: "hang")
        XCTAssertEqual(hung.count, 2)
        XCTAssertEqual(Set(hung.compactMap { $0["apns_id"] as? String }), [del.apnsID.uuidString.lowercased()])
    }

    func testSandboxAndProductionDevicesInterleavedReachTheirOwnHost() throws {
        try setAPNs()
        var expected: [APNsEnvironment: Set<String>] = [.production: [], .sandbox: []]
        for i in 0..<6 {
            let env: APNsEnvironment = i % 2 == 0 ? .production : .sandbox
            expected[env]!.insert(try device("ok", environment: env, user: "u\(i)", n: i).token)
        }
        let n = try send(users: (0..<6).map { "u\($0)" })
        try drain()
        XCTAssertEqual(try report(n).deliveries.filter { $0.status == "sent" }.count, 6)
        XCTAssertEqual(Set(pushes(fakes.apns).compactMap { $0["token"] as? String }), expected[.production])
        XCTAssertEqual(Set(pushes(fakes.sandbox).compactMap { $0["token"] as? String }), expected[.sandbox])
    }

    func testThousandHealthyDevicesBehindWrongTopicAreKeptWithOneCredentialsEventR_PRV_3() throws {
        try setAPNs(topic: "com.example.wrong")
        let users = (0..<1000).map { "u\($0)" }
        for (i, u) in users.enumerated() { _ = try device("ok", user: u, n: i) }
        let n = try send(users: users)
        try drain()
        let rep = try report(n)
        XCTAssertEqual(rep.deliveries.count, 1000)
        XCTAssertTrue(rep.deliveries.allSatisfy { $0.errorCode == "CREDENTIALS_INVALID" })
        XCTAssertEqual(try world.activeDevices(app: appID), 1000)
        XCTAssertEqual(try events("push_app.credentials_invalid").count, 1)
        XCTAssertEqual(try events("push_device.deactivated").count, 0)
        XCTAssertEqual(rep.ledger.filter { $0.kind == "refund" }.count, 1000)  // R-SEND-9: nets zero each
        XCTAssertEqual(rep.status, "failed")
    }

    private func drainSend(users: [String]) throws {
        let n = try send(users: users)
        try drain()
        XCTAssertTrue(try report(n).deliveries.allSatisfy { $0.status == "sent" }, "setup send did not succeed")
    }
}
