import Foundation
import PushCore
import PushStore

/// One notification to accept (R-SEND-1), as the API's `POST /v1/push/notifications` body and the
/// CLI's `pushfleet send` give it. Every field is checked by `AcceptanceService.send` against
/// `AcceptanceLimits`; nil means absent.
public struct SendRequest: Sendable, Equatable {
    /// The SMS fallback (R-SEND-6): both parts or none.
    public struct SMSFallback: Sendable, Equatable {
        /// The phone number (field `sms_fallback.phone`).
        public var phone: String
        /// The text (field `sms_fallback.text`).
        public var text: String

        /// Makes a fallback.
        public init(phone: String, text: String) {
            self.phone = phone
            self.text = text
        }
    }

    /// The critical-alert sound (field `critical_sound`, R-KIND-2): `aps.sound` =
    /// `{"critical":1,"name":…[,"volume":…]}`, only with `interruption_level` `critical`.
    public struct CriticalSound: Sendable, Equatable {
        /// Field `critical_sound.name` (required): the sound file in the app bundle, or `default`.
        public var name: String?
        /// Field `critical_sound.volume`: 0 to 1, at most 4 decimal places; nil = full volume.
        public var volume: Double?

        /// Makes a critical sound.
        public init(name: String?, volume: Double? = nil) {
            self.name = name
            self.volume = volume
        }
    }

    /// The push app (field `app_id`).
    public var appID: UUID
    /// Test or live: the credential's mode (R-MODE-1).
    public var mode: Mode
    /// The users addressed (field `user_ids`), 1 to 1,000; none with a whole-app audience.
    public var userIDs: [String]
    /// Field `audience`: nil or `users` (the word answers use, `usersAudience`) = the users of
    /// `userIDs`; `all` = every active device of the app in the request's mode at the send time
    /// (issue 22; R-SEND-1 at the send time).
    public var audience: String?
    /// The `audience` value naming the users of `user_ids`, as notification answers say it:
    /// accepted in a request as meaning the field is absent.
    public static let usersAudience = "users"
    /// `audience` with `users` read as absent: nil (the users of `userIDs`), or the value given
    /// for any other audience (`all`; anything else is refused by the service).
    public var wholeAppAudience: String? { audience == Self.usersAudience ? nil : audience }
    /// Field `platforms`: narrows a whole-app audience to these platforms (distinct, among those
    /// the service's provider table serves); nil = every platform.
    public var platforms: [String]?
    /// Narrows the audience to these of their devices (field `device_ids`); nil = all of them.
    public var deviceIDs: [UUID]?
    /// Field `title`.
    public var title: String?
    /// Field `body`.
    public var body: String?
    /// Field `data`: a JSON object's text, key order kept (R-ENC-9); stored compact.
    public var data: String?
    /// Field `badge`.
    public var badge: Int?
    /// Field `sound`.
    public var sound: String?
    /// Field `thread_id`.
    public var threadID: String?
    /// Field `collapse_key` (R-SEND-13).
    public var collapseKey: String?
    /// Field `priority`: `high` (the default) or `normal` (R-SEND-10).
    public var priority: String?
    /// Field `send_at`: the scheduled time; nil = now.
    public var sendAt: Date?
    /// Field `ttl`, in seconds (R-SEND-10); nil = the maximum, 2,419,200.
    public var ttlSeconds: Int?
    /// The idempotency key (the API's `Idempotency-Key` header; field `idempotency_key`).
    public var idempotencyKey: String?
    /// Field `sms_fallback`.
    public var smsFallback: SMSFallback?
    /// Field `push_type`: `alert` (the default) or `background` (R-KIND-1: data and the collapse key only).
    public var pushType: String?
    /// Field `interruption_level`: `passive`, `active`, `time-sensitive` or `critical` (iOS, R-KIND-2).
    public var interruptionLevel: String?
    /// Field `relevance_score`: 0 to 1, at most 4 decimal places (iOS, R-KIND-2).
    public var relevanceScore: Double?
    /// Field `category` (iOS, R-KIND-2).
    public var category: String?
    /// Field `target_content_id` (iOS, R-KIND-2).
    public var targetContentID: String?
    /// Field `critical_sound` (iOS, R-KIND-2).
    public var criticalSound: CriticalSound?
    /// Field `title_loc_key` (R-KIND-3).
    public var titleLocKey: String?
    /// Field `title_loc_args` (R-KIND-3); an empty array is no array.
    public var titleLocArgs: [String]?
    /// Field `body_loc_key` (R-KIND-3).
    public var bodyLocKey: String?
    /// Field `body_loc_args` (R-KIND-3); an empty array is no array.
    public var bodyLocArgs: [String]?
    /// Field `channel_id`: the Android notification channel (plaintext Android only).
    public var channelID: String?

