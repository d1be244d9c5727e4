import struct Foundation.Date
import typealias Foundation.TimeInterval

/// The state of a notification's SMS fallback (R-SMS-1, `push_sms_outbox.status`); the raw value
/// is the stored spelling.
public enum SMSStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting for its first attempt, or for a retry.
    case pending
    /// A worker is about to write the request, or has written it and waits for the answer. A lease
    /// that expires in this state means the provider may have the message: it becomes `unknown`,
    /// never sent again.
    case sending
    /// The provider took it (Twilio: 201, `queued` or `accepted`), with its message id. Final.
    case queued
    /// It was not and will not be sent; `error_code` says why (and the provider's own code). Final.
    case failed
    /// The request was written and no answer came (timeout, reset, a 5xx that may follow an
    /// accepted message, a worker that died waiting): it may or may not have been sent, and it is
    /// not sent again (there is no idempotency key; a duplicate SMS is worse than an operator's
    /// look). Final, shown and alerted.
    case unknown

    /// True for `queued`, `failed` and `unknown`.
    public var isFinal: Bool { self == .queued || self == .failed || self == .unknown }
}

/// What one provider answer means for an SMS (R-SMS-1): the request is retried only when the
/// provider cannot have taken the message. Pure: `ProviderAnswer` in, verdict out.
///
/// | answer | verdict |
/// |---|---|
/// | 200 or 201 | `queued`, with the message id (Twilio's `sid`) |
/// | not sent (connection refused, DNS, TLS: nothing reached the server) | retry with backoff (a failed attempt) |
/// | 429 | retry after `Retry-After` (or the backoff), not a failed attempt |
/// | 503 with `Retry-After` | the same |
/// | 401 | `CREDENTIALS_INVALID`: the set is marked invalid (R-APP-3), not retried |
/// | any other 4xx | `SMS_REJECTED` with the provider's code (Twilio 21211: invalid `To`) |
/// | timeout or reset after writing, any other 5xx, a 503 without `Retry-After` | `unknown` |
public enum SMSAnswerTable {
    /// The verdict on one answer.
    public enum Verdict: Sendable, Hashable {
        /// The provider has the message.
        case queued(messageID: String?)
        /// Try again: `deferral` (429, 503 with Retry-After) waits `retryAfter` and does not count
        /// as a failed attempt; otherwise (not sent) it counts.
        case retry(deferral: Bool, retryAfter: TimeInterval?)
        /// The provider refused the credentials (R-APP-3: the set becomes invalid).
        case credentialsInvalid(providerCode: String?)
        /// The provider refused the message for good (the number, the sender, the text).
        case rejected(providerCode: String?)
        /// The provider may have the message; never resent.
        case unknown
    }

    /// The verdict on `answer` (`reason` carries the provider's error code, Twilio's `code`).
    public static func classify(_ answer: ProviderAnswer) -> Verdict {
        switch answer.transport {
        case .notSent:
            return .retry(deferral: false, retryAfter: nil)
        case .timeout, .connectionError:
            return .unknown
        case .response:
            break
        }
        let status = answer.httpStatus ?? 0
        switch status {
        case 200, 201:
            return .queued(messageID: answer.messageId)
        case 429:
            return .retry(deferral: true, retryAfter: answer.retryAfterSeconds)
        case 503 where answer.retryAfterSeconds != nil:
            return .retry(deferral: true, retryAfter: answer.retryAfterSeconds)
        case 401:
            return .credentialsInvalid(providerCode: answer.reason)
        case 400..<500:
            return .rejected(providerCode: answer.reason)
        default:
            // 5xx without a promise to retry, 1xx/3xx, a 2xx other than 200/201: the message may
            // have been created.
            return .unknown
        }
    }
}

/// How an SMS attempt ends or goes on (R-SMS-1, R-SEND-12's backoff), as a pure function.
public struct SMSAttemptDecision: Sendable, Hashable {
    /// The SMS's next state.
    public enum Next: Sendable, Hashable {
        /// Attempt again at this instant (the row goes back to `pending`).
        case retry(at: Date)
        /// Final.
        case final(SMSStatus)
    }

