internal import COpenSSL

/// HMAC-SHA256 (RFC 2104, FIPS 198-1) through OpenSSL's one-shot `EVP_Q_mac`, and random bytes
/// from OpenSSL's CSPRNG. Used to sign webhooks (Standard Webhooks `v1` signatures, R-HOOK-1) and
/// to make their secrets. Safe to call from any thread.
public enum HMACSHA256 {
    /// MAC length in bytes (32).
    public static let byteCount = 32

    /// The 32-byte HMAC-SHA256 of `message` under `key` (any length, empty included).
    /// - Throws: `CryptoError` `OPENSSL_FAILURE` only if OpenSSL cannot compute it at all.
    public static func mac(key: [UInt8], message: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        var length = 0
        // An empty buffer's base address may be nil; OpenSSL wants a pointer even for length 0.
        let dummy: [UInt8] = [0]
        let ok = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                dummy.withUnsafeBufferPointer { d in
                    EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, k.baseAddress ?? d.baseAddress, k.count,
                              m.baseAddress ?? d.baseAddress, m.count, &out, out.count, &length)
                }
            }
        }
        guard ok != nil, length == byteCount else { throw CryptoError.openSSL("EVP_Q_mac(HMAC-SHA256)") }
        return out
    }

    /// Constant-time comparison of two byte strings (false when the lengths differ).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

/// Random bytes from OpenSSL's CSPRNG (`RAND_bytes`).
public enum SecureRandom {
    /// `count` random bytes (count ≥ 0).
    /// - Throws: `CryptoError` `OPENSSL_FAILURE` when the generator fails.
    public static func bytes(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, count))
        guard count > 0 else { return bytes }
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw CryptoError.openSSL("RAND_bytes") }
        return bytes
    }
}
