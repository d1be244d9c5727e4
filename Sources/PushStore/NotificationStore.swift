import Foundation
import PushCrypto
import PushCore

/// What the API accepts for one notification (R-SEND-1); see `push_enqueue` in sql/0002.
public struct EnqueueRequest: Sendable {
    public var appID: UUID
    public var mode: String
    public var userIDs: [String]
    public var deviceIDs: [UUID]?
    /// `all`: every active device of the app in `mode` at the send time (then no users or device
    /// ids), charged at send time batch by batch (R-KIND-5); nil: the users of `userIDs`.
    public var audience: String?
    /// Narrows a whole-app audience to these platforms; nil = every platform.
    public var audiencePlatforms: [String]?
    public var title: String?
    public var body: String?
    /// JSON object text, stored as given (key order kept, R-ENC-9).
    public var data: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var collapseKey: String?
    /// `high` (default) or `normal`.
    public var priority: String?
    public var sendAt: Date?
    /// Seconds, 0...2,419,200 (default the maximum).
    public var ttlSeconds: Int?
    public var idempotencyKey: String?
    public var smsPhone: String?
    public var smsText: String?
    /// `alert` (default) or `background` (R-KIND-1).
    public var pushType: String?
    /// iOS presentation fields (R-KIND-2).
    public var interruptionLevel: String?
    public var relevanceScore: Double?
    public var category: String?
    public var targetContentID: String?
    public var criticalSoundName: String?
    public var criticalSoundVolume: Double?
    /// The notification's own loc keys and args (R-KIND-3).
    public var titleLocKey: String?
    public var titleLocArgs: [String]?
    public var bodyLocKey: String?
    public var bodyLocArgs: [String]?
    /// Android notification channel (plaintext Android only).
    public var channelID: String?

    public init(appID: UUID, mode: String, userIDs: [String]) {
        self.appID = appID
        self.mode = mode
        self.userIDs = userIDs
    }
}

/// A notification with its deliveries and ledger, for `pushfleet notifications show`.
public struct NotificationReport: Sendable, Codable {
    public struct Delivery: Sendable, Codable {
        @PrefixedUUID<DeviceIDKind> public var deviceID: UUID
        public var status: String
        public var errorCode: String?
        public var errorDetail: String?
        public var encrypted: Bool
        public var provider: String?
        public var providerMessageID: String?
        @LowercaseUUID public var apnsID: UUID
        public var attempts: Int
        public var nextAttemptAt: Date?
        /// Test mode: the exact payload bytes it would have sent (R-MODE-2): UTF-8 text for APNs and
        /// FCM JSON, `base64url:` + the bytes for binary bodies (Web Push aes128gcm).
        public var payload: String?
        /// Length of the stored payload in bytes.
        public var payloadBytes: Int?
        /// The device's first preview fetch or receipt (R-IDS-4), nil until then.
        public var confirmedAt: Date? = nil

