internal import COpenSSL

/// AES-256-GCM for credentials at rest (APNs .p8 keys, FCM service accounts, VAPID keys): the
/// box is nonce(12) || ciphertext || tag(16), with a fresh random nonce per seal. The key is 32
/// bytes and comes from configuration, never from the database holding the boxes.
public enum SecretBox {
    /// Key length in bytes (32).
    public static let keyLength = 32
    /// Nonce length in bytes (12).
    public static let nonceLength = 12
    /// Tag length in bytes (16).
    public static let tagLength = 16
    /// Bytes a box adds to its plaintext (28).
    public static let overhead = nonceLength + tagLength

    /// A fresh random 32-byte key.
    /// - Throws: `OPENSSL_FAILURE`.
    public static func generateKey() throws -> [UInt8] { try randomBytes(keyLength) }

    /// Seals `plaintext`; `aad` (optional, e.g. the app id) is authenticated and must be given again to open.
    /// - Returns: nonce || ciphertext || tag (`plaintext.count + 28` bytes).
    /// - Throws: `INVALID_KEY_LENGTH` (key not 32 bytes), `OPENSSL_FAILURE`.
    public static func seal(plaintext: [UInt8], key: [UInt8], aad: [UInt8] = []) throws -> [UInt8] {
        try checkKey(key)
        let nonce = try randomBytes(nonceLength)
        let context = try CipherContext.make()
        let sealed = try AESGCM.seal(context: context.handle, cipher: OpenSSLAlgorithms.shared().aes256GCM,
                                     key: key, nonce: nonce, aad: aad, plaintext: plaintext)
        return nonce + sealed
    }

    /// Opens a box made by `seal`.
    /// - Throws: `OPEN_FAILED` when the box is shorter than 28 bytes or anything was altered (or the
    ///   key or aad differ), `INVALID_KEY_LENGTH`, `OPENSSL_FAILURE`.
    public static func open(_ box: [UInt8], key: [UInt8], aad: [UInt8] = []) throws -> [UInt8] {
        try checkKey(key)
        guard box.count >= overhead else {
            throw CryptoError(code: .openFailed, message: "secret box shorter than \(overhead) bytes")
        }
        let context = try CipherContext.make()
        return try AESGCM.open(context: context.handle, cipher: OpenSSLAlgorithms.shared().aes256GCM, key: key,
                               nonce: Array(box[..<nonceLength]), aad: aad, ciphertext: Array(box[nonceLength...]))
    }

    private static func checkKey(_ key: [UInt8]) throws {
        guard key.count == keyLength else {
            throw CryptoError(code: .invalidKeyLength, message: "SecretBox key must be \(keyLength) bytes, got \(key.count)")
        }
    }

    private static func randomBytes(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw CryptoError.openSSL("RAND_bytes") }
        return bytes
    }
}
