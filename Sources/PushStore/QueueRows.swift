import Foundation

/// A claimed job with what processing it needs: its lease, its notification's content and its
/// app's send-time policy (read by the claim itself, one round trip for the whole claim).
public struct ClaimedJob: Sendable {
    /// `push_jobs.id`.
    public var id: Int64
    /// `notification` (the send-time step, R-SEND-2) or `batch` (a device batch).
    public var kind: String
    /// Device ids of a batch job; nil for a notification job.
    public var deviceIDs: [UUID]?
    /// The claim's lease token: every write of this job's outcome is guarded by it.
    public var leaseToken: UUID
    /// Attempt number of the job (1 on first claim).
    public var attempt: Int
    /// Attempts after which the job is set aside (discarded).
    public var maxAttempts: Int
    /// The job's notification.
    public var notification: NotificationRow
    /// The app's policy and placeholders, as read at claim time.
    public var app: AppPolicyRow
}

/// The columns of `push_notifications` the worker reads.
public struct NotificationRow: Sendable {
    public var id: UUID
    public var appID: UUID
    /// `test` or `live` (R-MODE-1).
    public var mode: String
    /// `pending`, `sending`, ... (see sql/0001).
    public var status: String
    public var title: String?
    public var body: String?
    /// The client's JSON object text, key order kept (R-ENC-9).
    public var data: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var collapseKey: String?
    /// `high` or `normal` (R-SEND-10).
    public var priority: String
    public var ttlSeconds: Int
    public var acceptedAt: Date
    public var sendAt: Date?
    /// max(accepted, send_at) + ttl (R-SEND-10).
    public var expiresAt: Date
    /// `require_encryption` as read at send time (R-SEND-2); nil before the send time.
    public var encrypted: Bool?
    public var hasSMSFallback: Bool
    /// Push type, iOS presentation, loc texts, Android channel (sql/0011).
    public var kindFields = NotificationKindFields()
}

/// The app's policy and placeholder text (R-APP-1).
public struct AppPolicyRow: Sendable {
    public var requireEncryption: Bool
    public var placeholderTitle: String
    public var placeholderBody: String
    /// The placeholder's loc keys (R-KIND-3), sent instead of the literal parts when set.
    public var placeholderTitleLocKey: String?
    public var placeholderBodyLocKey: String?
    /// Soft-deleted app: its notifications end as NO_DEVICES with DEVICE_GONE refunds.
    public var deleted: Bool
}

/// What `push_start_notification` decided at a notification's send time.
public struct NotificationStart: Sendable, Equatable {
    /// The devices this same job now delivers (audience no larger than a batch); nil when the
    /// audience was split into batch jobs for any worker.
    public var inlineDeviceIDs: [UUID]?
    /// Number of batch jobs the audience became (0 for an empty audience).
    public var batchJobs: Int
    /// Devices charged at acceptance but no longer targeted: DEVICE_GONE and refunded (R-SEND-2).
    public var gone: Int
    /// `require_encryption` as read now, written on the notification (R-SEND-2).
    public var encrypted: Bool
}

/// One device of a batch as stored now, with its delivery progress for this notification.
public struct BatchDeviceRow: Sendable {
    public var deviceID: UUID
    /// False when the device row no longer exists (deleted after 30 days, R-DEV-7).
    public var found: Bool
    /// Still of this notification's app and mode, active, and owned by an addressed user (R-SEND-1).
    public var targeted: Bool
    public var platform: String?
    public var token: String?
    public var endpoint: String?
    public var p256dh: [UInt8]?
    public var authSecret: [UInt8]?
    public var apnsEnvironment: String?
    /// Stored 65-byte public key (R-DEV-3), validated at registration; may still be corrupt.
    public var publicKey: [UInt8]?
    public var kid: String?
    public var lastRegisteredAt: Date?
    /// `retrying`, `sent`, `failed`, or nil when no delivery row exists yet.
    public var deliveryStatus: String?
    /// Attempts made so far for this delivery (deferrals included).
    public var attempts: Int
    /// Attempts that failed transiently so far (R-SEND-12).
    public var failures: Int
    public var nextAttemptAt: Date?
    /// Whether the device was charged at acceptance (R-SEND-9).
    public var charged: Bool
    /// The delivery's stable apns-id (lower-case UUID).
    public var apnsID: UUID
}

