import Foundation
import XCTest
import PushCore

/// R-HOOK-2: exponential backoff with jitter over about three days, then a final failure; 410
/// disables the endpoint; 5 days of failing disables it.
final class WebhookRetryPolicyTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let policy = WebhookRetryPolicy.default

    /// The schedule in `WebhookRetryPolicy`'s table: waits double from 1 min to the 12 h cap.
    func testNominalWaitsDoubleFromOneMinuteToTwelveHours() {
        let expected: [TimeInterval] = [60, 120, 240, 480, 960, 1920, 3840, 7680, 15_360, 30_720, 43_200, 43_200]
        for (i, wait) in expected.enumerated() {
            let next = policy.nextAttempt(failedAttempts: i + 1, windowStartedAt: t0, now: t0, jitter: 0.999_999)
            XCTAssertEqual(next.map { $0.timeIntervalSince(t0) } ?? -1, wait, accuracy: 0.1, "after failure \(i + 1)")
            let earliest = policy.nextAttempt(failedAttempts: i + 1, windowStartedAt: t0, now: t0, jitter: 0)
            XCTAssertEqual(earliest.map { $0.timeIntervalSince(t0) } ?? -1, wait / 2, accuracy: 0.1, "jitter: half at least")
        }
    }

    /// Attempts at the nominal schedule end just before 72 h: about three days, 15 attempts.
    func testAttemptsSpanAboutThreeDaysThenStop() {
        var now = t0, attempts = 1
        while let next = policy.nextAttempt(failedAttempts: attempts, windowStartedAt: t0, now: now, jitter: 0.999_999) {
            now = next
            attempts += 1
        }
        XCTAssertEqual(attempts, 15)
        XCTAssertEqual(now.timeIntervalSince(t0) / 3600, 65.05, accuracy: 0.1, "the last attempt starts 65 h in")
        XCTAssertNil(policy.nextAttempt(failedAttempts: 15, windowStartedAt: t0, now: now, jitter: 0.999_999),
                     "the next one would start after 72 h")
        var shortest = t0, count = 1
        while let next = policy.nextAttempt(failedAttempts: count, windowStartedAt: t0, now: shortest, jitter: 0) {
            shortest = next
            count += 1
        }
        XCTAssertLessThanOrEqual(shortest.timeIntervalSince(t0), 72 * 3600)
        XCTAssertTrue((15...25).contains(count), "with the shortest jitter \(count) attempts")
    }

    func testDecisionsByAnswer() {
        func decide(_ a: WebhookAnswer, failingSince: Date? = nil, failures: Int = 1) -> WebhookAttemptDecision {
            WebhookAttemptDecision.decide(a, failedAttempts: failures, windowStartedAt: t0, endpointFailingSince: failingSince,
                                          now: t0.addingTimeInterval(10), jitter: 0.5)
        }
        for s in [200, 201, 204, 299] { XCTAssertEqual(decide(.status(s)).next, .delivered, "\(s)") }
        XCTAssertNil(decide(.status(204)).errorCode)
        let gone = decide(.status(410))
        XCTAssertEqual(gone.next, .failed("ENDPOINT_GONE"))
        XCTAssertEqual(gone.disableEndpoint, .endpointGone)
        for s in [301, 302, 400, 404, 429, 500, 503] {
            let d = decide(.status(s))
            XCTAssertEqual(d.next, .retry(at: t0.addingTimeInterval(10 + 45)), "\(s): retried, redirects never followed")
            XCTAssertEqual(d.errorCode, "HTTP_\(s)")
            XCTAssertNil(d.disableEndpoint)
            XCTAssertTrue(d.countsAsEndpointFailure)
        }
        let timeout = decide(.noAnswer(WebhookFailure(code: WebhookFailure.timeout, detail: "10 s")))
        XCTAssertEqual(timeout.errorCode, "TIMEOUT")
        if case .retry = timeout.next {} else { XCTFail("a timeout is retried") }
    }

    func testFiveDaysOfFailuresDisableTheEndpoint() {
        let now = t0.addingTimeInterval(10)
        func decide(_ a: WebhookAnswer, since: TimeInterval) -> WebhookAttemptDecision {
            WebhookAttemptDecision.decide(a, failedAttempts: 1, windowStartedAt: t0,
                                          endpointFailingSince: now.addingTimeInterval(-since), now: now, jitter: 0.5)
        }
        let failing = decide(.status(500), since: 5 * 86_400)
        XCTAssertEqual(failing.next, .failed("ENDPOINT_FAILING"))
        XCTAssertEqual(failing.disableEndpoint, .failing)
        XCTAssertNil(decide(.status(500), since: 5 * 86_400 - 60).disableEndpoint, "not yet 5 days")
        XCTAssertEqual(decide(.status(200), since: 6 * 86_400).next, .delivered, "a success is a success")
        let ours = decide(.noAnswer(WebhookFailure(code: WebhookFailure.secretUnavailable, detail: "")), since: 9 * 86_400)
        XCTAssertNil(ours.disableEndpoint, "our own failures never disable an endpoint")
        XCTAssertFalse(ours.countsAsEndpointFailure)
    }

    func testPastTheWindowTheDeliveryFailsForGood() {
        let d = WebhookAttemptDecision.decide(.status(503), failedAttempts: 20, windowStartedAt: t0, endpointFailingSince: t0,
                                              now: t0.addingTimeInterval(71.9 * 3600), jitter: 0.5)
        XCTAssertEqual(d.next, .failed("RETRIES_EXHAUSTED"))
        XCTAssertNil(d.disableEndpoint)
    }

    func testEndpointURLRules() throws {
        XCTAssertNoThrow(try WebhookEndpointRules.validateURL("https://hooks.example.com/x?y=1", mode: .live, allowLoopback: false))
        let refused: [(String, Mode, Bool, String)] = [
            ("http://hooks.example.com/x", .test, false, "scheme"),
            ("http://hooks.example.com/x", .test, true, "loopback host"),
            ("http://127.0.0.1:8080/x", .live, true, "live is https only"),
            ("https://127.0.0.1/x", .test, false, "loopback"),
            ("https://localhost/x", .live, false, "localhost"),
            ("https://10.1.2.3/x", .test, true, "private"),
            ("https://169.254.169.254/latest", .live, false, "link-local (metadata)"),
            ("https://[fd00::1]/x", .live, false, "unique-local"),
            ("https://user:pw@hooks.example.com/x", .live, false, "user info"),
            ("https://intranet/x", .live, false, "single label"),
            ("https://hooks.internal/x", .live, false, "internal suffix"),
            ("https://hooks.example.com/a b", .live, false, "space"),
            ("ftp://hooks.example.com/x", .live, false, "scheme"),
        ]
        for (url, mode, loopback, why) in refused {
            XCTAssertThrowsError(try WebhookEndpointRules.validateURL(url, mode: mode, allowLoopback: loopback), why) {
                XCTAssertEqual(($0 as? PushError)?.code, .validationError, why)
                XCTAssertTrue(($0 as? PushError)?.message.hasPrefix("url: ") ?? false, why)
            }
        }
        XCTAssertNoThrow(try WebhookEndpointRules.validateURL("http://127.0.0.1:8080/x", mode: .test, allowLoopback: true))
        XCTAssertNoThrow(try WebhookEndpointRules.validateURL("https://127.0.0.1:8443/x", mode: .live, allowLoopback: true))
    }

    func testEventTypeRules() throws {
        XCTAssertEqual(try WebhookEndpointRules.eventTypes(nil),
                       [.pushDeviceDeactivated, .pushAppCredentialsInvalid, .pushAppEncryptionDisabled],
                       "by default every type but the opt-in push_notification.finished")
        XCTAssertEqual(try WebhookEndpointRules.eventTypes(["push_notification.finished", "push_device.deactivated",
                                                            "push_notification.finished"]),
                       [.pushDeviceDeactivated, .pushNotificationFinished])
        XCTAssertThrowsError(try WebhookEndpointRules.eventTypes(["push_device.created"])) {
            XCTAssertEqual(($0 as? PushError)?.code, .validationError)
        }
    }
}
