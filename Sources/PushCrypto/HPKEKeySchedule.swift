// RFC 9180 building blocks for DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode:
// labeled HKDF (§4), ExtractAndExpand (§4.1), KeySchedule (§5.1). Checked against RFC 9180 Appendix A.3.

/// Suite identifiers and labels (RFC 9180 §4, §5.1, §7.1). Constant byte strings, built once.
enum HPKELabels {
    /// `"HPKE-v1"`, the version prefix of every labeled KDF input.
    static let version = Array("HPKE-v1".utf8)
    /// KEM suite id: `"KEM" || I2OSP(0x0010, 2)`.
    static let kemSuiteID: [UInt8] = [0x4B, 0x45, 0x4D, 0x00, 0x10]
    /// HPKE suite id: `"HPKE" || kem 0x0010 || kdf 0x0001 || aead 0x0001`.
    static let hpkeSuiteID: [UInt8] = [0x48, 0x50, 0x4B, 0x45, 0x00, 0x10, 0x00, 0x01, 0x00, 0x01]
    /// HKDF's empty salt spelled as Nh zero bytes (same HMAC key after padding).
    static let zeroSalt = [UInt8](repeating: 0, count: 32)

    static let dkpPRK = Array("dkp_prk".utf8)
    static let candidate = Array("candidate".utf8)
    static let eaePRK = Array("eae_prk".utf8)
    static let sharedSecret = Array("shared_secret".utf8)
    static let pskIDHash = Array("psk_id_hash".utf8)
    static let infoHash = Array("info_hash".utf8)
    static let secret = Array("secret".utf8)
    static let key = Array("key".utf8)
    static let baseNonce = Array("base_nonce".utf8)
    static let exporter = Array("exp".utf8)
    static let export = Array("sec".utf8)

    /// Mode byte of the base mode (§5).
    static let modeBase: UInt8 = 0x00
    /// Nk, Nn, Nh, Nsecret.
    static let keyLength = 16, nonceLength = 12, hashLength = 32
}

/// The values KeySchedule derives (RFC 9180 §5.1) for one shared secret and info, base mode.
/// Test vectors compare every field; `exporterSecret` is empty when it was not asked for.
struct HPKEKeySchedule: Equatable {
    var sharedSecret: [UInt8]
    var keyScheduleContext: [UInt8]
    var secret: [UInt8]
    var key: [UInt8]
    var baseNonce: [UInt8]
    var exporterSecret: [UInt8]
}

extension P256Scratch {
    /// LabeledExtract(salt, label, ikm) = HKDF-Extract(salt, "HPKE-v1" || suite || label || ikm), 32 bytes.
    func labeledExtract(suite: [UInt8], salt: [UInt8], label: [UInt8], ikm: [UInt8]) throws -> [UInt8] {
        try hmac(key: salt, HPKELabels.version, suite, label, ikm)
    }