        /// Every member, absent ones as `null`, as the API writes its objects.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(_deviceID, forKey: .deviceID)
            try c.encode(status, forKey: .status)
            try c.encode(errorCode, forKey: .errorCode)
            try c.encode(errorDetail, forKey: .errorDetail)
            try c.encode(encrypted, forKey: .encrypted)
            try c.encode(provider, forKey: .provider)
            try c.encode(providerMessageID, forKey: .providerMessageID)
            try c.encode(_apnsID, forKey: .apnsID)
            try c.encode(attempts, forKey: .attempts)
            try c.encode(nextAttemptAt, forKey: .nextAttemptAt)
            try c.encode(payload, forKey: .payload)
            try c.encode(payloadBytes, forKey: .payloadBytes)
            try c.encode(confirmedAt, forKey: .confirmedAt)
        }
    }
    public struct LedgerRow: Sendable, Codable {
        @PrefixedUUID<DeviceIDKind> public var deviceID: UUID
        public var kind: String
        public var reason: String?
    }
    @PrefixedUUID<NotificationIDKind> public var id: UUID
    @PrefixedUUID<AppIDKind> public var appID: UUID
    public var mode: String
    public var status: String
    public var encrypted: Bool?
    /// The content mode its send time read (R-IDS-1); nil before, or when a previous release
    /// started it (sent sealed).
    public var contentMode: ContentMode?
    public var deviceCount: Int
    public var errorCode: String?
    public var sendAt: Date?
    public var acceptedAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    public var deliveries: [Delivery]
    public var ledger: [LedgerRow]
    /// The SMS fallback's outcome (R-SMS-1), once the notification ended `sms_fallback`.
    public var sms: SMSReport?
    /// Deliveries confirmed by their device's first preview fetch or receipt (R-IDS-4).
    public var confirmedCount = 0
    /// When its content was revoked for every device, and the users revoked one by one (issue 24).
    public var revokedAt: Date? = nil
    public var revokedUserIDs: [String] = []
    /// `all` for a whole-app audience (issue 22), `users` for one of listed user ids; the user ids
    /// (empty for `all`) and the platforms a whole-app audience was narrowed to (nil: not narrowed).
    public var audience = "users"
    public var userIDs: [String] = []
    public var platforms: [String]? = nil

    /// Every member, absent ones as `null` (`"sms": null` as in the API's answer), for
    /// `pushfleet notifications show --json`.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(_id, forKey: .id)
        try c.encode(_appID, forKey: .appID)
        try c.encode(mode, forKey: .mode)
        try c.encode(status, forKey: .status)
        try c.encode(encrypted, forKey: .encrypted)
        try c.encode(contentMode, forKey: .contentMode)
        try c.encode(deviceCount, forKey: .deviceCount)
        try c.encode(errorCode, forKey: .errorCode)
        try c.encode(sendAt, forKey: .sendAt)
        try c.encode(acceptedAt, forKey: .acceptedAt)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(finishedAt, forKey: .finishedAt)
        try c.encode(deliveries, forKey: .deliveries)
        try c.encode(ledger, forKey: .ledger)
        try c.encode(sms, forKey: .sms)
        try c.encode(confirmedCount, forKey: .confirmedCount)
        try c.encode(revokedAt, forKey: .revokedAt)
        try c.encode(revokedUserIDs, forKey: .revokedUserIDs)
        try c.encode(audience, forKey: .audience)
        try c.encode(userIDs, forKey: .userIDs)
        try c.encode(platforms, forKey: .platforms)
    }
}

/// A device the notification would target now (acceptance size check, R-SEND-7).
public struct AudienceDevice: Sendable {
    public var id: UUID
    public var platform: String
    public var address: String
    public var apnsEnvironment: String?
    public var publicKey: [UInt8]?
    public var kid: String?
}

/// Notifications from the API side: enqueue, cancel, show.
public final class NotificationStore {
    public let connection: PGConnection

    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Enqueues through `push_enqueue` (sql/0011: charges, job, NOTIFY, idempotency). Returns the id and
    /// whether it was created (false: a replay of the idempotency key, answered with the first
    /// notification). Throws `PGError` whose message starts with the stable code
    /// (`VALIDATION_ERROR: ...`, `PUSH_PAYLOAD_TOO_LARGE: ...`, `NOT_FOUND: ...`,
    /// `IDEMPOTENCY_KEY_REUSED: ...`; `StoreErrors.domainError` reads it).
    public func enqueue(_ q: EnqueueRequest, now: Date? = nil) throws -> (id: UUID, created: Bool) {
        let r = try connection.exec(RegistryQueries.enqueue, [
            .uuid(q.appID), .text(q.mode), .textArray(q.userIDs), q.deviceIDs.map { .uuidArray($0) },
            q.title.map(PGValue.text), q.body.map(PGValue.text), q.data.map(PGValue.text), q.badge.map(PGValue.int),
            q.sound.map(PGValue.text), q.threadID.map(PGValue.text), q.collapseKey.map(PGValue.text),
            q.priority.map(PGValue.text), q.sendAt.map(PGValue.date), q.ttlSeconds.map(PGValue.int),
            q.idempotencyKey.map(PGValue.text), q.smsPhone.map(PGValue.text), q.smsText.map(PGValue.text),
            now.map(PGValue.date), q.pushType.map(PGValue.text), q.interruptionLevel.map(PGValue.text),
            q.relevanceScore.map(PGValue.double), q.category.map(PGValue.text), q.targetContentID.map(PGValue.text),
            q.criticalSoundName.map(PGValue.text), q.criticalSoundVolume.map(PGValue.double),
            q.titleLocKey.map(PGValue.text), q.titleLocArgs.map { .textArray($0) }, q.bodyLocKey.map(PGValue.text),
            q.bodyLocArgs.map { .textArray($0) }, q.channelID.map(PGValue.text), q.audience.map(PGValue.text),
            q.audiencePlatforms.map { .textArray($0) },
        ])
        return (try r.uuid(0, "notification_id"), try r.bool(0, "created"))
    }

