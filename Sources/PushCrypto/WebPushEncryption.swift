/// RFC 8291 Web Push message encryption: one `aes128gcm` record (RFC 8188) keyed by ECDH between
/// a fresh sender key pair and the subscription's `p256dh`, mixed with its `auth` secret.
///
/// Body layout (R-SEND-7; RFC 8291 §4, RFC 8188 §2): `salt(16) || rs(4) || idlen(1) = 65 ||
/// sender public key(65) || AES-128-GCM(plaintext || 0x02 || 0x00*padding) || tag(16)`, so an
/// unpadded body is exactly `plaintext + 103` bytes.
///
/// Key schedule (RFC 8291 §3.3-3.4):
/// `ecdh = ECDH(as_private, ua_public)`, `PRK_key = HMAC-SHA256(auth, ecdh)`,
/// `IKM = HMAC-SHA256(PRK_key, "WebPush: info" || 0x00 || ua_public || as_public || 0x01)`,
/// then the RFC 8188 schedule with that IKM and the salt (see `WebPushContentCoding`).
public enum WebPushEncryption {
    /// Header length of a Web Push body: 16 + 4 + 1 + 65.
    public static let headerLength = 86
    /// Bytes added to an unpadded plaintext: header 86 + delimiter 1 + tag 16 (R-SEND-7).
    public static let overhead = 103
    /// Record size written by default (RFC 8291 §4 examples, and a push service's minimum body limit).
    public static let defaultRecordSize: UInt32 = 4096
    /// Length of the subscription's `auth` secret.
    public static let authSecretLength = 16

    /// Length in bytes of the body for an unpadded plaintext of `plaintextLength` bytes:
    /// `plaintextLength + 103` (R-SEND-7: Web Push bodies are not padded).
    public static func bodyLength(plaintextLength: Int) -> Int {
        plaintextLength + overhead
    }

    /// Encrypts `plaintext` for one subscription and returns the complete request body.
    ///
    /// - Parameters:
    ///   - plaintext: the message bytes.
    ///   - p256dh: the subscription's 65-byte uncompressed P-256 public key (`ua_public`).
    ///   - auth: the subscription's 16-byte authentication secret.
    ///   - recordSize: `rs` in the header; must exceed plaintext + padding + 17 (RFC 8291 §4).
    ///   - padding: zero bytes after the delimiter; the product sends 0 (R-SEND-7).
    ///   - salt: 16 bytes for tests; nil (the default) draws a fresh random salt.
    ///   - ephemeralPrivateKey: 32-byte sender scalar for tests; nil (the default) draws a fresh
    ///     key. Reusing a salt or key across messages breaks AES-GCM: never pass them in production.
    /// - Returns: `86 + plaintext.count + 1 + padding + 16` bytes.
    /// - Throws: `VALIDATION_ERROR` (field `p256dh` or `auth`), `INVALID_PRIVATE_KEY`,
    ///   `INVALID_PARAMETER` (`salt`, `recordSize`, `padding`), `CRYPTO_FAILURE`.
    public static func encrypt(plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8],
                               recordSize: UInt32 = defaultRecordSize, padding: Int = 0,
                               salt: [UInt8]? = nil, ephemeralPrivateKey: [UInt8]? = nil) throws -> [UInt8] {
        guard auth.count == authSecretLength else {
            throw WebPushError.validation("auth", "the auth secret is 16 bytes, got \(auth.count)")
        }
        guard padding >= 0 else { throw WebPushError.invalidParameter("padding", "padding cannot be negative") }
        guard Int(recordSize) > plaintext.count + padding + WebPushContentCoding.recordOverhead else {
            throw WebPushError.invalidParameter("recordSize",
                "rs \(recordSize) must exceed plaintext + padding + 17 = \(plaintext.count + padding + 17)")
        }
        let asPrivate = try ephemeralPrivateKey ?? WebPushEC.randomPrivateKey()
        let saltBytes = try salt ?? randomSalt()
        let ecdh = try WebPushEC.sharedSecret(privateKey: asPrivate, peerPublicKey: p256dh, peerField: "p256dh")
        let asPublic = try WebPushEC.publicKey(privateKey: asPrivate)
        let ikm = try inputKeyingMaterial(ecdhSecret: ecdh, auth: auth, userAgentPublicKey: p256dh,
                                          applicationServerPublicKey: asPublic)
        return try WebPushContentCoding.encrypt(plaintext: plaintext, ikm: ikm, salt: saltBytes, keyID: asPublic,
                                                recordSize: recordSize, padding: padding)
    }

    /// RFC 8291 §3.3-3.4: `HMAC-SHA256(HMAC-SHA256(auth, ecdh), key_info || 0x01)`, 32 bytes.
    static func inputKeyingMaterial(ecdhSecret: [UInt8], auth: [UInt8], userAgentPublicKey: [UInt8],
                                    applicationServerPublicKey: [UInt8]) throws -> [UInt8] {
        let prkKey = try WebPushDigest.hmacSHA256(key: auth, data: ecdhSecret)
        var keyInfo = Array("WebPush: info".utf8)
        keyInfo.append(0x00)
        keyInfo += userAgentPublicKey
        keyInfo += applicationServerPublicKey
        keyInfo.append(0x01)
        return try WebPushDigest.hmacSHA256(key: prkKey, data: keyInfo)
    }

    private static func randomSalt() throws -> [UInt8] {
        try WebPushRandom.bytes(WebPushContentCoding.saltLength)
    }
}
