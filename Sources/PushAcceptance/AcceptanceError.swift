import PushCore

/// Why the acceptance service refused a request: one value type for every refusal, with a stable
/// `code`, a human `message` that never quotes content (no title, body, data, token or key), the
/// request `field` at fault and, for `PUSH_PAYLOAD_TOO_LARGE`, the content bytes to cut (R-API-5).
///
/// Codes and their HTTP answers in the API: `VALIDATION_ERROR` (422, `field` names the body field),
/// `PUSH_PAYLOAD_TOO_LARGE` (422, `bytesToCut`), `NOT_FOUND` (404), `PUSH_DEVICE_LIMIT` (409),
/// `IDEMPOTENCY_KEY_REUSED` (409), `NOT_CANCELLABLE` (409). Failures of the database itself are not
/// refusals: the service lets their `PGError` through (the API answers 503).
public struct AcceptanceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable code (`ErrorCode`'s raw value is the wire spelling).
    public let code: ErrorCode
    /// Human explanation starting with the field when there is one (`user_ids: ...`), safe to log
    /// and to answer.
    public let message: String
    /// The API's snake_case body field name (`user_ids`, `title`, `sms_fallback.phone`,
    /// `encryption_public_key`, `subscription.keys.auth`, ...), or nil when no single field is at
    /// fault. The idempotency key, a header in the API, is named `idempotency_key`.
    public let field: String?
    /// For `PUSH_PAYLOAD_TOO_LARGE`: the smallest number of content bytes to cut so the largest
    /// payload fits 4096 bytes (R-SEND-7); nil otherwise.
    public let bytesToCut: Int?

    /// Makes a refusal.
    public init(_ code: ErrorCode, _ message: String, field: String? = nil, bytesToCut: Int? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.bytesToCut = bytesToCut
    }

    /// The same refusal as a PushCore or PushStore `PushError` (its code and field; its message
    /// naming notifications, devices and apps by their prefixed ids, R-API-4, where the SQL
    /// functions wrote their UUIDs).
    public init(_ error: PushError) {
        var message = error.message
        for (kind, word) in [(IDKind.notification, "notification"), (.device, "device"), (.app, "push app")] {
            message = PrefixedID.prefixing(kind, after: word, in: message)
        }
        self.init(error.code, message, field: error.field)
    }

    /// `VALIDATION_ERROR` for `field`, message `field: why`.
    static func invalid(_ field: String, _ why: String) -> AcceptanceError {
        AcceptanceError(.validationError, "\(field): \(why)", field: field)
    }

    /// `PUSH_PAYLOAD_TOO_LARGE` from a failed size check, with its bytes to cut.
    static func tooLarge(_ check: SizeCheck) -> AcceptanceError {
        let message = check.error?.message ?? "payload is \(check.size) bytes, over the \(PayloadSizeRule.limit)-byte limit"
        return AcceptanceError(.pushPayloadTooLarge, message, bytesToCut: check.bytesToCut)
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
