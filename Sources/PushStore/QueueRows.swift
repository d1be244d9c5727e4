import Foundation
import PushCore

/// A claimed job's lease: the job id and the claim's lease token. Every write of the job's outcome
/// is guarded by both (`LEASE_LOST` otherwise).
public struct JobLease: Sendable, Hashable {
    /// `push_jobs.id`.
    public var id: Int64
    /// The claim's lease token.
    public var token: UUID

    /// Makes a lease value.
    public init(id: Int64, token: UUID) {
        self.id = id
        self.token = token
    }
}

/// A claimed job with what processing it needs: its lease, its notification's content and its
/// app's send-time policy (read by the claim itself, one round trip for the whole claim).
public struct ClaimedJob: Sendable {
    /// `push_jobs.id`.
    public var id: Int64
    /// `notification` (the send-time step, R-SEND-2) or `batch` (a device batch).
    public var kind: JobKind
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

    /// Makes a claimed job (the stores' decoders and test doubles).
    public init(id: Int64, kind: JobKind, deviceIDs: [UUID]?, leaseToken: UUID, attempt: Int, maxAttempts: Int,
                notification: NotificationRow, app: AppPolicyRow) {
        self.id = id
        self.kind = kind
        self.deviceIDs = deviceIDs
        self.leaseToken = leaseToken
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.notification = notification
        self.app = app
    }

    /// The job's lease (id and token).
    public var lease: JobLease { JobLease(id: id, token: leaseToken) }
}

/// The columns of `push_notifications` the worker reads.
public struct NotificationRow: Sendable {
    public var id: UUID
    public var appID: UUID
    /// R-MODE-1.
    public var mode: Mode
    /// Where the notification is in its life (see sql/0001).
    public var status: NotificationState
    public var title: String?
    public var body: String?
    /// The client's JSON object text, key order kept (R-ENC-9).
    public var data: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var collapseKey: String?
    /// R-SEND-10.
    public var priority: Priority
    public var ttlSeconds: Int
    public var acceptedAt: Date
    public var sendAt: Date?
    /// max(accepted, send_at) + ttl (R-SEND-10), as `push_enqueue` stored it.
    public var expiresAt: Date
    /// `require_encryption` as read at send time (R-SEND-2); nil before the send time.
    public var encrypted: Bool?
    /// The app's content mode as read at send time (R-IDS-1); nil before the send time, and on a
    /// row a previous release started (it was sent `sealed`).
    public var contentMode: ContentMode?
    public var hasSMSFallback: Bool
    /// Push type, iOS presentation, loc texts, Android channel (sql/0011).
    public var kindFields: NotificationKindFields

    /// Makes a row (the stores' decoders and test doubles).
    public init(id: UUID, appID: UUID, mode: Mode, status: NotificationState, title: String? = nil, body: String? = nil,
                data: String? = nil, badge: Int? = nil, sound: String? = nil, threadID: String? = nil,
                collapseKey: String? = nil, priority: Priority = .high, ttlSeconds: Int, acceptedAt: Date,
                sendAt: Date? = nil, expiresAt: Date, encrypted: Bool? = nil, contentMode: ContentMode? = nil,
                hasSMSFallback: Bool = false, kindFields: NotificationKindFields = NotificationKindFields()) {
        self.id = id
        self.appID = appID
        self.mode = mode
        self.status = status
        self.title = title
        self.body = body
        self.data = data
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.acceptedAt = acceptedAt
        self.sendAt = sendAt
        self.expiresAt = expiresAt
        self.encrypted = encrypted
        self.contentMode = contentMode
        self.hasSMSFallback = hasSMSFallback
        self.kindFields = kindFields
    }
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

