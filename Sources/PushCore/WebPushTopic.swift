import PushCrypto

/// The Web Push `Topic` header for a collapse key (R-SEND-13, RFC 8030 §5.4: at most 32
/// base64url characters).
public enum WebPushTopic {
    /// Longest topic RFC 8030 allows, in characters.
    public static let maxLength = 32

    /// The key itself when it is at most 32 base64url characters, otherwise the first 32
    /// characters of base64url(SHA-256(key UTF-8)). `sha256` is passed in (PushCrypto's digest)
    /// so that this stays pure; it must return the 32-byte digest.
    public static func topic(collapseKey: String, sha256: ([UInt8]) -> [UInt8]) -> String {
        let utf8 = collapseKey.utf8
        if utf8.count <= maxLength && utf8.allSatisfy(isBase64URL) { return collapseKey }
        return String(Base64URL.encode(sha256(Array(utf8))).prefix(maxLength))
    }

    private static func isBase64URL(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): return true
        default: return false
        }
    }
}