    /// What happens next.
    public let next: Next
    /// The error code when final and not `queued` (`SMS_REJECTED`, `CREDENTIALS_INVALID`,
    /// `RETRIES_EXHAUSTED`, `EXPIRED`); nil for `unknown`, which has no cause to name.
    public let errorCode: ErrorCode?
    /// The provider's own error code (Twilio's `code`, e.g. `21211`), when it gave one.
    public let providerCode: String?
    /// The provider's message id when queued.
    public let messageID: String?
    /// The app's SMS credential set must be marked invalid (a 401).
    public let credentialsInvalid: Bool
    /// The attempt counts as a failed one (backoff's n).
    public let failedAttempt: Bool

    /// Decides after one attempt.
    /// - Parameters:
    ///   - answer: what the provider (or the simulator) answered.
    ///   - failedAttempts: failed attempts before this one.
    ///   - deferrals: deferrals before this one.
    ///   - deadline: after it nothing is attempted (`SMSDeadline`).
    ///   - jitter: a random value in [0, 1).
    public static func decide(_ answer: ProviderAnswer, failedAttempts: Int, deferrals: Int, now: Date,
                              deadline: Date, jitter: Double, policy: RetryPolicy = .default) -> SMSAttemptDecision {
        switch SMSAnswerTable.classify(answer) {
        case .queued(let id):
            return SMSAttemptDecision(next: .final(.queued), errorCode: nil, providerCode: nil, messageID: id,
                                      credentialsInvalid: false, failedAttempt: false)
        case .unknown:
            return SMSAttemptDecision(next: .final(.unknown), errorCode: nil, providerCode: answer.reason, messageID: nil,
                                      credentialsInvalid: false, failedAttempt: false)
        case .rejected(let code):
            return failed(.smsRejected, providerCode: code)
        case .credentialsInvalid(let code):
            return SMSAttemptDecision(next: .final(.failed), errorCode: .credentialsInvalid, providerCode: code,
                                      messageID: nil, credentialsInvalid: true, failedAttempt: false)
        case .retry(let deferral, let retryAfter):
            let failures = failedAttempts + (deferral ? 0 : 1)
            let decision = policy.next(after: deferral ? .deferral(retryAfter: retryAfter) : .transient,
                                       failedAttempts: failures, deferrals: deferrals + (deferral ? 1 : 0),
                                       now: now, expiresAt: deadline, jitter: jitter)
            switch decision {
            case .retry(let at):
                return SMSAttemptDecision(next: .retry(at: at), errorCode: nil, providerCode: answer.reason,
                                          messageID: nil, credentialsInvalid: false, failedAttempt: !deferral)
            case .exhausted, .expired:
                return SMSAttemptDecision(next: .final(.failed), errorCode: decision.errorCode ?? .retriesExhausted,
                                          providerCode: answer.reason, messageID: nil, credentialsInvalid: false,
                                          failedAttempt: !deferral)
            }
        }
    }

    /// A final failure without an attempt's answer (no usable credential set, the deadline passed
    /// before the first attempt).
    public static func failed(_ code: ErrorCode, providerCode: String? = nil) -> SMSAttemptDecision {
        SMSAttemptDecision(next: .final(.failed), errorCode: code, providerCode: providerCode, messageID: nil,
                           credentialsInvalid: false, failedAttempt: false)
    }

    /// A ledger row of kind `sms` is written for an SMS that ended `status` (R-SEND-9, R-SMS-1):
    /// one the provider took (`queued`) or may have taken (`unknown`), so usage can bill it;
    /// never for a `failed` one, which no provider took.
    public static func recordsLedgerRow(_ status: SMSStatus) -> Bool { status == .queued || status == .unknown }
}

/// Until when an SMS fallback may be attempted (R-SMS-1, R-SEND-10): the notification's expiry,
/// but never less than `minimumWindow` after the SMS was queued, so that a notification with a
/// ttl of 0 ("now or never") still gets its fallback sent at once. Past it the SMS fails `EXPIRED`
/// without a call; a retry (429, 503, connection refused) is never scheduled past it.
public enum SMSDeadline {
    /// One hour.
    public static let minimumWindow: TimeInterval = 3_600

    /// max(`notificationExpiresAt`, `queuedAt` + `minimumWindow`).
    public static func deadline(notificationExpiresAt: Date, queuedAt: Date) -> Date {
        max(notificationExpiresAt, queuedAt.addingTimeInterval(minimumWindow))
    }
}
