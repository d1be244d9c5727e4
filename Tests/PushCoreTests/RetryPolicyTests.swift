import Foundation
import XCTest
@testable import PushCore

/// R-SEND-12 retries and R-SEND-10 expiry, with time and jitter as parameters.
final class RetryPolicyTests: XCTestCase {
    private let policy = RetryPolicy.default
    private let now = Date(timeIntervalSince1970: 1_800_000_000)
    private var farExpiry: Date { now.addingTimeInterval(86_400) }

    func testBackoffDoublesFromOneSecondWithJitterBetweenHalfAndFull() {
        for n in 1...7 {
            let nominal = Double(1 << (n - 1))
            XCTAssertEqual(policy.nominalDelay(afterFailures: n), nominal)
            XCTAssertEqual(policy.next(after: .transient, failedAttempts: n, now: now, expiresAt: farExpiry, jitter: 0),
                           .retry(at: now.addingTimeInterval(nominal / 2)))
            XCTAssertEqual(policy.next(after: .transient, failedAttempts: n, now: now, expiresAt: farExpiry, jitter: 1),
                           .retry(at: now.addingTimeInterval(nominal)))
            guard case .retry(let at) = policy.next(after: .transient, failedAttempts: n, now: now, expiresAt: farExpiry, jitter: 0.5) else {
                return XCTFail("no retry after \(n) failures")
            }
            XCTAssertEqual(at.timeIntervalSince(now), nominal * 0.75, accuracy: 1e-9)
        }
    }

    func testEighthFailedAttemptIsExhausted() {
        XCTAssertNotEqual(policy.next(after: .transient, failedAttempts: 7, now: now, expiresAt: farExpiry, jitter: 0.3), .exhausted)
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 8, now: now, expiresAt: farExpiry, jitter: 0.3), .exhausted)
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 50, now: now, expiresAt: farExpiry, jitter: 0.3), .exhausted)
        XCTAssertEqual(RetryPolicy.Decision.exhausted.errorCode, .retriesExhausted)
    }

    func testDelayIsCappedAndNeverOverflows() {
        let long = RetryPolicy(baseDelay: 1, maxDelay: 300, maxFailedAttempts: 1000, minimumRetryAfter: 1)
        XCTAssertEqual(long.nominalDelay(afterFailures: 9), 256)
        XCTAssertEqual(long.nominalDelay(afterFailures: 10), 300)
        XCTAssertEqual(long.nominalDelay(afterFailures: 999), 300)
        XCTAssertEqual(long.nominalDelay(afterFailures: Int.max), 300)
    }

    func testOutOfRangeJitterIsClamped() {
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 3, now: now, expiresAt: farExpiry, jitter: -5),
                       .retry(at: now.addingTimeInterval(2)))
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 3, now: now, expiresAt: farExpiry, jitter: 9),
                       .retry(at: now.addingTimeInterval(4)))
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 3, now: now, expiresAt: farExpiry, jitter: .nan),
                       .retry(at: now.addingTimeInterval(2)))
    }

    /// A deferral waits the time given and is not a failed attempt (even with many failures before).
    func testDeferralWaitsRetryAfterWithoutCountingAsFailure() {
        XCTAssertEqual(policy.next(after: .deferral(retryAfter: 30), failedAttempts: 7, now: now, expiresAt: farExpiry, jitter: 0.9),
                       .retry(at: now.addingTimeInterval(30)))
        XCTAssertEqual(policy.next(after: .deferral(retryAfter: 0), failedAttempts: 0, now: now, expiresAt: farExpiry, jitter: 0),
                       .retry(at: now.addingTimeInterval(1)), "a zero retry-after is raised to the minimum")
    }

    func testDeferralWithoutRetryAfterUsesBackoffOfDeferralCount() {
        XCTAssertEqual(policy.next(after: .deferral(retryAfter: nil), failedAttempts: 0, deferrals: 1, now: now,
                                   expiresAt: farExpiry, jitter: 1), .retry(at: now.addingTimeInterval(1)))
        XCTAssertEqual(policy.next(after: .deferral(retryAfter: nil), failedAttempts: 0, deferrals: 4, now: now,
                                   expiresAt: farExpiry, jitter: 1), .retry(at: now.addingTimeInterval(8)))
    }

    /// Nothing is scheduled at or past expiry.
    func testNothingScheduledPastExpiry() {
        let expiry = now.addingTimeInterval(10)
        XCTAssertEqual(policy.next(after: .deferral(retryAfter: 10), failedAttempts: 0, now: now, expiresAt: expiry, jitter: 0), .expired)
        XCTAssertEqual(policy.next(after: .deferral(retryAfter: 9.5), failedAttempts: 0, now: now, expiresAt: expiry, jitter: 0),
                       .retry(at: now.addingTimeInterval(9.5)))
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 6, now: now, expiresAt: expiry, jitter: 1), .expired)
        XCTAssertEqual(policy.next(after: .transient, failedAttempts: 1, now: expiry, expiresAt: expiry, jitter: 0), .expired)
        XCTAssertEqual(RetryPolicy.Decision.expired.errorCode, .expired)
    }

    /// Bounded: the whole schedule of a delivery stays under the sum of the nominal delays.
    func testWholeScheduleIsBounded() {
        var t = now
        var failures = 0
        while case .retry(let at) = policy.next(after: .transient, failedAttempts: failures + 1, now: t, expiresAt: farExpiry, jitter: 0.999) {
            XCTAssertGreaterThan(at, t)
            t = at
            failures += 1
        }
        XCTAssertEqual(failures, 7, "7 retries, the 8th failure is final")
        XCTAssertLessThanOrEqual(t.timeIntervalSince(now), 127)
    }
}

