import Foundation
import PushCore

/// One delivery's result in a batch record: what the worker decided, which the store writes as
/// told (the delivery row, the ledger row `ledger` names, the deactivation verdict). Crosses into
/// SQL as one element of `push_record`'s deliveries (`DeliveryRecord.json`, type
/// `push_delivery_record` in sql/functions/push_record.sql).
public struct DeliveryRecord: Sendable, Equatable {
    public var deviceID: UUID
    /// `retrying` (not final: tried again at `nextAttemptAt`), `sent` or `failed`.
    public var status: DeliveryStatus
    /// Why it failed (R-SEND-5..12); nil when sent or retrying.
    public var errorCode: ErrorCode?
    /// Operator detail (raw provider reason, curl error); never content.
    public var errorDetail: String?
    public var encrypted: Bool
    /// Who answered (`simulator`, `apns`, `fcm`, `webpush`), or nil when nothing was sent.
    public var provider: ProviderKind?
    public var providerMessageID: String?
    public var attempts: Int
    /// Transient failures so far (R-SEND-12 backoff counts these, not deferrals).
    public var failures: Int
    /// When a retrying delivery is tried again.
    public var nextAttemptAt: Date?
    /// Test mode: the exact payload bytes it would have sent (R-MODE-2).
    public var payload: [UInt8]?
    /// The ledger row to write so the delivery nets what R-SEND-9 says (`LedgerRule.action`);
    /// `none` for a delivery not final yet.
    public var ledger: LedgerAction
    /// A deactivation verdict (R-PRV-1/2): `UNREGISTERED`, `INVALID_TOKEN` or `APP_MISMATCH`;
    /// applied only when not older than the device's last registration (R-DEV-8).
    public var deactivateReason: ErrorCode?
    /// When the provider judged the token (R-DEV-8); nil = the record time.
    public var verdictAt: Date?

    /// Makes a record.
    public init(deviceID: UUID, status: DeliveryStatus, errorCode: ErrorCode? = nil, errorDetail: String? = nil,
                encrypted: Bool = false, provider: ProviderKind? = nil, providerMessageID: String? = nil,
                attempts: Int = 0, failures: Int = 0, nextAttemptAt: Date? = nil, payload: [UInt8]? = nil,
                ledger: LedgerAction = .none, deactivateReason: ErrorCode? = nil, verdictAt: Date? = nil) {
        self.deviceID = deviceID
        self.status = status
        self.errorCode = errorCode
        self.errorDetail = errorDetail
        self.encrypted = encrypted
        self.provider = provider
        self.providerMessageID = providerMessageID
        self.attempts = attempts
        self.failures = failures
        self.nextAttemptAt = nextAttemptAt
        self.payload = payload
        self.ledger = ledger
        self.deactivateReason = deactivateReason
        self.verdictAt = verdictAt
    }

    /// The ending this record is, once final (nil while retrying); an `APP_MISMATCH` is blamed on
    /// the device when the record deactivates it (R-PRV-2).
    public var ending: DeliveryEnding? {
        switch status {
        case .retrying: return nil
        case .sent: return .sent
        case .failed:
            let code = errorCode ?? .providerError
            if code == .appMismatch { return .appMismatch(deactivateReason == .appMismatch ? .device : .credentials) }
            return .failed(code)
        }
    }
}

/// One batch's results, for `QueueStore.batchRecord`.
public struct BatchOutcome: Sendable {
    public var job: ClaimedJob
    public var records: [DeliveryRecord]
    public var credentials: CredentialChanges
    /// The notification's final state as PushCore decided it from `records`, given only when they
    /// are every delivery the notification will have (`soleBatchFinal`); the store then writes it
    /// with the record (one step less per notification, issue 17) instead of asking `decideFinal`.
    /// Stored only when this record ends the notification's last batch and it is not final yet.
    public var final: NotificationOutcome?

    /// Makes a value.
    public init(job: ClaimedJob, records: [DeliveryRecord], credentials: CredentialChanges = .init(),
                final: NotificationOutcome? = nil) {
        self.job = job
        self.records = records
        self.credentials = credentials
        self.final = final
    }

    /// The final decision for records that are all of their notification's deliveries (a sole
    /// batch started in this claim with no DEVICE_GONE row): `decide` over their endings, or nil
    /// when one still retries (the notification is not over) or a device is recorded twice.
    public static func soleBatchFinal(_ records: [DeliveryRecord], hasSMSFallback: Bool,
                                      decide: FinalDecision) -> NotificationOutcome? {
        let endings = records.compactMap(\.ending)
        guard endings.count == records.count, Set(records.map(\.deviceID)).count == records.count else { return nil }
        return decide(endings, hasSMSFallback)
    }
}

/// Credential-state changes a batch caused (R-APP-3, R-PRV-2, R-PRV-3).
public struct CredentialChanges: Sendable, Equatable {
    /// One set to mark invalid, with the provider's reason.
    public struct Invalid: Sendable, Equatable {
        public var kind: CredentialKind
        public var reason: String

        /// Makes a value.
        public init(kind: CredentialKind, reason: String) {
            self.kind = kind
            self.reason = reason
        }
    }

    /// Sets to mark invalid (R-PRV-2/3).
    public var invalid: [Invalid]
    /// Kinds that had a live notification accepted in this batch (R-APP-3).
    public var accepted: [CredentialKind]

    /// Makes a value.
    public init(invalid: [Invalid] = [], accepted: [CredentialKind] = []) {
        self.invalid = invalid
        self.accepted = accepted
    }
}

/// What recording a batch left: the notification's remaining batches and, when none remain,
/// every delivery's ending for the final decision (R-SEND-6).
public struct BatchRecordResult: Sendable, Equatable {
    public var remainingBatches: Int
    public var deactivated: Int
    /// Every delivery's ending (set when `remainingBatches` is 0).
    public var endings: [DeliveryEnding]?
    public var hasSMSFallback: Bool

    /// Makes a value.
    public init(remainingBatches: Int, deactivated: Int, endings: [DeliveryEnding]?, hasSMSFallback: Bool) {
        self.remainingBatches = remainingBatches
        self.deactivated = deactivated
        self.endings = endings
        self.hasSMSFallback = hasSMSFallback
    }
}

/// The decision of a notification's final state from its endings (R-SEND-6): the store runs it
/// inside the recording transaction and stores what it says. The worker passes
/// `NotificationOutcome.final`.
public typealias FinalDecision = @Sendable (_ endings: [DeliveryEnding], _ hasSMSFallback: Bool) -> NotificationOutcome

/// Queue depth for operators and autoscalers (the `push_queue_stats` view).
public struct QueueStats: Sendable, Equatable, Codable {
    public var available: Int64
    public var due: Int64
    public var running: Int64
    public var discarded: Int64
    public var completed: Int64
    public var cancelled: Int64
    public var oldestDueAgeSeconds: Double

    /// Makes a value.
    public init(available: Int64, due: Int64, running: Int64, discarded: Int64, completed: Int64, cancelled: Int64,
                oldestDueAgeSeconds: Double) {
        self.available = available
        self.due = due
        self.running = running
        self.discarded = discarded
        self.completed = completed
        self.cancelled = cancelled
        self.oldestDueAgeSeconds = oldestDueAgeSeconds
    }
}

/// A job as operators list it.
public struct JobSummary: Sendable, Codable {
    public var id: Int64
    public var kind: JobKind
    @PrefixedUUID<NotificationIDKind> public var notificationID: UUID
    public var state: JobState
    public var attempt: Int
    public var maxAttempts: Int
    public var runAt: Date
    public var lastError: String?
    public var devices: Int
}
