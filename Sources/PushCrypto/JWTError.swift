/// Why a JWT key could not be loaded or a token could not be signed. A value with a stable
/// `code` (for logs and metric labels) and a human `message`; never carries key material.
public struct JWTError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Stable machine code, e.g. `jwt.malformed_pem`.
    public let code: String
    /// Human explanation (no key bytes, no token).
    public let message: String

    /// The PEM text could not be parsed as a PKCS#8 / traditional private key.
    public static func malformedPEM(_ detail: String) -> JWTError {
        JWTError(code: "jwt.malformed_pem", message: "private key PEM could not be read: \(detail)")
    }

    /// The key parsed but is not of the kind the algorithm needs (P-256 for ES256, RSA >= 2048 for RS256).
    public static func wrongKeyType(_ detail: String) -> JWTError {
        JWTError(code: "jwt.wrong_key_type", message: detail)
    }

    /// OpenSSL failed while signing (should not happen with a valid key).
    public static func signingFailed(_ detail: String) -> JWTError {
        JWTError(code: "jwt.signing_failed", message: "signing failed: \(detail)")
    }

    public var description: String { "\(code): \(message)" }
}
