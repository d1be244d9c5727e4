internal import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL. Used for device key ids (R-DEV-3) and the Web Push
/// `Topic` of long collapse keys (R-SEND-13). Safe to call from any thread.
public enum SHA256 {
    /// Digest length in bytes (32).
    public static let byteCount = 32

    /// Returns the 32-byte digest of `bytes`.
    /// - Throws: `CryptoError` `OPENSSL_FAILURE` only if OpenSSL cannot run the digest at all.
    public static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        let md = try OpenSSLAlgorithms.shared().sha256
        var out = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, md, nil)
        }
        guard ok == 1, length == UInt32(byteCount) else { throw CryptoError.openSSL("EVP_Digest(SHA256)") }
        return out
    }

    /// Digest of the UTF-8 bytes of `text`.
    /// - Throws: as `hash(_:)`.
    public static func hash(utf8 text: String) throws -> [UInt8] {
        try hash(Array(text.utf8))
    }
}
