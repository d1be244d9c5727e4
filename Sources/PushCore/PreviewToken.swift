import PushCrypto

/// The text of a device's preview token (issue 24 part 2, R-IDS-2): `ppt_` followed by
/// `randomLength` base62 characters (about 256 random bits). `PUT /v1/push/devices` answers it once,
/// when it creates the device or rotates its token; only `hash(_:)` is stored, bound to that
/// device. The token is the credential of the preview fetch and of receipts, and of nothing else.
/// Pure.
public enum PreviewTokenFormat {
    /// The fixed prefix.
    public static let prefix = "ppt_"
    /// Random base62 characters after the prefix (43 × log2(62) ≈ 256 bits).
    public static let randomLength = 43

    /// A new token from `generator` (callers pass `SystemRandomNumberGenerator`, the kernel's
    /// CSPRNG; tests may pass a seeded one). Bytes of 248 and above are drawn again, so every
    /// character is uniform over the 62 (as `APIKeyFormat.generate`).
    public static func generate<G: RandomNumberGenerator>(using generator: inout G) -> String {
        var out = Array(prefix.utf8)
        let total = prefix.utf8.count + randomLength
        while out.count < total {
            var word = generator.next()
            for _ in 0..<8 where out.count < total {
                let byte = UInt8(truncatingIfNeeded: word)
                word >>= 8
                if byte < 248 { out.append(APIKeyFormat.alphabet[Int(byte % 62)]) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What is stored to find a token again: SHA-256 of its UTF-8 text (32 bytes). Any text hashes,
    /// a malformed one included: the preview fetch does the same lookup whatever it was sent
    /// (R-IDS-3), and a malformed text's hash matches no stored token.
    /// - Throws: `CryptoError` only if OpenSSL cannot run the digest.
    public static func hash(_ token: String) throws -> [UInt8] { try SHA256.hash(utf8: token) }
}
