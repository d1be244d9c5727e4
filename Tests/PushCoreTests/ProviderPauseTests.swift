import Foundation
import XCTest
import PushCore

/// R-KIND-4's pure rules with a fake clock: when a scope is down (`HostHealth`), what a delivery
/// to a paused scope does, when probes are due and how their interval grows, when sending resumes
/// (`PauseRules`).
final class ProviderPauseTests: XCTestCase {
    let t = OutageThresholds.default
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func at(_ s: Double) -> Date { t0.addingTimeInterval(s) }

    // MARK: - Signals

    func testSignalsOfAnswersR_KIND_4() {
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .notSent), device: "d"), .connectionFailure)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .connectionError), device: "d"), .connectionFailure)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .timeout), device: "d"), .connectionFailure)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .notSent, reason: "ENDPOINT_FORBIDDEN"), device: "d"), .neutral)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .notSent, reason: "oauth:invalid_grant"), device: "d"), .neutral)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .response, httpStatus: 200), device: "d"), .answered)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .response, httpStatus: 410, reason: "Unregistered"), device: "d"), .answered)
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .response, httpStatus: 429, reason: "TooManyRequests"), device: "d"), .answered)
        for status in [500, 502, 503, 599] {
            XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .response, httpStatus: status), device: "d"), .serverError)
        }
        XCTAssertEqual(HostSignal.of(ProviderAnswer(transport: .response, httpStatus: 429, reason: "QUOTA_EXCEEDED", retryAfterSeconds: 30),
                                     device: "d"), .quotaExceeded(device: "d", retryAfter: 30))
    }

    // MARK: - Detection

    func testThreeConsecutiveConnectionFailuresPauseAndAnAnswerResetsTheRunR_KIND_4() {
        var h = HostHealth()
        XCTAssertEqual(h.observe(.connectionFailure, now: at(0), thresholds: t), .healthy)
        XCTAssertEqual(h.observe(.connectionFailure, now: at(0.1), thresholds: t), .healthy)
        XCTAssertEqual(h.observe(.answered, now: at(0.2), thresholds: t), .healthy)
        XCTAssertEqual(h.observe(.connectionFailure, now: at(0.3), thresholds: t), .healthy)
        XCTAssertEqual(h.observe(.connectionFailure, now: at(0.4), thresholds: t), .healthy)
        XCTAssertEqual(h.observe(.connectionFailure, now: at(0.5), thresholds: t), .pause(.connectionFailures, retryAfter: nil))
    }

    func testFailureRatioNeedsTwentyRequestsInTheWindowAndNinetyPercentR_KIND_4() {
        // 19 server errors in 1 s: below the minimum count, no pause.
        var h = HostHealth()
        for i in 0..<19 { XCTAssertEqual(h.observe(.serverError, now: at(Double(i) * 0.05), thresholds: t), .healthy) }
        XCTAssertEqual(h.observe(.serverError, now: at(0.96), thresholds: t), .pause(.failureRatio, retryAfter: nil))
        // 18 failures of 20 (90 %) pause; 17 of 20 (85 %) do not.
        var ok = HostHealth()
        for _ in 0..<3 { _ = ok.observe(.answered, now: at(0), thresholds: t) }
        for i in 0..<17 { XCTAssertEqual(ok.observe(.serverError, now: at(Double(i) * 0.01), thresholds: t), .healthy) }
        XCTAssertEqual(ok.window(now: at(0.2), thresholds: t).total, 20)
        var tip = HostHealth()
        for _ in 0..<2 { _ = tip.observe(.answered, now: at(0), thresholds: t) }
        for i in 0..<17 { _ = tip.observe(.serverError, now: at(Double(i) * 0.01), thresholds: t) }
        XCTAssertEqual(tip.observe(.serverError, now: at(0.2), thresholds: t), .pause(.failureRatio, retryAfter: nil))
    }

    func testOldFailuresLeaveTheWindowR_KIND_4() {
        var h = HostHealth()
        for i in 0..<15 { _ = h.observe(.serverError, now: at(Double(i) * 0.01), thresholds: t) }
        // 11 s later the first 15 are out of the 10 s window: 6 more do not make 20.
        for i in 0..<6 { XCTAssertEqual(h.observe(.serverError, now: at(11 + Double(i) * 0.01), thresholds: t), .healthy) }
        XCTAssertEqual(h.window(now: at(11.1), thresholds: t).total, 6)
    }

    func testOneTokensRepeated5xxAmongHealthyTrafficNeverPausesR_KIND_4() {
        // One bad token retried on R-SEND-12's backoff while 50 other deliveries a second succeed.
        var h = HostHealth()
        let policy = RetryPolicy.default
        var next = 0.0
        var failures = 0
        var clock = 0.0
        while clock < 300 {
            if clock >= next && failures < policy.maxFailedAttempts {
                failures += 1
                XCTAssertEqual(h.observe(.serverError, now: at(clock), thresholds: t), .healthy, "at \(clock) s")
                next = clock + policy.nominalDelay(afterFailures: failures)
            }
            XCTAssertEqual(h.observe(.answered, now: at(clock), thresholds: t), .healthy)
            clock += 0.02
        }
        // Even alone on its host, eight 5xx within 127 s stay below 20 requests per 10 s.
        var alone = HostHealth()
        var when = 0.0
        for n in 1...policy.maxFailedAttempts {
            XCTAssertEqual(alone.observe(.serverError, now: at(when), thresholds: t), .healthy)
            when += policy.nominalDelay(afterFailures: n)
        }
    }

    func testQuotaNeedsThreeDistinctDevicesWithinTheWindowR_KIND_4() {
        var h = HostHealth()
        // One device's repeated 429: never a project pause (today's per-delivery deferral).
        for i in 0..<10 {
            XCTAssertEqual(h.observe(.quotaExceeded(device: "a", retryAfter: 30), now: at(Double(i)), thresholds: t), .healthy)
        }
        XCTAssertEqual(h.observe(.quotaExceeded(device: "b", retryAfter: 30), now: at(10), thresholds: t), .healthy)
        // "a" was last seen at 9 s: "c" at 12 s makes three within 10 s.
        XCTAssertEqual(h.observe(.quotaExceeded(device: "c", retryAfter: 20), now: at(12), thresholds: t),
                       .pause(.quotaExceeded, retryAfter: 20))
        var late = HostHealth()
        _ = late.observe(.quotaExceeded(device: "a", retryAfter: nil), now: at(0), thresholds: t)
        _ = late.observe(.quotaExceeded(device: "b", retryAfter: nil), now: at(5), thresholds: t)
        XCTAssertEqual(late.observe(.quotaExceeded(device: "c", retryAfter: nil), now: at(10.5), thresholds: t), .healthy)
        XCTAssertEqual(late.observe(.quotaExceeded(device: "d", retryAfter: nil), now: at(11), thresholds: t),
                       .pause(.quotaExceeded, retryAfter: nil))
    }

    func testNeutralSignalsChangeNothingR_KIND_4() {
        var h = HostHealth()
        _ = h.observe(.connectionFailure, now: at(0), thresholds: t)
        _ = h.observe(.connectionFailure, now: at(0), thresholds: t)
        for _ in 0..<100 { XCTAssertEqual(h.observe(.neutral, now: at(0), thresholds: t), .healthy) }
        XCTAssertEqual(h.consecutiveFailures, 2)
        XCTAssertEqual(h.observe(.connectionFailure, now: at(0), thresholds: t), .pause(.connectionFailures, retryAfter: nil))
    }

    // MARK: - Pauses

    func testProbeScheduleDoublesFromOneSecondToSixtyR_KIND_4() {
        var p = PauseRules.start(scope: "host https://a", cause: .connectionFailures, detail: "notSent", retryAfter: nil,
                                 now: at(0), thresholds: t)
        XCTAssertNil(p.resumeAt)
        XCTAssertEqual(p.nextProbeAt, at(1))
        var probeTimes: [Double] = []
        var clock = 0.0
        while clock < 600 {
            switch PauseRules.admission(p, now: at(clock), thresholds: t) {
            case .probeDue:
                probeTimes.append(clock)
                let taken = PauseRules.takeProbe(p, owner: "w1", now: at(clock), thresholds: t)
                XCTAssertEqual(taken.version, p.version + 1)
                // While the probe is in flight nobody else may probe, and deliveries are held.
                guard case .hold(let until) = PauseRules.admission(taken, now: at(clock), thresholds: t) else {
                    return XCTFail("probe in flight must hold")
                }
                XCTAssertGreaterThan(until, at(clock))
                guard case .backOff(let next) = PauseRules.afterProbe(taken, signal: .connectionFailure, now: at(clock),
                                                                      thresholds: t) else { return XCTFail("must back off") }
                XCTAssertNil(next.probeOwner)
                p = next
            case .hold(let until):
                XCTAssertEqual(until, max(p.nextProbeAt, at(clock)).addingTimeInterval(t.holdSlack))
            case .send, .expired:
                return XCTFail("an outage pause never sends nor expires by itself")
            }
            clock += 0.25
        }
        let gaps = zip(probeTimes.dropFirst(), probeTimes).map { $0 - $1 }
        XCTAssertEqual(Array(gaps.prefix(6)), [2, 4, 8, 16, 32, 60])
        XCTAssertTrue(gaps.dropFirst(5).allSatisfy { $0 == 60 }, "bounded at 60 s: \(gaps)")
        XCTAssertEqual(probeTimes.first, 1)
    }

    func testProbeSuccessOrAnyHostAnswerResumesR_KIND_4() {
        let p = PauseRules.takeProbe(PauseRules.start(scope: "s", cause: .failureRatio, detail: "", retryAfter: nil, now: at(0),
                                                      thresholds: t), owner: "w", now: at(1), thresholds: t)
        XCTAssertEqual(PauseRules.afterProbe(p, signal: .answered, now: at(1.1), thresholds: t), .resume)
        XCTAssertEqual(PauseRules.afterProbe(p, signal: .quotaExceeded(device: "d", retryAfter: 1), now: at(1.1), thresholds: t),
                       .resume)
        guard case .backOff(let s) = PauseRules.afterProbe(p, signal: .serverError, now: at(1.1), thresholds: t) else {
            return XCTFail("a 5xx backs off")
        }
        XCTAssertEqual(s.probeInterval, 2)
        guard case .backOff(let n) = PauseRules.afterProbe(p, signal: .neutral, now: at(1.1), thresholds: t) else {
            return XCTFail("neutral releases")
        }
        XCTAssertEqual(n.probeInterval, 1)
        XCTAssertEqual(n.nextProbeAt, at(1.1))
    }

    func testAProbeLeaseThatRunsOutLetsAnotherWorkerProbeR_KIND_4() {
        let p = PauseRules.takeProbe(PauseRules.start(scope: "s", cause: .connectionFailures, detail: "", retryAfter: nil,
                                                      now: at(0), thresholds: t), owner: "dead", now: at(1), thresholds: t)
        XCTAssertEqual(p.probeLeaseUntil, at(31))
        if case .probeDue = PauseRules.admission(p, now: at(30.9), thresholds: t) { XCTFail("lease still holds") }
        XCTAssertEqual(PauseRules.admission(p, now: at(31), thresholds: t), .probeDue)
    }

    func testQuotaPauseLastsTheRetryAfterThenExpiresR_KIND_4() {
        let p = PauseRules.start(scope: "fcm-project x", cause: .quotaExceeded, detail: "429", retryAfter: 30, now: at(0), thresholds: t)
        XCTAssertEqual(p.resumeAt, at(30))
        XCTAssertEqual(PauseRules.admission(p, now: at(29.9), thresholds: t), .hold(until: at(30)))
        XCTAssertEqual(PauseRules.admission(p, now: at(30), thresholds: t), .expired)
        let noHeader = PauseRules.start(scope: "fcm-project x", cause: .quotaExceeded, detail: "", retryAfter: nil, now: at(0),
                                        thresholds: t)
        XCTAssertEqual(noHeader.resumeAt, at(60))
        let junk = PauseRules.start(scope: "fcm-project x", cause: .quotaExceeded, detail: "", retryAfter: .nan, now: at(0),
                                    thresholds: t)
        XCTAssertEqual(junk.resumeAt, at(60))
    }

    func testHeldDeliveryNeverScheduledPastItsExpiryR_KIND_4_R_SEND_10() {
        XCTAssertEqual(PauseRules.scheduled(at(100), expiresAt: at(50), now: at(10)), at(50))
        XCTAssertEqual(PauseRules.scheduled(at(20), expiresAt: at(50), now: at(10)), at(20))
        XCTAssertEqual(PauseRules.scheduled(at(5), expiresAt: at(50), now: at(10)), at(10))
    }

    func testNotPausedSendsAndScaledThresholdsCompressEveryDurationR_KIND_4() {
        XCTAssertEqual(PauseRules.admission(nil, now: at(0), thresholds: t), .send)
        let s = t.scaled(by: 0.02)
        XCTAssertEqual(s.initialProbeInterval, 0.02, accuracy: 1e-12)
        XCTAssertEqual(s.maxProbeInterval, 1.2, accuracy: 1e-12)
        XCTAssertEqual(s.windowSeconds, 0.2, accuracy: 1e-12)
        XCTAssertEqual(s.consecutiveFailures, 3)
        XCTAssertEqual(s.windowMinimumRequests, 20)
    }

    func testScopeNamesR_KIND_4() {
        XCTAssertEqual(PauseScope.host(ofURL: "https://api.push.apple.com"), "host https://api.push.apple.com")
        XCTAssertEqual(PauseScope.host(ofURL: "https://FCM.googleapis.com/v1/projects/x"), "host https://fcm.googleapis.com")
        XCTAssertEqual(PauseScope.host(ofURL: "https://u:p@push.example:8443/a?b#c"), "host https://push.example:8443")
        XCTAssertEqual(PauseScope.fcmProject("p-1"), "fcm-project p-1")
    }
}