    /// Makes a row.
    public init(requireEncryption: Bool, placeholderTitle: String, placeholderBody: String,
                placeholderTitleLocKey: String? = nil, placeholderBodyLocKey: String? = nil, deleted: Bool) {
        self.requireEncryption = requireEncryption
        self.placeholderTitle = placeholderTitle
        self.placeholderBody = placeholderBody
        self.placeholderTitleLocKey = placeholderTitleLocKey
        self.placeholderBodyLocKey = placeholderBodyLocKey
        self.deleted = deleted
    }
}

/// What the send-time step decided for one notification job (R-SEND-2).
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
    /// The app's content mode as read now, written on the notification (R-IDS-1).
    public var contentMode: ContentMode

    /// Makes a value.
    public init(inlineDeviceIDs: [UUID]?, batchJobs: Int, gone: Int, encrypted: Bool, contentMode: ContentMode = .sealed) {
        self.inlineDeviceIDs = inlineDeviceIDs
        self.batchJobs = batchJobs
        self.gone = gone
        self.encrypted = encrypted
        self.contentMode = contentMode
    }
}

/// One device of a batch as stored now, with its delivery progress for this notification.
public struct BatchDeviceRow: Sendable {
    public var deviceID: UUID
    /// False when the device row no longer exists (deleted after 30 days, R-DEV-7).
    public var found: Bool
    /// Still of this notification's app and mode, active, and owned by an addressed user (R-SEND-1).
    public var targeted: Bool
    /// The stored spelling, nil when the row is gone. Not checked by the schema on purpose: a
    /// platform this release does not know fails only its delivery (`UNKNOWN_PLATFORM`, the planner).
    public var platform: String?
    public var token: String?
    public var endpoint: String?
    public var p256dh: [UInt8]?
    public var authSecret: [UInt8]?
    public var apnsEnvironment: APNsEnvironment?
    /// Stored 65-byte public key (R-DEV-3), validated at registration; may still be corrupt.
    public var publicKey: [UInt8]?
    public var kid: String?
    public var lastRegisteredAt: Date?
    /// The delivery row's status, nil when no delivery row exists yet.
    public var deliveryStatus: DeliveryStatus?
    /// Attempts made so far for this delivery (deferrals included).
    public var attempts: Int
    /// Attempts that failed transiently so far (R-SEND-12).
    public var failures: Int
    public var nextAttemptAt: Date?
    /// Whether the device was charged at acceptance (R-SEND-9): what `LedgerRule.action` needs.
    public var charged: Bool
    /// The delivery's stable apns-id (lower-case UUID).
    public var apnsID: UUID

    /// Makes a row (the stores' decoders and test doubles).
    public init(deviceID: UUID, found: Bool, targeted: Bool, platform: String?, token: String? = nil,
                endpoint: String? = nil, p256dh: [UInt8]? = nil, authSecret: [UInt8]? = nil,
                apnsEnvironment: APNsEnvironment? = nil, publicKey: [UInt8]? = nil, kid: String? = nil,
                lastRegisteredAt: Date? = nil, deliveryStatus: DeliveryStatus? = nil, attempts: Int = 0,
                failures: Int = 0, nextAttemptAt: Date? = nil, charged: Bool, apnsID: UUID) {
        self.deviceID = deviceID
        self.found = found
        self.targeted = targeted
        self.platform = platform
        self.token = token
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.authSecret = authSecret
        self.apnsEnvironment = apnsEnvironment
        self.publicKey = publicKey
        self.kid = kid
        self.lastRegisteredAt = lastRegisteredAt
        self.deliveryStatus = deliveryStatus
        self.attempts = attempts
        self.failures = failures
        self.nextAttemptAt = nextAttemptAt
        self.charged = charged
        self.apnsID = apnsID
    }
}

/// One batch to load: a notification and the devices of one job.
public struct DeviceBatch: Sendable {
    public var notificationID: UUID
    public var deviceIDs: [UUID]

    /// Makes a value.
    public init(notificationID: UUID, deviceIDs: [UUID]) {
        self.notificationID = notificationID
        self.deviceIDs = deviceIDs
    }
}