    /// A request with the required fields; set the others as needed.
    public init(appID: UUID, mode: Mode, userIDs: [String]) {
        self.appID = appID
        self.mode = mode
        self.userIDs = userIDs
    }
}

/// What `AcceptanceService.send` did.
public struct SendResult: Sendable, Equatable {
    /// The notification: the new one, or the first one of a replayed idempotency key.
    public var notificationID: UUID
    /// True for a new notification (API 201), false for a replay answered with the first one (API
    /// 200 with `Idempotent-Replayed: true`).
    public var created: Bool
    /// `!created`.
    public var replayed: Bool { !created }
    /// The SMS fallback's segments and encoding (GSM-7 or UCS-2), when it has one (R-SMS-1): what
    /// the SMS will cost, as the provider bills per segment.
    public var smsSegments: SMSSegments?

    /// Makes a result.
    public init(notificationID: UUID, created: Bool, smsSegments: SMSSegments? = nil) {
        self.notificationID = notificationID
        self.created = created
        self.smsSegments = smsSegments
    }
}

/// One device registration (R-DEV-1..8), as the API's `PUT /v1/push/devices` body and
/// `pushfleet devices register` give it.
public struct DeviceRegistrationRequest: Sendable, Equatable {
    /// What to do with the device's stored encryption key (R-DEV-4; field `encryption_public_key`).
    public enum EncryptionKeyChange: Sendable, Equatable {
        /// The field was absent: keep the stored key (a new device has none).
        case keep
        /// A value: the base64url (no padding) of the 65-byte uncompressed P-256 point (R-DEV-3).
        case set(String)
        /// An explicit null: remove the key (fires no webhook).
        case remove
    }

    /// A browser's Web Push subscription (field `subscription`, as the API body gives it:
    /// `{"endpoint", "keys": {"p256dh", "auth"}}`); a part left nil is refused naming it.
    public struct WebSubscription: Sendable, Equatable {
        /// Field `subscription.endpoint`: the push service URL (https, public host).
        public var endpoint: String?
        /// Field `subscription.keys.p256dh`: base64url of the browser's 65-byte P-256 key.
        public var p256dh: String?
        /// Field `subscription.keys.auth`: base64url of the 16-byte auth secret.
        public var auth: String?

        /// Makes a subscription.
        public init(endpoint: String?, p256dh: String?, auth: String?) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// The push app (field `app_id`).
    public var appID: UUID
    /// Test or live: the credential's mode (R-MODE-1).
    public var mode: Mode
    /// Field `platform`: `ios`, `android` or `web`.
    public var platform: String
    /// Field `token` (iOS, Android).
    public var token: String?
    /// Field `subscription` (web).
    public var subscription: WebSubscription?
    /// Field `user_id`.
    public var userID: String
    /// Field `apns_environment`: `sandbox` or `production`, iOS only.
    public var apnsEnvironment: String?
    /// Field `encryption_public_key`.
    public var encryptionKey: EncryptionKeyChange
    /// Accept endpoints on loopback or private addresses: for tests with a local fake only.
    public var allowLoopbackEndpoints: Bool
    /// Field `rotate_preview_token`: make the device a new preview token, invalidating the old one
    /// (issue 24 part 2; also the way out when the answer carrying a token was lost).
    public var rotatePreviewToken: Bool

