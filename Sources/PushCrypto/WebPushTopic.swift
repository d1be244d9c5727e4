/// The RFC 8030 §5.4 `Topic` header for a notification's collapse key (R-SEND-13).
///
/// A topic is at most 32 characters of the base64url alphabet. The key is used as is when it
/// already is such a string (1...32 characters); otherwise (longer, empty, or with any other
/// character) the topic is the first 32 characters of base64url(SHA-256(UTF-8 key)), so equal
/// keys always give equal topics. The topic travels in clear: it reveals the key when short.
public enum WebPushTopic {
    /// Largest topic length in characters (RFC 8030 §5.4).
    public static let maximumLength = 32

    /// The topic for `collapseKey` (R-SEND-13): the key itself when it is 1...32 base64url
    /// characters, else the first 32 characters of base64url(SHA-256(key)). Always 1...32
    /// base64url characters. Throws `CRYPTO_FAILURE` only if OpenSSL cannot hash (out of memory).
    public static func topic(forCollapseKey collapseKey: String) throws -> String {
        let bytes = Array(collapseKey.utf8)
        if !bytes.isEmpty, bytes.count <= maximumLength, bytes.allSatisfy(isBase64URLCharacter) {
            return collapseKey
        }
        let digest = try WebPushDigest.sha256(bytes)
        return String(Base64URL.encode(digest).prefix(maximumLength))
    }

    /// True when `text` is a valid topic: 1...32 characters of `A-Z a-z 0-9 - _`.
    public static func isValidTopic(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return !bytes.isEmpty && bytes.count <= maximumLength && bytes.allSatisfy(isBase64URLCharacter)
    }

    private static func isBase64URLCharacter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}
