internal import COpenSSL

// MARK: - HMAC-SHA256 and AES-GCM on a scratch

extension P256Scratch {
    /// HMAC-SHA256 (RFC 2104) of the concatenation of `parts` under `key`, 32 bytes. Parts are fed
    /// one by one, so callers need not build the labeled input (RFC 9180 §4) in one buffer.
    /// An empty `key` is replaced by 32 zero bytes, which HMAC treats identically (both are
    /// zero-padded to the block size), the portable spelling of HKDF's empty salt.
    /// - Throws: `OPENSSL_FAILURE`.
    func hmac(key: [UInt8], _ parts: [UInt8]...) throws -> [UInt8] {
        let effectiveKey = key.isEmpty ? HPKELabels.zeroSalt : key
        let initOK = effectiveKey.withUnsafeBufferPointer { EVP_MAC_init(macContext, $0.baseAddress, $0.count, nil) }
        guard initOK == 1 else { throw CryptoError.openSSL("EVP_MAC_init(HMAC)") }
        for part in parts where !part.isEmpty {
            let ok = part.withUnsafeBufferPointer { EVP_MAC_update(macContext, $0.baseAddress, $0.count) }
            guard ok == 1 else { throw CryptoError.openSSL("EVP_MAC_update(HMAC)") }
        }
        var out = [UInt8](repeating: 0, count: SHA256.byteCount)
        var length = 0
        guard EVP_MAC_final(macContext, &out, &length, out.count) == 1, length == out.count else {
            throw CryptoError.openSSL("EVP_MAC_final(HMAC)")
        }
        return out
    }

    /// AES-128-GCM encryption with the scratch's preselected cipher: ciphertext || 16-byte tag.
    func aes128GCMSeal(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        try AESGCM.seal(context: gcmContext, cipher: nil, key: key, nonce: nonce, aad: aad, plaintext: plaintext)
    }

    /// AES-128-GCM decryption of ciphertext || tag.
    /// - Throws: `OPEN_FAILED` on a bad tag or input shorter than the tag.
    func aes128GCMOpen(key: [UInt8], nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8]) throws -> [UInt8] {
        try AESGCM.open(context: gcmContext, cipher: nil, key: key, nonce: nonce, aad: aad, ciphertext: ciphertext)
    }
}
