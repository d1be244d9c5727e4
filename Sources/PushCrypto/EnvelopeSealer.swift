/// Seals and opens the honkio push envelope payload (R-ENC-1): HPKE base mode,
/// DHKEM(P-256, HKDF-SHA256) / HKDF-SHA256 / AES-128-GCM, info `honkio-push-v2`, empty aad,
/// one message per envelope (sequence 0). The caller builds the envelope JSON
/// (`{"v":2,"kid":…,"enc":…,"ct":…}`, R-ENC-2) from the recipient's `kid` and the base64url of
/// `enc` and `ct`.
///
/// Thread safety: a value with only immutable constants; every call borrows per-thread OpenSSL
/// scratch state from a pool, so one sealer can be used from `DispatchQueue.concurrentPerform`.
///
/// Cost: one random scalar, one fixed-base and one variable-base `EC_POINT_mul` with encodings,
/// five HMAC-SHA256 and one AES-128-GCM pass; the key-schedule constants (suite ids,
/// `psk_id_hash`, `info_hash`) are computed once in `init`. See `CryptoBenchmark` (module PushBench).
public struct EnvelopeSealer: Sendable {
    /// The HPKE `info` of envelope v2: UTF-8 `honkio-push-v2` (R-ENC-1).
    public static let info: [UInt8] = Array("honkio-push-v2".utf8)
    /// Length of `enc` in bytes (65).
    public static let encLength = HPKE.encapsulatedKeyLength

    /// key_schedule_context for `info` (65 bytes), precomputed.
    let keyScheduleContext: [UInt8]

    /// Precomputes the constant part of the key schedule.
    /// - Throws: `OPENSSL_FAILURE` when OpenSSL's algorithms cannot be set up.
    public init() throws {
        keyScheduleContext = try P256ScratchPool.shared.withScratch { try $0.keyScheduleContext(info: Self.info) }
    }

    /// Ciphertext length for a plaintext of `plaintextLength` bytes: n + 16 (the GCM tag). PushCore's
    /// size rule (R-SEND-7) relies on this being exact.
    public static func ciphertextLength(plaintextLength: Int) -> Int { plaintextLength + HPKE.tagLength }

    /// Seals `plaintext` (the R-ENC-3 JSON bytes) to `recipient` with a fresh ephemeral key.
    /// - Returns: `enc` (65 bytes) and `ct` (`ciphertextLength(plaintextLength:)` bytes).
    /// - Throws: `CryptoError` `POINT_NOT_ON_CURVE` (or another key code) when the stored key is
    ///   corrupt, `OPENSSL_FAILURE`.
    public func seal(_ plaintext: [UInt8], to recipient: P256PublicKey) throws -> (enc: [UInt8], ct: [UInt8]) {
        try seal(plaintext, to: recipient, ephemeral: nil)
    }

    /// Same as `seal(_:to:)` with a given ephemeral key (deterministic; vector tests only).
    func seal(_ plaintext: [UInt8], to recipient: P256PublicKey,
              ephemeral: P256PrivateKey?) throws -> (enc: [UInt8], ct: [UInt8]) {
        try P256ScratchPool.shared.withScratch { scratch in
            let (enc, sharedSecret) = try scratch.encapsulate(recipient: recipient.raw, ephemeral: ephemeral)
            let schedule = try scratch.keySchedule(sharedSecret: sharedSecret, keyScheduleContext: keyScheduleContext,
                                                   withExporter: false)
            let ct = try scratch.aes128GCMSeal(key: schedule.key, nonce: schedule.baseNonce, aad: [], plaintext: plaintext)
            return (enc, ct)
        }
    }

    /// Opens an envelope's `enc` and `ct` with the device's private key (tests and tools; devices
    /// do this on the phone).
    /// - Throws: `CryptoError` `OPEN_FAILED` on any tampering, a wrong key or an invalid `enc`.
    public func open(enc: [UInt8], ct: [UInt8], with privateKey: P256PrivateKey) throws -> [UInt8] {
        try P256ScratchPool.shared.withScratch { scratch in
            let sharedSecret = try scratch.decapsulate(enc: enc, privateKey: privateKey)
            let schedule = try scratch.keySchedule(sharedSecret: sharedSecret, keyScheduleContext: keyScheduleContext,
                                                   withExporter: false)
            return try scratch.aes128GCMOpen(key: schedule.key, nonce: schedule.baseNonce, aad: [], ciphertext: ct)
        }
    }
}
