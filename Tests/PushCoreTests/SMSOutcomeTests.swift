import Foundation
import XCTest
@testable import PushCore

/// R-SMS-1: an SMS is retried only when the provider cannot have taken it; an answer that leaves
/// it open is `unknown` and never resent; Twilio's 201 is `queued` with the message id; a refused
/// number is final with the provider's code; a 401 invalidates the set (R-APP-3).
final class SMSOutcomeTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)
    private var deadline: Date { now.addingTimeInterval(3_600) }

    private func decide(_ a: ProviderAnswer, failed: Int = 0, deferrals: Int = 0, deadline: Date? = nil) -> SMSAttemptDecision {
        SMSAttemptDecision.decide(a, failedAttempts: failed, deferrals: deferrals, now: now,
                                  deadline: deadline ?? self.deadline, jitter: 1)
    }

    private func response(_ status: Int, code: String? = nil, retryAfter: Double? = nil, sid: String? = nil) -> ProviderAnswer {
        ProviderAnswer(transport: .response, httpStatus: status, reason: code, retryAfterSeconds: retryAfter, messageId: sid)
    }

    func testCreatedIsQueuedWithTheMessageSID() {
        let d = decide(response(201, sid: "SM0123456789abcdef0123456789abcdef"))
        XCTAssertEqual(d.next, .final(.queued))
        XCTAssertEqual(d.messageID, "SM0123456789abcdef0123456789abcdef")
        XCTAssertNil(d.errorCode)
        XCTAssertTrue(SMSAttemptDecision.recordsLedgerRow(.queued))
    }

    func testARefusedNumberIsFinalWithTheProvidersCode() {
        for (status, code) in [(400, "21211"), (400, "21612"), (400, "21408"), (400, "21610"), (400, "21614"), (403, "20003"), (404, "20404")] {
            let d = decide(response(status, code: code))
            XCTAssertEqual(d.next, .final(.failed), "\(status) \(code)")
            XCTAssertEqual(d.errorCode, .smsRejected)
            XCTAssertEqual(d.providerCode, code)
            XCTAssertFalse(d.credentialsInvalid)
        }
        XCTAssertFalse(SMSAttemptDecision.recordsLedgerRow(.failed))
    }

    func testUnauthorizedInvalidatesTheCredentialSet() {
        let d = decide(response(401, code: "20003"))
        XCTAssertEqual(d.next, .final(.failed))
        XCTAssertEqual(d.errorCode, .credentialsInvalid)
        XCTAssertTrue(d.credentialsInvalid)
        XCTAssertEqual(d.providerCode, "20003")
    }

    func testRateLimitIsADeferralAfterRetryAfter() {
        let d = decide(response(429, code: "20429", retryAfter: 7))
        XCTAssertEqual(d.next, .retry(at: now.addingTimeInterval(7)))
        XCTAssertFalse(d.failedAttempt)
        // Without Retry-After: the backoff for the deferrals so far (1 s, jitter 1).
        XCTAssertEqual(decide(response(429)).next, .retry(at: now.addingTimeInterval(1)))
        XCTAssertEqual(decide(response(429), deferrals: 2).next, .retry(at: now.addingTimeInterval(4)))
    }

    func testUnavailableIsRetriedOnlyWithRetryAfter() {
        XCTAssertEqual(decide(response(503, retryAfter: 2)).next, .retry(at: now.addingTimeInterval(2)))
        XCTAssertEqual(decide(response(503)).next, .final(.unknown))
        for status in [500, 502, 504, 302, 202, 100] {
            XCTAssertEqual(decide(response(status)).next, .final(.unknown), "\(status)")
        }
    }

    func testNothingWrittenIsRetriedWithBackoffAndCountsAsAFailure() {
        let notSent = ProviderAnswer(transport: .notSent, rawDetail: "connection refused")
        let d = decide(notSent)
        XCTAssertEqual(d.next, .retry(at: now.addingTimeInterval(1)))
        XCTAssertTrue(d.failedAttempt)
        XCTAssertEqual(decide(notSent, failed: 2).next, .retry(at: now.addingTimeInterval(4)))
        let last = decide(notSent, failed: RetryPolicy.default.maxFailedAttempts - 1)
        XCTAssertEqual(last.next, .final(.failed))
        XCTAssertEqual(last.errorCode, .retriesExhausted)
    }

    func testAnAnswerThatMayFollowAWrittenRequestIsUnknownAndNeverRetried() {
        for transport in [ProviderAnswer.Transport.timeout, .connectionError] {
            let d = decide(ProviderAnswer(transport: transport, rawDetail: "no answer"))
            XCTAssertEqual(d.next, .final(.unknown), transport.rawValue)
            XCTAssertNil(d.errorCode)
            XCTAssertFalse(d.failedAttempt)
        }
        XCTAssertTrue(SMSAttemptDecision.recordsLedgerRow(.unknown))
        XCTAssertFalse(SMSAttemptDecision.recordsLedgerRow(.pending))
        XCTAssertFalse(SMSAttemptDecision.recordsLedgerRow(.sending))
    }

    func testNoRetryIsScheduledPastTheDeadline() {
        let d = decide(response(429, retryAfter: 30), deadline: now.addingTimeInterval(10))
        XCTAssertEqual(d.next, .final(.failed))
        XCTAssertEqual(d.errorCode, .expired)
        let e = decide(ProviderAnswer(transport: .notSent), deadline: now.addingTimeInterval(0.5))
        XCTAssertEqual(e.errorCode, .expired)
    }

    func testTheDeadlineIsTheExpiryButAtLeastAnHourAfterQueueing() {
        let queued = now
        XCTAssertEqual(SMSDeadline.deadline(notificationExpiresAt: now, queuedAt: queued), now.addingTimeInterval(3_600))
        let later = now.addingTimeInterval(86_400)
        XCTAssertEqual(SMSDeadline.deadline(notificationExpiresAt: later, queuedAt: queued), later)
    }

    func testFinalStates() {
        XCTAssertEqual(SMSStatus.allCases.filter(\.isFinal), [.queued, .failed, .unknown])
    }
}
