import Foundation
import PushTestSupport
import XCTest
import PushCore
@testable import PushStore
@testable import PushWorker

/// The worker with `LiveRouter` against the fake FCM (OAuth2 + `messages:send`), one test per answer
/// row of `ProviderAnswerTable` for FCM (Firebase's "ErrorCode").
final class LiveFCMTests: LiveTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try setFCM()
    }

    func testFCMAcceptedRecordsMessageNameAndVerifiesCredentialsR_APP_3() throws {
        let d = try device("ok", platform: .android)
        let n = try send()
        try drain()
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.status, "sent")
        XCTAssertEqual(del.provider, "fcm")
        let logged = try XCTUnwrap(pushes(fakes.fcm).first)
        XCTAssertEqual(del.providerMessageID, logged["name"] as? String)
        XCTAssertTrue(del.providerMessageID?.hasPrefix("projects/\(LiveFakes.fcmProject)/messages/") == true)
        XCTAssertEqual(try credential(.fcm)?.state, .verified)
        XCTAssertNotNil(try credential(.fcm)?.firstAcceptedAt)
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testFCMUnregisteredDeactivatesWithRequestTimeAsVerdictR_PRV_1_R_DEV_8() throws {
        let d = try device("unregistered", platform: .android)
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "UNREGISTERED")
        let state = try deviceState(d.id)
        XCTAssertFalse(state.active)
        XCTAssertEqual(state.reason, "UNREGISTERED")
        XCTAssertEqual(try events("push_device.deactivated").count, 1)
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testFCMInvalidArgumentNamingTheTokenIsInvalidTokenR_PRV_1() throws {
        let d = try device("badtoken", platform: .android)
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "INVALID_TOKEN")
        XCTAssertEqual(try deviceState(d.id).reason, "INVALID_TOKEN")
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testFCMSenderIDMismatchBeforeVerificationInvalidatesCredentialsKeepsDeviceR_PRV_2() throws {
        let d = try device("mismatch", platform: .android)
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "APP_MISMATCH")
        XCTAssertTrue(try deviceState(d.id).active)
        XCTAssertEqual(try credential(.fcm)?.state, .invalid)
        let ev = try events("push_app.credentials_invalid")
        XCTAssertEqual(ev.count, 1)
        XCTAssertEqual(ev.first?["kind"] as? String, "fcm")
        XCTAssertEqual(try ledger(n, d.id), ["charge", "refund"])
    }

    func testFCMSenderIDMismatchAfterVerificationDeactivatesDeviceR_PRV_2() throws {
        _ = try device("ok", platform: .android, user: "u1")
        let first = try send(users: ["u1"])
        try drain()
        XCTAssertEqual(try report(first).status, "sent")
        let d = try device("mismatch", platform: .android, user: "u2", n: 1)
        let n = try send(users: ["u2"])
        try drain()
        XCTAssertEqual(try delivery(n, d.id).errorCode, "APP_MISMATCH")
        XCTAssertEqual(try deviceState(d.id).reason, "APP_MISMATCH")
        XCTAssertEqual(try credential(.fcm)?.state, .verified)
        XCTAssertEqual(try ledger(n, d.id), ["charge"])
    }

    func testFCMQuotaExceededWithRetryAfterIsADeferralR_SEND_12() throws {
        let d = try device("quota", platform: .android)
        let n = try send()
        try drain()
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.status, "retrying")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(del.nextAttemptAt).timeIntervalSinceNow, 25)  // retry-after: 30
        XCTAssertTrue(try deviceState(d.id).active)
    }

    func testFCM401RefreshesTheAccessTokenAndResendsOnce() throws {
        let d = try device("revoke", platform: .android)
        let n = try send()
        try drain()
        let del = try delivery(n, d.id)
        XCTAssertEqual(del.status, "sent")
        XCTAssertEqual(del.attempts, 1)
        XCTAssertEqual(fakes.fcm.log("oauth").count >= 2, true, "a second access token was fetched after the 401")
        XCTAssertEqual(pushes(fakes.fcm).count, 1)
    }

    func testAndroidAndIOSInOneBatchEachReachTheirProvider() throws {
        try setAPNs()
        let a = try device("ok", platform: .android, user: "u1", n: 1)
        let i = try device("ok", platform: .ios, user: "u1", n: 2)
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, a.id).provider, "fcm")
        XCTAssertEqual(try delivery(n, i.id).provider, "apns")
        XCTAssertEqual(pushes(fakes.fcm).compactMap { $0["token"] as? String }, [a.token])
        XCTAssertEqual(pushes(fakes.apns).compactMap { $0["token"] as? String }, [i.token])
        XCTAssertEqual(router.clientsBuilt, 2)
        let again = try send()
        try drain()
        XCTAssertEqual(try report(again).status, "sent")
        XCTAssertEqual(router.clientsBuilt, 2, "clients are reused across batches while the sets are unchanged")
    }
}