    /// LabeledExpand(prk, label, info, L) = HKDF-Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite || label || info, L).
    /// - Throws: `INVALID_LENGTH` when L > 255 * 32 (RFC 5869 §2.3).
    func labeledExpand(suite: [UInt8], prk: [UInt8], label: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
        guard length >= 0, length <= 255 * HPKELabels.hashLength else {
            throw CryptoError(code: .invalidLength, message: "HKDF-Expand length \(length) exceeds 8160 bytes")
        }
        let lengthPrefix: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF)]
        var output = [UInt8]()
        output.reserveCapacity(length + HPKELabels.hashLength)
        var block = [UInt8]()
        var counter: UInt8 = 1
        while output.count < length {
            block = try hmac(key: prk, block, lengthPrefix, HPKELabels.version, suite, label, info, [counter])
            output += block
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// key_schedule_context = mode || psk_id_hash || info_hash for base mode (65 bytes). It depends
    /// only on `info`, so a sealer with fixed info computes it once.
    func keyScheduleContext(info: [UInt8]) throws -> [UInt8] {
        let suite = HPKELabels.hpkeSuiteID
        let pskIDHash = try labeledExtract(suite: suite, salt: [], label: HPKELabels.pskIDHash, ikm: [])
        let infoHash = try labeledExtract(suite: suite, salt: [], label: HPKELabels.infoHash, ikm: info)
        return [HPKELabels.modeBase] + pskIDHash + infoHash
    }

    /// ExtractAndExpand(dh, kem_context) of DHKEM (§4.1): the 32-byte KEM shared secret,
    /// with kem_context = enc || pkRm.
    func kemSharedSecret(dh: [UInt8], enc: [UInt8], recipientPublicKey: [UInt8]) throws -> [UInt8] {
        let suite = HPKELabels.kemSuiteID
        let prk = try labeledExtract(suite: suite, salt: [], label: HPKELabels.eaePRK, ikm: dh)
        return try labeledExpand(suite: suite, prk: prk, label: HPKELabels.sharedSecret,
                                 info: enc + recipientPublicKey, length: HPKELabels.hashLength)
    }

    /// KeySchedule (§5.1), base mode (empty psk and psk_id), from a precomputed context.
    /// `withExporter: false` skips the exporter secret (one HMAC less per envelope).
    func keySchedule(sharedSecret: [UInt8], keyScheduleContext: [UInt8], withExporter: Bool) throws -> HPKEKeySchedule {
        let suite = HPKELabels.hpkeSuiteID
        let secret = try labeledExtract(suite: suite, salt: sharedSecret, label: HPKELabels.secret, ikm: [])
        let key = try labeledExpand(suite: suite, prk: secret, label: HPKELabels.key,
                                    info: keyScheduleContext, length: HPKELabels.keyLength)
        let nonce = try labeledExpand(suite: suite, prk: secret, label: HPKELabels.baseNonce,
                                      info: keyScheduleContext, length: HPKELabels.nonceLength)
        let exporter = withExporter
            ? try labeledExpand(suite: suite, prk: secret, label: HPKELabels.exporter,
                                info: keyScheduleContext, length: HPKELabels.hashLength)
            : []
        return HPKEKeySchedule(sharedSecret: sharedSecret, keyScheduleContext: keyScheduleContext, secret: secret,
                               key: key, baseNonce: nonce, exporterSecret: exporter)
    }

    /// Encap (§4.1) to the 65-byte `recipient`: with `ephemeral` when given (deterministic, for
    /// vectors), else a fresh random scalar. Returns enc (pkEm) and the KEM shared secret.
    /// - Throws: key errors for a corrupt recipient key, `POINT_AT_INFINITY`, `OPENSSL_FAILURE`.
    func encapsulate(recipient: [UInt8], ephemeral: P256PrivateKey?) throws -> (enc: [UInt8], sharedSecret: [UInt8]) {
        defer { clearScalar() }
        let enc: [UInt8]
        if let ephemeral {
            guard loadScalar(ephemeral.rawScalar) else {
                throw CryptoError(code: .invalidPrivateKey, message: "ephemeral scalar out of range")
            }
            enc = ephemeral.publicKey.raw
        } else {
            _ = try loadRandomScalar()
            enc = try generatorMultiple()
        }
        try loadPoint(recipient)
        let dh = try sharedSecretX()
        return (enc, try kemSharedSecret(dh: dh, enc: enc, recipientPublicKey: recipient))
    }

    /// Decap (§4.1): the KEM shared secret for `enc` under `privateKey`.
    /// - Throws: `OPEN_FAILED` when `enc` is not a valid point, `OPENSSL_FAILURE`.
    func decapsulate(enc: [UInt8], privateKey: P256PrivateKey) throws -> [UInt8] {
        defer { clearScalar() }
        do {
            try loadPoint(enc)
        } catch let error as CryptoError {
            throw CryptoError(code: .openFailed, message: "enc is not a valid P-256 point (\(error.code.rawValue))")
        }
        guard loadScalar(privateKey.rawScalar) else {
            throw CryptoError(code: .invalidPrivateKey, message: "private scalar out of range")
        }
        let dh = try sharedSecretX()
        return try kemSharedSecret(dh: dh, enc: enc, recipientPublicKey: privateKey.publicKey.raw)
    }
}
