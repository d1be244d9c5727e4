/// Stable error codes written on deliveries, notifications, refusals and API answers.
///
/// The raw value is the wire and database spelling and never changes once released
/// (docs/rules.md: R-SEND-5..9, R-PRV-1..3, R-DEV-3..6, R-APP-4). New codes are added, never renamed.
public enum ErrorCode: String, Sendable, Hashable, CaseIterable, Codable {
    /// R-SEND-5: the device has no key while the notification requires encryption.
    case encryptionKeyMissing = "ENCRYPTION_KEY_MISSING"
    /// R-SEND-7: the final provider payload would exceed 4096 bytes (ours or the provider's verdict).
    case pushPayloadTooLarge = "PUSH_PAYLOAD_TOO_LARGE"
    /// R-SEND-6: the audience was empty at send time.
    case noDevices = "NO_DEVICES"
    /// R-SEND-6: no targeted device could be sent to, for mixed reasons.
    case allDevicesRefused = "ALL_DEVICES_REFUSED"
    /// R-SEND-2: charged at acceptance, no longer targeted at send time.
    case deviceGone = "DEVICE_GONE"
    /// R-SEND-10: could not be sent before the notification expired.
    case expired = "EXPIRED"
    /// R-APP-4, R-PRV-2/3: the credential set needed is invalid.
    case credentialsInvalid = "CREDENTIALS_INVALID"
    /// R-PRV-2: the token belongs to another app (device or credentials to blame).
    case appMismatch = "APP_MISMATCH"
    /// R-PRV-1: the provider says the token is no longer valid.
    case unregistered = "UNREGISTERED"
    /// R-PRV-1: the provider says the token is malformed.
    case invalidToken = "INVALID_TOKEN"
    /// R-SEND-12: transient failures used up every attempt.
    case retriesExhausted = "RETRIES_EXHAUSTED"
    /// Input refused at acceptance or registration (HTTP 422), e.g. a key off the curve (R-DEV-3).
    case validationError = "VALIDATION_ERROR"
    /// A stored device key or kid is corrupt (not 65 bytes starting 0x04, or a kid not 16 characters).
    case invalidDeviceKey = "INVALID_DEVICE_KEY"
    /// The stored platform is none of `ios`, `android`, `web`.
    case unknownPlatform = "UNKNOWN_PLATFORM"
    /// The notification's `data` is not a JSON object (or is not valid JSON).
    case invalidData = "INVALID_DATA"
    /// The provider gave an answer the answer table does not know; the raw reason is kept in the message.
    case providerError = "PROVIDER_ERROR"
    /// The notification or delivery was cancelled before it was sent.
    case cancelled = "CANCELLED"
    /// R-DEV-5: deactivation reason when a user's 21st device displaces the oldest.
    case deviceLimit = "DEVICE_LIMIT"
    /// R-DEV-6: the app holds the maximum number of active devices (HTTP 409).
    case pushDeviceLimit = "PUSH_DEVICE_LIMIT"
    /// A sealed envelope does not match the plan it is rendered into (wrong kid or lengths): a bug, never sent.
    case envelopeMismatch = "ENVELOPE_MISMATCH"
    /// The app, notification or device named does not exist (or the app was deleted).
    case notFound = "NOT_FOUND"
    /// A web device's subscription is malformed at send time (R-DEV-1, issue 7).
    case invalidSubscription = "INVALID_SUBSCRIPTION"
    /// A stored iOS or Android device that R-DEV-1 would refuse (a token outside `A-Z a-z 0-9 _ : . -`
    /// or over 512 characters, an iOS device without `apns_environment`): written past the registry,
    /// it fails its delivery at send time (refunded, no provider call, the device untouched).
    case invalidStoredDevice = "INVALID_STORED_DEVICE"
    /// R-API-5: an idempotency key replayed with content other than its first notification's
    /// (every field but `send_at` compared; HTTP 409).
    case idempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
    /// The notification's send time has come or it is final: it can no longer be cancelled (HTTP 409).
    case notCancellable = "NOT_CANCELLABLE"
    /// R-SMS-1: the SMS provider refused the message for good (an invalid or unreachable number, a
    /// sender it does not allow); the provider's own code is kept beside it (Twilio 21211, 21612...).
    case smsRejected = "SMS_REJECTED"
    /// R-DEV-2 *(product decision)*: a token registered again with another platform. A token is one
    /// provider's (APNs or FCM), so the device is not silently moved to the other (HTTP 409).
    case tokenPlatformConflict = "TOKEN_PLATFORM_CONFLICT"
}

/// An error as a value: a stable `code` plus a human `message` (never content, keys or full tokens),
/// and, for a refused request field, that field's name.
///
/// Thrown by the JSON parser (`INVALID_DATA`), `PayloadTemplate.render` (`ENVELOPE_MISMATCH`),
/// `DeviceRegistration.validate` (`VALIDATION_ERROR` with `field`) and carried by planner refusals
/// and answer-table outcomes.
public struct PushError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable machine-readable code.
    public let code: ErrorCode
    /// Human explanation, safe to log and to return to the API caller.
    public let message: String
    /// The request field at fault, as the API's snake_case body field name (`user_id`,
    /// `subscription.keys.p256dh`, ...); nil when the error is not about one field.
    public let field: String?

    /// Makes an error from its code and message, naming `field` when one field is at fault.
    public init(_ code: ErrorCode, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