    /// A request; `encryptionKey` defaults to `.keep` (the field absent).
    public init(appID: UUID, mode: Mode, platform: String, token: String? = nil, subscription: WebSubscription? = nil,
                userID: String, apnsEnvironment: String? = nil, encryptionKey: EncryptionKeyChange = .keep,
                allowLoopbackEndpoints: Bool = false, rotatePreviewToken: Bool = false) {
        self.rotatePreviewToken = rotatePreviewToken
        self.appID = appID
        self.mode = mode
        self.platform = platform
        self.token = token
        self.subscription = subscription
        self.userID = userID
        self.apnsEnvironment = apnsEnvironment
        self.encryptionKey = encryptionKey
        self.allowLoopbackEndpoints = allowLoopbackEndpoints
    }
}

/// What `AcceptanceService.registerDevice` did.
public struct DeviceRegistrationResult: Sendable, Equatable {
    /// The device as stored now: id, app id, platform, user id, apns_environment, active,
    /// encryption_key_id, created_at, last_registered_at (never the key).
    public var device: StoredDevice
    /// A new device (a new token or endpoint).
    public var created: Bool
    /// A deactivated device registered again (R-DEV-7).
    public var reactivated: Bool
    /// The user's other devices deactivated with `DEVICE_LIMIT` (R-DEV-5).
    public var evicted: [UUID]
    /// The device's new preview token (`ppt_...`), answered once: when the device was created or
    /// its token rotated; nil otherwise.
    public var previewToken: String? = nil
}

/// A new push app (R-APP-1), as `POST /v1/push/apps` and `pushfleet apps create` give it.
public struct AppCreateRequest: Sendable, Equatable {
    /// Field `name`.
    public var name: String
    /// Field `require_encryption`; nil = false (R-APP-1).
    public var requireEncryption: Bool?
    /// Field `placeholder_title`; nil = `New notification`.
    public var placeholderTitle: String?
    /// Field `placeholder_body`; nil = the empty string.
    public var placeholderBody: String?
    /// Field `placeholder_title_loc_key` (R-KIND-3); nil or empty = none.
    public var placeholderTitleLocKey: String?
    /// Field `placeholder_body_loc_key` (R-KIND-3); nil or empty = none.
    public var placeholderBodyLocKey: String?
    /// The owning account (R-API-1: the API key's); nil = the default account (sql/0008).
    public var accountID: UUID?
    /// Field `confirm_deliveries` (R-IDS-4); nil = false.
    public var confirmDeliveries: Bool? = nil
    /// Field `preview_window_seconds` (issue 24 part 4), 60 to 2,419,200; nil = 259,200 (72 h).
    public var previewWindowSeconds: Int? = nil
    /// Field `content_mode` (R-IDS-1): `sealed` or `ids_only`, as sent; nil = `sealed`.
    public var contentMode: String?

    /// Makes a request.
    public init(name: String, requireEncryption: Bool? = nil, placeholderTitle: String? = nil,
                placeholderBody: String? = nil, placeholderTitleLocKey: String? = nil, placeholderBodyLocKey: String? = nil,
                accountID: UUID? = nil, contentMode: String? = nil) {
        self.contentMode = contentMode
        self.name = name
        self.requireEncryption = requireEncryption
        self.placeholderTitle = placeholderTitle
        self.placeholderBody = placeholderBody
        self.placeholderTitleLocKey = placeholderTitleLocKey
        self.placeholderBodyLocKey = placeholderBodyLocKey
        self.accountID = accountID
    }
}

/// Changes to a push app, as `PATCH /v1/push/apps/:id` and `pushfleet apps update` give them; nil
/// leaves a field unchanged. `require_encryption` applies to notifications already queued too
/// (R-APP-2); the API lets only a live credential change it (R-API-2).
public struct AppUpdateRequest: Sendable, Equatable {
    /// Field `name`.
    public var name: String?
    /// Field `require_encryption`.
    public var requireEncryption: Bool?
    /// Field `placeholder_title`.
    public var placeholderTitle: String?
    /// Field `placeholder_body`.
    public var placeholderBody: String?
    /// Field `placeholder_title_loc_key` (R-KIND-3); the empty string removes it.
    public var placeholderTitleLocKey: String?
    /// Field `placeholder_body_loc_key` (R-KIND-3); the empty string removes it.
    public var placeholderBodyLocKey: String?
    /// Field `content_mode` (R-IDS-1): read at each notification's send time, so it applies to
    /// notifications already queued too; the API lets only a live credential change it. As sent:
    /// `sealed` or `ids_only`.
    public var contentMode: String?
    /// Who asks, for the audit log when `require_encryption` changes (issue 15 part 5): the API
    /// key's prefix, `oauth:` + a token's subject, `cli:` + a login.
    public var actor: String = AuditStore.unnamedActor
    /// Field `confirm_deliveries` (R-IDS-4).
    public var confirmDeliveries: Bool? = nil
    /// Field `preview_window_seconds` (issue 24 part 4), 60 to 2,419,200.
    public var previewWindowSeconds: Int? = nil

    /// Makes a request.
    public init(name: String? = nil, requireEncryption: Bool? = nil, placeholderTitle: String? = nil,
                placeholderBody: String? = nil, placeholderTitleLocKey: String? = nil, placeholderBodyLocKey: String? = nil,
                contentMode: String? = nil) {
        self.contentMode = contentMode
        self.name = name
        self.requireEncryption = requireEncryption
        self.placeholderTitle = placeholderTitle
        self.placeholderBody = placeholderBody
        self.placeholderTitleLocKey = placeholderTitleLocKey
        self.placeholderBodyLocKey = placeholderBodyLocKey
    }
}