/// One delivery's result in a batch record (one element of `push_record_batch`'s arrays).
public struct DeliveryRecord: Sendable, Equatable {
    public var deviceID: UUID
    /// `sent`, `failed` or `retrying`.
    public var status: String
    public var errorCode: String?
    /// Operator detail (raw provider reason, curl error); never content.
    public var errorDetail: String?
    public var encrypted: Bool
    /// `simulator`, `apns`, `fcm`, `webpush`, or nil when nothing was sent.
    public var provider: String?
    public var providerMessageID: String?
    public var attempts: Int
    /// Transient failures so far (R-SEND-12 backoff counts these, not deferrals).
    public var failures: Int
    /// When a retrying delivery is tried again.
    public var nextAttemptAt: Date?
    /// Test mode: the exact payload bytes it would have sent (R-MODE-2).
    public var payload: [UInt8]?
    /// R-SEND-9: true = nets one charge, false = nets zero, nil = not final yet.
    public var netsCharge: Bool?
    /// A deactivation verdict (R-PRV-1/2): `UNREGISTERED`, `INVALID_TOKEN`, `APP_MISMATCH`.
    public var deactivateReason: String?
    /// When the provider judged the token (R-DEV-8); nil = the record time.
    public var verdictAt: Date?

    public init(deviceID: UUID, status: String, errorCode: String? = nil, errorDetail: String? = nil,
                encrypted: Bool = false, provider: String? = nil, providerMessageID: String? = nil,
                attempts: Int = 0, failures: Int = 0, nextAttemptAt: Date? = nil, payload: [UInt8]? = nil, netsCharge: Bool? = nil,
                deactivateReason: String? = nil, verdictAt: Date? = nil) {
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
        self.netsCharge = netsCharge
        self.deactivateReason = deactivateReason
        self.verdictAt = verdictAt
    }
}

/// One batch's results, for `QueueStore.batchRecordMany`.
public struct BatchOutcome: Sendable {
    public var job: ClaimedJob
    public var records: [DeliveryRecord]
    public var credentials: CredentialChanges

    public init(job: ClaimedJob, records: [DeliveryRecord], credentials: CredentialChanges = .init()) {
        self.job = job
        self.records = records
        self.credentials = credentials
    }
}

/// Credential-state changes a batch caused (R-APP-3, R-PRV-2, R-PRV-3).
public struct CredentialChanges: Sendable, Equatable {
    /// Kinds (`apns`, `fcm`, `webpush`) to mark invalid, with the provider's reason.
    public var invalid: [(kind: String, reason: String)]
    /// Kinds that had a live notification accepted in this batch.
    public var accepted: [String]

    public init(invalid: [(kind: String, reason: String)] = [], accepted: [String] = []) {
        self.invalid = invalid
        self.accepted = accepted
    }

    public static func == (a: CredentialChanges, b: CredentialChanges) -> Bool {
        a.accepted == b.accepted && a.invalid.map { "\($0.kind)/\($0.reason)" } == b.invalid.map { "\($0.kind)/\($0.reason)" }
    }
}

/// What recording a batch left: the notification's remaining batches and, when none remain,
/// every delivery's ending for the final decision (R-SEND-6).
public struct BatchRecordResult: Sendable, Equatable {
    public var remainingBatches: Int
    public var deactivated: Int
    /// `sent` or the error code of each delivery of the notification (set when remainingBatches == 0).
    public var endings: [String]?
    public var hasSMSFallback: Bool
}

/// A notification's final state as decided by PushCore (R-SEND-6).
public struct NotificationFinal: Sendable, Equatable {
    /// `sent`, `sms_fallback` or `failed`.
    public var status: String
    public var errorCode: String?

    public init(status: String, errorCode: String?) {
        self.status = status
        self.errorCode = errorCode
    }
}

/// Queue depth for operators and autoscalers (the `push_queue_stats` view).
public struct QueueStats: Sendable, Equatable, Codable {
    public var available: Int64
    public var due: Int64
    public var running: Int64
    public var discarded: Int64
    public var completed: Int64
    public var cancelled: Int64
    public var oldestDueAgeSeconds: Double
}

/// A job as operators list it.
public struct JobSummary: Sendable, Codable {
    public var id: Int64
    public var kind: String
    @LowercaseUUID public var notificationID: UUID
    public var state: String
    public var attempt: Int
    public var maxAttempts: Int
    public var runAt: Date
    public var lastError: String?
    public var devices: Int
}
