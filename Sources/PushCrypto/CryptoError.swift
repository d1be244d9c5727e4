internal import COpenSSL

/// A failure of a `PushCrypto` operation: a stable machine code (`code.rawValue`, e.g.
/// `POINT_NOT_ON_CURVE`) for metrics and API answers, plus a human message. The message never
/// holds key material, plaintext or ciphertext.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable error code. New codes may be added; callers should keep a default branch.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as written in logs, metrics and API answers (upper snake case).
        public let rawValue: String
        /// Wraps a code string; prefer the named constants below.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Same as `rawValue`.
        public var description: String { rawValue }

        /// A key (or key-sized input) has the wrong byte length: public keys are 65 bytes (R-DEV-3),
        /// private scalars 32, SecretBox keys 32.
        public static let invalidKeyLength = Code(rawValue: "INVALID_KEY_LENGTH")
        /// A 65-byte public key that is not in uncompressed SEC1 form (first byte not 0x04), or a
        /// coordinate not below the field prime.
        public static let invalidKeyEncoding = Code(rawValue: "INVALID_KEY_ENCODING")
        /// The coordinates do not satisfy the P-256 curve equation (R-DEV-3, RFC 9180 §7.1.4).
        public static let pointNotOnCurve = Code(rawValue: "POINT_NOT_ON_CURVE")
        /// A point (or a Diffie-Hellman result) is the point at infinity.
        public static let pointAtInfinity = Code(rawValue: "POINT_AT_INFINITY")
        /// Text that is not unpadded base64url (RFC 4648 §5).
        public static let invalidBase64URL = Code(rawValue: "INVALID_BASE64URL")
        /// A private scalar that is zero or not below the group order.
        public static let invalidPrivateKey = Code(rawValue: "INVALID_PRIVATE_KEY")
        /// RFC 9180 §7.1.3 DeriveKeyPair found no valid candidate in 256 tries (DeriveKeyPairError).
        public static let deriveKeyPairFailed = Code(rawValue: "DERIVE_KEY_PAIR_FAILED")
        /// Decryption failed: bad tag, wrong key, wrong info or aad, truncated input, bad `enc`.
        public static let openFailed = Code(rawValue: "OPEN_FAILED")
        /// An HPKE context used more sequence numbers than RFC 9180 §5.2 allows (MessageLimitReachedError).
        public static let messageLimitReached = Code(rawValue: "MESSAGE_LIMIT_REACHED")
        /// A requested output length is out of range (HKDF-Expand above 255*32 bytes, input above 2^31 bytes).
        public static let invalidLength = Code(rawValue: "INVALID_LENGTH")
        /// OpenSSL itself failed (allocation, provider missing); the message carries OpenSSL's reason.
        public static let openSSLFailure = Code(rawValue: "OPENSSL_FAILURE")
    }

    /// The stable code.
    public let code: Code
    /// Human-readable detail (no secrets).
    public let message: String

    /// Creates an error; other `PushCrypto` files (JWT signing) may add their own codes.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// Converts OpenSSL's thread-local error queue into one `OPENSSL_FAILURE` and clears the queue,
    /// so that a later, unrelated call never reports a stale reason. `what` names the failed call.
    static func openSSL(_ what: String) -> CryptoError {
        let reason = drainOpenSSLErrors()
        return CryptoError(code: .openSSLFailure, message: reason.isEmpty ? "\(what) failed" : "\(what) failed: \(reason)")
    }

    /// Builds an error of `code` and clears OpenSSL's error queue (failed parses leave entries there).
    static func cleared(_ code: Code, _ message: String) -> CryptoError {
        ERR_clear_error()
        return CryptoError(code: code, message: message)
    }
}

/// Reads and clears the calling thread's OpenSSL error queue; returns the first reason string.
func drainOpenSSLErrors() -> String {
    let first = ERR_get_error()
    var text = ""
    if first != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(first, &buffer, buffer.count)
        text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    ERR_clear_error()
    return text
}
