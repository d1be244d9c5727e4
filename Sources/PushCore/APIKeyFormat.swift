import PushCrypto

/// The text of an API key (R-API-1, R-API-3): `mk_test_` or `mk_live_` (the key's mode, which is
/// every request's mode, R-MODE-1) followed by `randomLength` base62 characters (about 190 random
/// bits, beyond the 128 the API promises). Only `hash(_:)` of a key is stored, with
/// `displayPrefix(_:)` kept to show which key is which. A slow KDF is not needed: the key is
/// 190 random bits, not a password, and the per-request check must stay one SHA-256. Pure.
public enum APIKeyFormat {
    /// Random base62 characters after the mode prefix.
    public static let randomLength = 32
    /// The 62 characters used, in value order.
    public static let alphabet: [UInt8] = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    /// Characters of the key kept for display: the mode prefix and 6 random characters (35 of
    /// the 190 random bits).
    public static let displayPrefixLength = 14

    /// `mk_test_` or `mk_live_`.
    public static func modePrefix(_ mode: Mode) -> String { "mk_\(mode.rawValue)_" }

    /// A new key of `mode` from `generator` (callers pass `SystemRandomNumberGenerator`, which
    /// reads the kernel's CSPRNG; tests may pass a seeded one). Each character takes one byte,
    /// bytes of 248 and above are drawn again, so every character is uniform over the 62.
    public static func generate<G: RandomNumberGenerator>(mode: Mode, using generator: inout G) -> String {
        var out = Array(modePrefix(mode).utf8)
        while out.count < 8 + randomLength {
            var word = generator.next()
            for _ in 0..<8 where out.count < 8 + randomLength {
                let byte = UInt8(truncatingIfNeeded: word)
                word >>= 8
                if byte < 248 { out.append(alphabet[Int(byte % 62)]) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The mode of a well-formed key text, else nil: exactly a mode prefix and `randomLength`
    /// base62 characters. A malformed credential is refused without a database lookup.
    public static func mode(of key: String) -> Mode? {
        let bytes = Array(key.utf8)
        guard bytes.count == 8 + randomLength else { return nil }
        let mode: Mode
        if bytes.starts(with: Array(modePrefix(.test).utf8)) { mode = .test }
        else if bytes.starts(with: Array(modePrefix(.live).utf8)) { mode = .live }
        else { return nil }
        for b in bytes[8...] {
            let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
            if !ok { return nil }
        }
        return mode
    }

    /// What is stored to find a key again: SHA-256 of its UTF-8 text (32 bytes).
    /// - Throws: `CryptoError` only if OpenSSL cannot run the digest.
    public static func hash(_ key: String) throws -> [UInt8] { try SHA256.hash(utf8: key) }

    /// The first `displayPrefixLength` characters, shown by `api-keys list` and in access logs.
    public static func displayPrefix(_ key: String) -> String { String(key.prefix(displayPrefixLength)) }
}
