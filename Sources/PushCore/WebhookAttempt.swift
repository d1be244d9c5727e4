import struct Foundation.Date
import typealias Foundation.TimeInterval

/// How one webhook attempt ended, as the dispatcher saw it.
public enum WebhookAnswer: Sendable, Equatable {
    /// The endpoint answered with this HTTP status.
    case status(Int)
    /// No answer: `failure` says why (timeout, broken connection, refused by the address guard...).
    case noAnswer(WebhookFailure)
}

/// Why an attempt got no HTTP answer: a stable `code` and a short human `detail`.
public struct WebhookFailure: Error, Sendable, Equatable {
    /// No full answer within the deadline (10 s) after the request may have been sent.
    public static let timeout = "TIMEOUT"
    /// The connection broke or was reset after the request may have been sent.
    public static let connectionError = "CONNECTION_ERROR"
    /// Nothing reached the endpoint: connect refused, TLS or certificate failure, DNS failure.
    public static let notSent = "NOT_SENT"
    /// The address guard refused the URL or an address it resolves to (R-HOOK-3); no connection made.
    public static let endpointForbidden = "ENDPOINT_FORBIDDEN"
    /// The endpoint's secret could not be opened (operator key missing or rotated away); not sent.
    public static let secretUnavailable = "SECRET_UNAVAILABLE"
    /// The event has a type this release does not know, or a malformed payload; not sent.
    public static let unknownEvent = "UNKNOWN_EVENT"

    /// One of the codes above.
    public var code: String
    /// Human detail (never a secret; at most a few hundred bytes).
    public var detail: String

    /// Memberwise initializer.
    public init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }

    /// False for failures that say nothing about the endpoint (our own key or release): they are
    /// retried like others but never count toward the endpoint's 5-day rule.
    public var isEndpointsFault: Bool { code != Self.secretUnavailable && code != Self.unknownEvent }
}

/// Why an endpoint was disabled; the raw value is `push_webhook_endpoints.disabled_reason`.
public enum WebhookDisableReason: String, Sendable, CaseIterable, Codable {
    /// Disabled by an operator (CLI or API).
    case manual = "MANUAL"
    /// It answered 410 Gone (R-HOOK-2).
    case endpointGone = "ENDPOINT_GONE"
    /// Every attempt failed for 5 days (R-HOOK-2).
    case failing = "FAILING"
}

/// What to do after one attempt (R-HOOK-2), a pure decision:
/// - 2xx: delivered.
/// - 410: the delivery fails for good and the endpoint is disabled (`ENDPOINT_GONE`).
/// - anything else (other statuses, 3xx included since redirects are never followed; no answer):
///   a failed attempt. When the endpoint has failed every attempt for `disableAfter` (5 days,
///   counted from `push_webhook_endpoints.failing_since`), the delivery fails and the endpoint is
///   disabled (`FAILING`); otherwise the next attempt follows `WebhookRetryPolicy`, and past its
///   window the delivery fails (`RETRIES_EXHAUSTED`).
public struct WebhookAttemptDecision: Sendable, Equatable {
    /// What happens to this delivery.
    public enum Next: Sendable, Equatable {
        /// Done: the endpoint took it.
        case delivered
        /// Try again at this instant.
        case retry(at: Date)
        /// Failed for good, with this code (`ENDPOINT_GONE`, `ENDPOINT_FAILING`, `RETRIES_EXHAUSTED`).
        case failed(String)
    }

    /// The delivery's next step.
    public var next: Next
    /// Set when the endpoint must be disabled now.
    public var disableEndpoint: WebhookDisableReason?
    /// The attempt's error code for the attempts log (`HTTP_500`, `TIMEOUT`, ...); nil when delivered.
    public var errorCode: String?
    /// True when this attempt's failure counts toward the endpoint's 5-day rule.
    public var countsAsEndpointFailure: Bool

    /// 5 days (R-HOOK-2).
    public static let disableAfter: TimeInterval = 5 * 86_400

    /// Decides.
    /// - Parameters:
    ///   - answer: how the attempt ended.
    ///   - failedAttempts: failed attempts of this delivery so far, this one included when it failed.
    ///   - windowStartedAt: the delivery's first attempt (or its resend).
    ///   - endpointFailingSince: the endpoint's first failure after its last success, nil when its
    ///     last attempt succeeded (or it has none).
    ///   - now: when the attempt ended.
    ///   - jitter: a random value in [0, 1).
    public static func decide(_ answer: WebhookAnswer, failedAttempts: Int, windowStartedAt: Date,
                              endpointFailingSince: Date?, now: Date, jitter: Double,
                              policy: WebhookRetryPolicy = .default) -> WebhookAttemptDecision {
        let code: String
        var endpointsFault = true
        switch answer {
        case .status(let s) where (200...299).contains(s):
            return WebhookAttemptDecision(next: .delivered, disableEndpoint: nil, errorCode: nil, countsAsEndpointFailure: false)
        case .status(410):
            return WebhookAttemptDecision(next: .failed("ENDPOINT_GONE"), disableEndpoint: .endpointGone,
                                          errorCode: "HTTP_410", countsAsEndpointFailure: true)
        case .status(let s):
            code = "HTTP_\(s)"
        case .noAnswer(let f):
            code = f.code
            endpointsFault = f.isEndpointsFault
        }
        if endpointsFault, now.timeIntervalSince(endpointFailingSince ?? now) >= disableAfter {
            return WebhookAttemptDecision(next: .failed("ENDPOINT_FAILING"), disableEndpoint: .failing, errorCode: code,
                                          countsAsEndpointFailure: true)
        }
        let next: Next = policy.nextAttempt(failedAttempts: failedAttempts, windowStartedAt: windowStartedAt,
                                            now: now, jitter: jitter).map { .retry(at: $0) } ?? .failed(ErrorCode.retriesExhausted.rawValue)
        return WebhookAttemptDecision(next: next, disableEndpoint: nil, errorCode: code, countsAsEndpointFailure: endpointsFault)
    }
}
