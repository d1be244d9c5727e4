/// Why a Web Push operation (RFC 8291 / RFC 8188 coding, subscription validation) refused its
/// input. A value with a stable `code` for programs and metrics, the offending `field` when one
/// input is to blame, and a human `message` that never contains key material or content.
///
/// Codes:
/// - `VALIDATION_ERROR`: a subscription field is malformed (`field` is `endpoint`, `p256dh` or
///   `auth`); the API answers HTTP 422 (R-DEV-1, R-DEV-3).
/// - `INVALID_PRIVATE_KEY`: a P-256 private scalar is not 32 bytes in 1...n-1.
/// - `INVALID_PARAMETER`: salt, record size or padding out of range for RFC 8188 (`field` names it).
/// - `TRUNCATED`: the body ends inside the header or a record, or misses its final record.
/// - `INVALID_HEADER`: the RFC 8188 header is inconsistent (record size, key id length).
/// - `DECRYPTION_FAILED`: an AES-GCM tag did not verify (wrong key or altered bytes).
/// - `INVALID_PADDING`: a record's delimiter is missing or not the one its position requires.
/// - `MULTIPLE_RECORDS`: a Web Push body holds more than one record (RFC 8291 §4 forbids it).
/// - `CRYPTO_FAILURE`: OpenSSL failed on valid input (out of memory or similar).
public struct WebPushError: Error, Equatable, CustomStringConvertible {
    /// Stable machine-readable code (see the type's documentation for the list).
    public let code: String
    /// Name of the input at fault (`endpoint`, `p256dh`, `auth`, `salt`, `recordSize`, `padding`), if one.
    public let field: String?
    /// Human-readable explanation; carries no key bytes and no plaintext.
    public let message: String

    init(code: String, field: String? = nil, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// `code`, then the field if any, then the message, e.g. `VALIDATION_ERROR(auth): must be 16 bytes`.
    public var description: String {
        if let field { return "\(code)(\(field)): \(message)" }
        return "\(code): \(message)"
    }

    /// A subscription field (`endpoint`, `p256dh`, `auth`) failed validation (R-DEV-1, R-DEV-3).
    public static func validation(_ field: String, _ message: String) -> WebPushError {
        WebPushError(code: "VALIDATION_ERROR", field: field, message: message)
    }

    static func invalidPrivateKey(_ message: String) -> WebPushError {
        WebPushError(code: "INVALID_PRIVATE_KEY", message: message)
    }

    static func invalidParameter(_ field: String, _ message: String) -> WebPushError {
        WebPushError(code: "INVALID_PARAMETER", field: field, message: message)
    }

    static func truncated(_ message: String) -> WebPushError {
        WebPushError(code: "TRUNCATED", message: message)
    }

    static func invalidHeader(_ message: String) -> WebPushError {
        WebPushError(code: "INVALID_HEADER", message: message)
    }

    static func decryptionFailed(record: Int) -> WebPushError {
        WebPushError(code: "DECRYPTION_FAILED", message: "authentication tag of record \(record) does not verify")
    }

    static func invalidPadding(_ message: String) -> WebPushError {
        WebPushError(code: "INVALID_PADDING", message: message)
    }

    static func multipleRecords(_ count: Int) -> WebPushError {
        WebPushError(code: "MULTIPLE_RECORDS", message: "a Web Push message has one record, this body has \(count)")
    }

    static func cryptoFailure(_ operation: String) -> WebPushError {
        WebPushError(code: "CRYPTO_FAILURE", message: "OpenSSL failed in \(operation)")
    }
}
