import Foundation
import PushCore

/// Every bound the acceptance path puts on a request (R-LIM-1), listed in the README. The SQL
/// functions of sql/0006 and sql/0011 enforce the same numbers at the storage boundary for every
/// caller; this service checks them first so a refusal names its field before anything is read or
/// written (`FieldBoundsTests` and `KindBoundsTests` probe both sides at each boundary).
///
/// Sizes are UTF-8 bytes; "characters" are Unicode scalars, as PostgreSQL's `char_length` counts
/// them. The fields that travel in clear beside an encrypted iOS payload (the placeholder or its
/// loc keys, badge, sound or the critical sound, thread id, the presentation fields of R-KIND-2)
/// are measured as escaped in the JSON payload and together leave at least
/// `minimumEncryptedIOSContentBytes` of sealed content (2,523 at their bounds, `AcceptanceLimitsTests`).
public enum AcceptanceLimits {
    /// User ids per notification.
    public static let maxUserIDs = 1_000
    /// Characters of a user id (R-DEV-1).
    public static let maxUserIDCharacters = DeviceRegistration.maxUserIDLength
    /// Device ids narrowing a notification, when given (at least one).
    public static let maxDeviceIDs = 1_000
    /// Bytes of a notification's `data` JSON text (the content rule bounds what it measures).
    public static let maxDataTextBytes = 65_536
    /// Badge values.
    public static let badge = 0...2_147_483_647
    /// Bytes of `sound`, as escaped in the JSON payload.
    public static let maxSoundBytes = 64
    /// Bytes of `thread_id`, as escaped in the JSON payload.
    public static let maxThreadIDBytes = 64
    /// Bytes of `category` (R-KIND-2), as escaped in the JSON payload; at least 1.
    public static let maxCategoryBytes = 64
    /// Bytes of `target_content_id` (R-KIND-2), as escaped in the JSON payload; at least 1.
    public static let maxTargetContentIDBytes = 64
    /// Bytes of `critical_sound.name` (R-KIND-2), as escaped in the JSON payload; at least 1.
    public static let maxCriticalSoundNameBytes = 64
    /// Bytes, as escaped in the JSON payload, of `sound` (or `critical_sound.name`), `thread_id`,
    /// `category` and `target_content_id` together: the notification's texts in clear in `aps`.
    public static let maxClearTextBytes = 128
    /// Decimal places of `relevance_score` and `critical_sound.volume` (0 to 1; `UnitFraction`).
    public static let maxFractionDecimals = 4
    /// Bytes of `title_loc_key` and `body_loc_key` (R-KIND-3); at least 1.
    public static let maxLocKeyBytes = 256
    /// Strings in `title_loc_args` and in `body_loc_args` (R-KIND-3).
    public static let maxLocArgs = 16
    /// Bytes of one loc argument (the 4096-byte rule bounds them all together).
    public static let maxLocArgBytes = 1_024
    /// Bytes of `channel_id` (Android); at least 1.
    public static let maxChannelIDBytes = 128
    /// Bytes of `collapse_key` (R-SEND-13; it travels in a header, so no control character).
    public static let maxCollapseKeyBytes = NotificationContent.maxCollapseKeyBytes
    /// `ttl` seconds (R-SEND-10).
    public static let ttlSeconds = 0...2_419_200
    /// An app's `preview_window_seconds` (R-IDS-2, issue 24 part 4): 60 s to 28 days. Checked here
    /// before the value reaches PostgreSQL, whose `int` parameter would refuse a number past
    /// 2^31 - 1 as a data error, not as this field's bound (`push_app_set_preview` keeps the same
    /// bound for its direct callers).
    public static let previewWindowSeconds = 60...2_419_200
    /// How far before the acceptance `send_at` may lie (an earlier one is a client's mistake).
    public static let sendAtEarliest: TimeInterval = 30 * 86_400
    /// How far after the acceptance `send_at` may lie.
    public static let sendAtLatest: TimeInterval = 365 * 86_400
    /// Characters of an idempotency key (R-SEND-1).
    public static let maxIdempotencyKeyCharacters = 255
    /// Characters of the SMS fallback's phone number: an E.164 number (R-SMS-1, `SMSText.isE164`)
    /// has a `+` and at most 15 digits.
    public static let maxSMSPhoneCharacters = 16
    /// Characters of the SMS fallback's text (`SMSText.maxTextCharacters`).
    public static let maxSMSTextCharacters = SMSText.maxTextCharacters
    /// Characters of an app name.
    public static let maxAppNameCharacters = 200
    /// Bytes of `placeholder_title`, as escaped in the JSON payload (128 until sql/0011).
    public static let maxPlaceholderTitleBytes = 96
    /// Bytes of `placeholder_body`, as escaped in the JSON payload (128 until sql/0011).
    public static let maxPlaceholderBodyBytes = 96
    /// Bytes of `placeholder_title_loc_key` and `placeholder_body_loc_key` (R-KIND-3), as escaped.
    public static let maxPlaceholderLocKeyBytes = 96
    /// Sealed content bytes an encrypted iOS push always has room for, whatever the app's
    /// placeholders and the notification's clear fields (R-LIM-1): at least 2,500.
    public static let minimumEncryptedIOSContentBytes = 2_500

    /// UTF-8 bytes of `s` as escaped in a JSON string (R-ENC-9), the measure of the clear fields.
    public static func jsonTextBytes(_ s: String) -> Int { JSONWriter.quotedLength(s) - 2 }

    /// Characters of `s` as PostgreSQL counts them (`char_length`: Unicode scalars).
    public static func characters(_ s: String) -> Int { s.unicodeScalars.count }
}