final class ExpiryTests: XCTestCase {
    private let accepted = Date(timeIntervalSince1970: 1_800_000_000)

    /// The stored ttl is clamped to 0...2,419,200 s whatever the row holds (push_enqueue refuses
    /// anything else; the formula of `expires_at` is push_expires_at's, tested in `LedgerTests`).
    func testStoredTTLIsClampedToFourWeeks() {
        XCTAssertEqual(Expiry(expiresAt: accepted, ttlSeconds: 9_999_999).ttlSeconds, 2_419_200)
        XCTAssertEqual(Expiry(expiresAt: accepted, ttlSeconds: 2_419_199).ttlSeconds, 2_419_199)
        XCTAssertEqual(Expiry(expiresAt: accepted, ttlSeconds: -3).ttlSeconds, 0)
        XCTAssertEqual(Expiry(expiresAt: accepted.addingTimeInterval(60), ttlSeconds: 60).expiresAt,
                       accepted.addingTimeInterval(60), "the stored instant is kept as it is")
    }

    func testRequestCarriesWhatIsLeft() throws {
        let expiry = Expiry(expiresAt: accepted.addingTimeInterval(3600), ttlSeconds: 3600)
        let left = try XCTUnwrap(expiry.request(now: accepted.addingTimeInterval(600.4), firstAttempt: false))
        XCTAssertEqual(left.secondsLeft, 2999)
        XCTAssertEqual(left.apnsExpiration, 1_800_003_600)
        XCTAssertNil(expiry.request(now: accepted.addingTimeInterval(3600), firstAttempt: true), "expired: fail EXPIRED")
        XCTAssertNil(expiry.request(now: accepted.addingTimeInterval(3599.5), firstAttempt: false))
    }

    /// ttl 0 = now or never: one attempt with apns-expiration 0 / TTL 0, no retry.
    func testZeroTTLIsNowOrNever() throws {
        let expiry = Expiry(expiresAt: accepted, ttlSeconds: 0)
        XCTAssertTrue(expiry.isNowOrNever)
        let first = try XCTUnwrap(expiry.request(now: accepted.addingTimeInterval(2), firstAttempt: true))
        XCTAssertEqual(first, Expiry.RequestTTL(apnsExpiration: 0, secondsLeft: 0))
        XCTAssertNil(expiry.request(now: accepted.addingTimeInterval(3), firstAttempt: false))
        XCTAssertEqual(RetryPolicy.default.next(after: .transient, failedAttempts: 1, now: accepted.addingTimeInterval(2),
                                                expiresAt: expiry.expiresAt, jitter: 0), .expired)
    }
}