    /// UTF-8 text when the bytes are valid UTF-8 without control characters, else `base64url:...`.
    static func printable(_ bytes: [UInt8]) -> String {
        // All of the bytes: a C-string reading would stop at the first NUL (the aes128gcm header's
        // record size holds one at byte 16, and a salt starting with 0x00 read as "").
        if let text = String(validating: bytes, as: UTF8.self),
           !text.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            return text
        }
        return "base64url:" + Base64URL.encode(bytes)
    }

    /// The app and the devices a notification of `appID`/`mode` to `userIDs` (narrowed to
    /// `deviceIDs` when given) would target now, in one round trip: the acceptance size check's
    /// inputs (R-SEND-7). Nil when the app does not exist (a deleted one is returned, `deleted`).
    public func sendPreview(appID: UUID, mode: String, userIDs: [String],
                            deviceIDs: [UUID]?) throws -> (app: PushApp, audience: [AudienceDevice])? {
        let r = try connection.exec(RegistryQueries.sendPreview, [
            .uuid(appID), .text(mode), .textArray(userIDs), deviceIDs.map { .uuidArray($0) },
        ])
        if r.rowCount == 0 { return nil }
        let app = PushApp(id: try r.uuid(0, "app_id"), name: try r.string(0, "name"),
                          requireEncryption: try r.bool(0, "require_encryption"),
                          placeholderTitle: try r.string(0, "placeholder_title"),
                          placeholderBody: try r.string(0, "placeholder_body"),
                          placeholderTitleLocKey: try r.decode(0, "placeholder_title_loc_key"),
                          placeholderBodyLocKey: try r.decode(0, "placeholder_body_loc_key"), deleted: try r.bool(0, "deleted"),
                          createdAt: try r.date(0, "created_at"), updatedAt: try r.date(0, "updated_at"),
                          contentMode: try r.decode(0, "content_mode"))
        var audience: [AudienceDevice] = []
        for i in r.rows where try !r.isNull(i, "id") {
            audience.append(AudienceDevice(id: try r.uuid(i, "id"), platform: try r.string(i, "platform"),
                                           address: try r.string(i, "address"),
                                           apnsEnvironment: try r.decode(i, "apns_environment"),
                                           publicKey: try r.decode(i, "public_key"), kid: try r.decode(i, "kid")))
        }
        return (app, audience)
    }

    /// The notification an idempotency key names in an app and mode, or nil (R-SEND-1).
    /// `push_notifications_idempotency_key`.
    public func notificationID(appID: UUID, mode: String, idempotencyKey: String) throws -> UUID? {
        let r = try connection.exec(RegistryQueries.notificationByIdempotencyKey,
                                    [.uuid(appID), .text(mode), .text(idempotencyKey)])
        return r.rowCount == 0 ? nil : try r.uuid(0, "id")
    }

    /// A notification's app, mode and status, or nil when there is none (for scoping a cancel).
    public func scope(id: UUID) throws -> (appID: UUID, mode: String, status: String)? {
        let r = try connection.exec(RegistryQueries.notificationScope, [.uuid(id)])
        if r.rowCount == 0 { return nil }
        return (try r.uuid(0, "app_id"), try r.string(0, "mode"), try r.string(0, "status"))
    }

    /// The devices `q` would target now (for the acceptance size check).
    public func audiencePreview(_ q: EnqueueRequest) throws -> [AudienceDevice] {
        let r = try connection.exec(RegistryQueries.audiencePreview, [
            .uuid(q.appID), .text(q.mode), .textArray(q.userIDs), q.deviceIDs.map { .uuidArray($0) },
        ])
        return try r.rows.map { i in
            AudienceDevice(id: try r.uuid(i, "id"), platform: try r.string(i, "platform"),
                           address: try r.string(i, "address"), apnsEnvironment: try r.decode(i, "apns_environment"),
                           publicKey: try r.decode(i, "public_key"), kid: try r.decode(i, "kid"))
        }
    }

    /// Cancels a notification whose send time has not come; refunds it. False when too late.
    public func cancel(id: UUID) throws -> Bool {
        try connection.exec(RegistryQueries.cancel, [.uuid(id)]).bool(0, "cancelled")
    }

    /// The notification with its deliveries and ledger rows, or nil.
    public func report(id: UUID) throws -> NotificationReport? {
        let n = try connection.exec(RegistryQueries.notificationGet, [.uuid(id)])
        if n.rowCount == 0 { return nil }
        let d = try connection.exec(RegistryQueries.notificationDeliveries, [.uuid(id)])
        let l = try connection.exec(RegistryQueries.notificationLedger, [.uuid(id)])
        let deliveries = try d.rows.map { i -> NotificationReport.Delivery in
            let payload: [UInt8]? = try d.decode(i, "payload")
            return NotificationReport.Delivery(
                deviceID: try d.uuid(i, "device_id"), status: try d.string(i, "status"),
                errorCode: try d.decode(i, "error_code"), errorDetail: try d.decode(i, "error_detail"),
                encrypted: try d.bool(i, "encrypted"), provider: try d.decode(i, "provider"),
                providerMessageID: try d.decode(i, "provider_message_id"), apnsID: try d.uuid(i, "apns_id"),
                attempts: try d.int(i, "attempts"), nextAttemptAt: try d.decode(i, "next_attempt_at"),
                payload: payload.map(Self.printable), payloadBytes: payload?.count,
                confirmedAt: try d.decode(i, "confirmed_at"))
        }
        let ledger = try l.rows.map { i in
            NotificationReport.LedgerRow(deviceID: try l.uuid(i, "device_id"), kind: try l.string(i, "kind"),
                                         reason: try l.decode(i, "reason"))
        }
        var report = NotificationReport(
            id: try n.uuid(0, "id"), appID: try n.uuid(0, "app_id"), mode: try n.string(0, "mode"),
            status: try n.string(0, "status"), encrypted: try n.decode(0, "encrypted"),
            contentMode: try n.decode(0, "content_mode"), deviceCount: try n.int(0, "device_count"), errorCode: try n.decode(0, "error_code"),
            sendAt: try n.decode(0, "send_at"), acceptedAt: try n.date(0, "accepted_at"),
            startedAt: try n.decode(0, "started_at"), finishedAt: try n.decode(0, "finished_at"),
            deliveries: deliveries, ledger: ledger, sms: try SMSStore(connection: connection).report(notificationID: id))
        report.confirmedCount = deliveries.filter { $0.confirmedAt != nil }.count
        report.revokedAt = try n.decode(0, "revoked_at")
        report.revokedUserIDs = try PGArrayText.strings(n.string(0, "revoked_user_ids"))
        report.audience = try n.decode(0, "audience") ?? "users"
        report.userIDs = try PGArrayText.strings(n.string(0, "user_ids"))
        let platforms: String? = try n.decode(0, "audience_platforms")
        report.platforms = try platforms.map { try PGArrayText.strings($0) }
        return report
    }
}
