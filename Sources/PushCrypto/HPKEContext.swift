/// An HPKE encryption context after setup (RFC 9180 §5.2): key, base nonce, exporter secret and
/// the sequence number. Internal: the product seals one message per envelope (R-ENC-1); this
/// type exists so the official vectors (257 sequenced encryptions, exports) are checked exactly.
struct HPKEContext {
    /// Every value of the key schedule that produced this context.
    let schedule: HPKEKeySchedule
    /// Next sequence number.
    private(set) var sequence: UInt64 = 0

    init(schedule: HPKEKeySchedule) { self.schedule = schedule }

    /// nonce(seq) = base_nonce XOR I2OSP(seq, Nn) (§5.2).
    func nonce(sequence seq: UInt64) -> [UInt8] {
        var nonce = schedule.baseNonce
        var value = seq
        var index = nonce.count - 1
        while value != 0 && index >= 0 {
            nonce[index] ^= UInt8(value & 0xFF)
            value >>= 8
            index -= 1
        }
        return nonce
    }

    /// ContextS.Seal(aad, pt): encrypts with the current nonce, then advances the sequence.
    /// - Throws: `MESSAGE_LIMIT_REACHED`, `OPENSSL_FAILURE`.
    mutating func seal(plaintext: [UInt8], aad: [UInt8]) throws -> [UInt8] {
        let nonce = try currentNonceAndAdvance()
        return try P256ScratchPool.shared.withScratch {
            try $0.aes128GCMSeal(key: schedule.key, nonce: nonce, aad: aad, plaintext: plaintext)
        }
    }

    /// ContextR.Open(aad, ct): decrypts with the current nonce; advances the sequence on success only.
    /// - Throws: `OPEN_FAILED`, `MESSAGE_LIMIT_REACHED`, `OPENSSL_FAILURE`.
    mutating func open(ciphertext: [UInt8], aad: [UInt8]) throws -> [UInt8] {
        guard sequence < UInt64.max else { throw Self.limitError }
        let nonce = nonce(sequence: sequence)
        let plaintext = try P256ScratchPool.shared.withScratch {
            try $0.aes128GCMOpen(key: schedule.key, nonce: nonce, aad: aad, ciphertext: ciphertext)
        }
        sequence += 1
        return plaintext
    }

    /// Context.Export(exporter_context, L) = LabeledExpand(exporter_secret, "sec", ctx, L) (§5.3).
    /// - Throws: `INVALID_LENGTH` for L > 8160, `OPENSSL_FAILURE`.
    func export(context: [UInt8], length: Int) throws -> [UInt8] {
        try P256ScratchPool.shared.withScratch {
            try $0.labeledExpand(suite: HPKELabels.hpkeSuiteID, prk: schedule.exporterSecret,
                                 label: HPKELabels.export, info: context, length: length)
        }
    }

    private mutating func currentNonceAndAdvance() throws -> [UInt8] {
        guard sequence < UInt64.max else { throw Self.limitError }
        let nonce = nonce(sequence: sequence)
        sequence += 1
        return nonce
    }

    private static let limitError = CryptoError(code: .messageLimitReached, message: "HPKE sequence number exhausted")
}
