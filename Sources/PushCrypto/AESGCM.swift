internal import COpenSSL

/// AES-GCM (NIST SP 800-38D) with a 12-byte nonce and a 16-byte tag appended to the ciphertext,
/// over a caller-owned `EVP_CIPHER_CTX`. Pass `cipher` to (re)select the algorithm, or nil to keep
/// the one the context already holds (the fast path: no per-message provider setup).
enum AESGCM {
    /// Nonce length in bytes (HPKE Nn, SecretBox).
    static let nonceLength = 12
    /// Tag length in bytes (HPKE Nt).
    static let tagLength = 16

    /// Encrypts `plaintext`; returns ciphertext || tag (`plaintext.count + 16` bytes).
    /// - Throws: `INVALID_KEY_LENGTH` when `key` does not fit the selected cipher, `INVALID_LENGTH`
    ///   for inputs of 2^31 bytes or more, `OPENSSL_FAILURE`.
    static func seal(context: OpaquePointer, cipher: OpaquePointer?, key: [UInt8], nonce: [UInt8],
                     aad: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        try checkSizes(key: key, nonce: nonce, aad: aad, text: plaintext, context: context, cipher: cipher)
        guard EVP_EncryptInit_ex2(context, cipher, key, nonce, nil) == 1 else {
            throw CryptoError.openSSL("EVP_EncryptInit_ex2(AES-GCM)")
        }
        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_EncryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1 else {
                throw CryptoError.openSSL("EVP_EncryptUpdate(aad)")
            }
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        let count = plaintext.count
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var written: Int32 = 0
            if count > 0 {
                guard EVP_EncryptUpdate(context, base, &written, plaintext, Int32(count)) == 1, written == Int32(count) else {
                    return false
                }
            }
            var tail: Int32 = 0
            guard EVP_EncryptFinal_ex(context, base + count, &tail) == 1, tail == 0 else { return false }
            return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), base + count) == 1
        }
        guard ok else { throw CryptoError.openSSL("AES-GCM encryption") }
        return out
    }

    /// Decrypts ciphertext || tag and checks the tag.
    /// - Throws: `OPEN_FAILED` on a bad tag or an input shorter than the tag, `INVALID_KEY_LENGTH`,
    ///   `INVALID_LENGTH`, `OPENSSL_FAILURE`.
    static func open(context: OpaquePointer, cipher: OpaquePointer?, key: [UInt8], nonce: [UInt8],
                     aad: [UInt8], ciphertext: [UInt8]) throws -> [UInt8] {
        guard ciphertext.count >= tagLength else {
            throw CryptoError(code: .openFailed, message: "ciphertext shorter than the \(tagLength)-byte tag")
        }
        try checkSizes(key: key, nonce: nonce, aad: aad, text: ciphertext, context: context, cipher: cipher)
        guard EVP_DecryptInit_ex2(context, cipher, key, nonce, nil) == 1 else {
            throw CryptoError.openSSL("EVP_DecryptInit_ex2(AES-GCM)")
        }
        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1 else {
                throw CryptoError.openSSL("EVP_DecryptUpdate(aad)")
            }
        }
        let count = ciphertext.count - tagLength
        var tag = Array(ciphertext[count...])
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            var written: Int32 = 0
            if count > 0 {
                guard let base = buffer.baseAddress,
                      EVP_DecryptUpdate(context, base, &written, ciphertext, Int32(count)) == 1, written == Int32(count) else {
                    return false
                }
            }
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else { return false }
            var tail: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)
            return EVP_DecryptFinal_ex(context, &scratch, &tail) > 0
        }
        guard ok else {
            out.withUnsafeMutableBufferPointer { buffer in
                for index in buffer.indices { buffer[index] = 0 }
            }
            throw CryptoError.cleared(.openFailed, "authentication failed (bad tag, key, nonce or aad)")
        }
        return out
    }

    private static func checkSizes(key: [UInt8], nonce: [UInt8], aad: [UInt8], text: [UInt8],
                                   context: OpaquePointer, cipher: OpaquePointer?) throws {
        let expectedKey = cipher.map { Int(EVP_CIPHER_get_key_length($0)) } ?? Int(EVP_CIPHER_CTX_get_key_length(context))
        guard key.count == expectedKey else {
            throw CryptoError(code: .invalidKeyLength, message: "AES-GCM key must be \(expectedKey) bytes, got \(key.count)")
        }
        guard nonce.count == nonceLength else {
            throw CryptoError(code: .invalidLength, message: "AES-GCM nonce must be \(nonceLength) bytes, got \(nonce.count)")
        }
        guard aad.count < Int(Int32.max), text.count < Int(Int32.max) - tagLength else {
            throw CryptoError(code: .invalidLength, message: "AES-GCM input too long")
        }
    }
}

/// Owns one `EVP_CIPHER_CTX` (for callers without a scratch, e.g. SecretBox); freed in `deinit`.
final class CipherContext {
    /// The context; use it only while this object is alive (don't escape it).
    let handle: OpaquePointer

    private init(handle: OpaquePointer) { self.handle = handle }

    deinit { EVP_CIPHER_CTX_free(handle) }

    /// Allocates a context.
    /// - Throws: `OPENSSL_FAILURE`.
    static func make() throws -> CipherContext {
        guard let handle = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("EVP_CIPHER_CTX_new") }
        return CipherContext(handle: handle)
    }
}
