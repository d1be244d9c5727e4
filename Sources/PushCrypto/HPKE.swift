/// HPKE (RFC 9180) in base mode for the single suite this project uses: DHKEM(P-256, HKDF-SHA256) (kem
/// 0x0010), HKDF-SHA256 (kdf 0x0001), AES-128-GCM (aead 0x0001), assembled from OpenSSL 3.0 primitives
/// (OpenSSL 3.0 has no HPKE API; 3.2's `OSSL_HPKE_*` is not in Debian 12). One-shot API: one message
/// per setup, sequence number 0 (RFC 9180 §6.1). All functions are safe to call from several threads.
/// For the honkio envelope (fixed info, hot path) use `EnvelopeSealer`.
public enum HPKE {
    /// KEM id of DHKEM(P-256, HKDF-SHA256).
    public static let kemID: UInt16 = 0x0010
    /// KDF id of HKDF-SHA256.
    public static let kdfID: UInt16 = 0x0001
    /// AEAD id of AES-128-GCM.
    public static let aeadID: UInt16 = 0x0001
    /// Length of `enc` (Nenc, 65 bytes: an uncompressed point).
    public static let encapsulatedKeyLength = 65
    /// AEAD tag length (Nt, 16 bytes): ciphertext length = plaintext length + 16.
    public static let tagLength = 16

    /// SealBase (§6.1) with a fresh random ephemeral key.
    /// - Parameters: `info` binds the application context; `aad` is authenticated, not encrypted.
    /// - Returns: `enc` (65 bytes) and `ciphertext` (plaintext length + 16).
    /// - Throws: `CryptoError` `POINT_NOT_ON_CURVE` etc. for a corrupt recipient key, `OPENSSL_FAILURE`.
    public static func seal(plaintext: [UInt8], recipient: P256PublicKey, info: [UInt8],
                            aad: [UInt8] = []) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        try sealDeterministic(plaintext: plaintext, recipient: recipient, info: info, aad: aad, ephemeral: nil)
    }

    /// SealBase with a caller-chosen ephemeral key: deterministic, for test vectors and reproducible
    /// tools only. Never reuse an ephemeral key in production (RFC 9180 §4.1: Encap draws a fresh one).
    /// - Throws: as `seal(plaintext:recipient:info:aad:)`.
    public static func seal(plaintext: [UInt8], recipient: P256PublicKey, info: [UInt8], aad: [UInt8] = [],
                            ephemeralPrivateKey: P256PrivateKey) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        try sealDeterministic(plaintext: plaintext, recipient: recipient, info: info, aad: aad,
                              ephemeral: ephemeralPrivateKey)
    }

    /// OpenBase (§6.1): decrypts what `seal` produced.
    /// - Throws: `CryptoError` `OPEN_FAILED` on a bad tag, wrong key, wrong `info` or `aad`, a
    ///   truncated ciphertext or an `enc` that is not a valid point; `OPENSSL_FAILURE`.
    public static func open(enc: [UInt8], ciphertext: [UInt8], recipient privateKey: P256PrivateKey,
                            info: [UInt8], aad: [UInt8] = []) throws -> [UInt8] {
        var context = try setupBaseRecipient(enc: enc, privateKey: privateKey, info: info)
        return try context.open(ciphertext: ciphertext, aad: aad)
    }

    // MARK: - Internal setup (vector tests reach the full key schedule here)

    /// SetupBaseS (§5.1.1): enc and a sender context at sequence 0.
    static func setupBaseSender(recipient: P256PublicKey, info: [UInt8],
                                ephemeral: P256PrivateKey?) throws -> (enc: [UInt8], context: HPKEContext) {
        try P256ScratchPool.shared.withScratch { scratch in
            let (enc, sharedSecret) = try scratch.encapsulate(recipient: recipient.raw, ephemeral: ephemeral)
            let schedule = try scratch.keySchedule(sharedSecret: sharedSecret,
                                                   keyScheduleContext: try scratch.keyScheduleContext(info: info),
                                                   withExporter: true)
            return (enc, HPKEContext(schedule: schedule))
        }
    }

    /// SetupBaseR (§5.1.1): a recipient context at sequence 0.
    static func setupBaseRecipient(enc: [UInt8], privateKey: P256PrivateKey, info: [UInt8]) throws -> HPKEContext {
        try P256ScratchPool.shared.withScratch { scratch in
            let sharedSecret = try scratch.decapsulate(enc: enc, privateKey: privateKey)
            let schedule = try scratch.keySchedule(sharedSecret: sharedSecret,
                                                   keyScheduleContext: try scratch.keyScheduleContext(info: info),
                                                   withExporter: true)
            return HPKEContext(schedule: schedule)
        }
    }

    private static func sealDeterministic(plaintext: [UInt8], recipient: P256PublicKey, info: [UInt8], aad: [UInt8],
                                          ephemeral: P256PrivateKey?) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        var (enc, context) = try setupBaseSender(recipient: recipient, info: info, ephemeral: ephemeral)
        return (enc, try context.seal(plaintext: plaintext, aad: aad))
    }
}
