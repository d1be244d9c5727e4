import Foundation
import PushCore

/// A webhook endpoint as stored (issue 19), without its secrets.
public struct WebhookEndpoint: Sendable, Equatable, Codable {
    /// The endpoint id (the API shows it as `pwh_...`, `PrefixedID`).
    @LowercaseUUID public var id: UUID
    /// Its push app.
    @LowercaseUUID public var appID: UUID
    /// Test endpoints get test events only, live endpoints live events only (R-MODE-1).
    public var mode: Mode
    /// Where events are POSTed.
    public var url: String
    /// The event types it receives (`WebhookEventType` raw values).
    public var eventTypes: [String]
    /// False once disabled (by an operator, a 410 answer, or 5 days of failures).
    public var enabled: Bool
    /// Why it is disabled (`WebhookDisableReason` raw value), nil while enabled.
    public var disabledReason: String?
    /// When it was disabled.
    public var disabledAt: Date?
    /// Until when the previous secret also signs (24 h after the last rotation), nil when none does.
    public var previousSecretExpiresAt: Date?
    /// First failed attempt since the last success (R-HOOK-2), nil while the last attempt succeeded.
    public var failingSince: Date?
    /// The last delivered attempt.
    public var lastSuccessAt: Date?
    /// The last failed attempt.
    public var lastFailureAt: Date?
    /// Creation time.
    public var createdAt: Date
    /// Last change.
    public var updatedAt: Date
    /// Deliveries not yet final (waiting or in flight).
    public var pending: Int

    static func decode(_ r: PGResult, _ i: Int) throws -> WebhookEndpoint {
        guard let mode = Mode(rawValue: try r.string(i, "mode")) else {
            throw PGError(code: .decode, message: "unknown endpoint mode")
        }
        return WebhookEndpoint(
            id: try r.uuid(i, "id"), appID: try r.uuid(i, "app_id"), mode: mode, url: try r.string(i, "url"),
            eventTypes: try PGArrayText.strings(try r.string(i, "event_types")), enabled: try r.bool(i, "enabled"),
            disabledReason: try r.decode(i, "disabled_reason"), disabledAt: try r.decode(i, "disabled_at"),
            previousSecretExpiresAt: try r.decode(i, "previous_secret_expires_at"),
            failingSince: try r.decode(i, "failing_since"), lastSuccessAt: try r.decode(i, "last_success_at"),
            lastFailureAt: try r.decode(i, "last_failure_at"), createdAt: try r.date(i, "created_at"),
            updatedAt: try r.date(i, "updated_at"), pending: try r.int(i, "pending"))
    }
}

/// An endpoint with its signing secret, returned by creation and rotation only: the one time the
/// secret is shown (`whsec_...`).
public struct WebhookEndpointWithSecret: Sendable, Equatable {
    /// The endpoint.
    public var endpoint: WebhookEndpoint
    /// The new signing secret.
    public var secret: WebhookSecret
}

/// One recorded attempt (`pushfleet webhooks attempts`).
public struct WebhookAttemptInfo: Sendable, Equatable, Codable {
    /// When the attempt ended.
    public var attemptedAt: Date
    /// Its number for this delivery (1 = first).
    public var attempt: Int
    /// The endpoint.
    @LowercaseUUID public var endpointID: UUID
    /// The event's public id (the body's `id` is `pevt_` + its hex).
    @LowercaseUUID public var eventID: UUID
    /// The event type.
    public var eventType: String
    /// `delivered`, `retry` (failed, tried again later) or `failed` (for good).
    public var result: String
    /// The HTTP status, nil when there was no answer.
    public var statusCode: Int?
    /// `HTTP_500`, `TIMEOUT`, `ENDPOINT_FORBIDDEN`... (nil when delivered).
    public var error: String?
    /// Duration in milliseconds.
    public var durationMillis: Int?
    /// The first bytes of the answer (at most 256 characters).
    public var response: String?
    /// The `webhook-id` it carried (the same on every attempt and resend).
    public var webhookID: String
}

/// A delivery claimed by the dispatcher: one event for one endpoint, leased.
public struct WebhookDelivery: Sendable {
    /// The outbox row.
    public var outboxID: Int64
    /// Its lease token (every record is guarded by it).
    public var leaseToken: UUID
    /// Claims of this row so far, this one included.
    public var attempt: Int
    /// Failed attempts of the current window before this one.
    public var failures: Int
    /// Start of the current retry window.
    public var windowStartedAt: Date
    /// The endpoint id.
    public var endpointID: UUID
    /// The event, nil when its row is gone.
    public var event: WebhookBody.Event?
    /// The endpoint's state at claim time, nil when it was deleted.
    public var endpoint: Target?

    /// What the dispatcher needs of the endpoint.
    public struct Target: Sendable {
        /// Where to POST.
        public var url: String
        /// Its mode (http to loopback is allowed in test mode only).
        public var mode: Mode
        /// False when disabled since the row was queued.
        public var enabled: Bool
        /// The secrets that sign now (current first, the previous one while it overlaps); empty
        /// when they could not be opened (`secretError` says why).
        public var secrets: [WebhookSecret]
        /// Why the secrets could not be opened.
        public var secretError: String?
        /// R-HOOK-2's clock.
        public var failingSince: Date?
    }
}

/// One finished attempt to record (`WebhookDispatchStore.record`).
public struct WebhookAttemptRecord: Sendable, Equatable {
    /// The delivery's next state.
    public enum State: Sendable, Equatable {
        /// Delivered.
        case done
        /// Try again at this instant.
        case retry(at: Date)
        /// Failed for good.
        case failed
    }

    /// The outbox row and its lease token.
    public var outboxID: Int64
    public var leaseToken: UUID
    /// What happens next.
    public var state: State
    /// The attempt's error code, or the final one (nil when delivered).
    public var error: String?
    /// HTTP status, nil when no answer.
    public var statusCode: Int?
    /// When the attempt ended.
    public var attemptedAt: Date
    /// Its duration in milliseconds.
    public var durationMillis: Int
    /// The answer's first bytes (clipped to 256 characters), nil when none.
    public var response: String?
    /// True when the failure counts toward the endpoint's 5-day rule.
    public var countsAsEndpointFailure: Bool

    /// Memberwise initializer.
    public init(outboxID: Int64, leaseToken: UUID, state: State, error: String?, statusCode: Int?, attemptedAt: Date,
                durationMillis: Int, response: String?, countsAsEndpointFailure: Bool) {
        self.outboxID = outboxID
        self.leaseToken = leaseToken
        self.state = state
        self.error = error
        self.statusCode = statusCode
        self.attemptedAt = attemptedAt
        self.durationMillis = durationMillis
        self.response = response
        self.countsAsEndpointFailure = countsAsEndpointFailure
    }
}
