internal import COpenSSL

// OpenSSL building blocks of the Web Push coding (RFC 8291, RFC 8188): P-256 points and ECDH
// through EC_GROUP/EC_POINT (not deprecated in 3.0, and the fast path: see docs/bench.md),
// HMAC-SHA256, SHA-256 and AES-128-GCM. Internal to PushCrypto; names carry the `WebPush` prefix
// so they never collide with the HPKE or JWT code of the same module.

// MARK: - Handle owner

/// Owns one OpenSSL object (EC_GROUP, EC_POINT, BIGNUM, BN_CTX, EVP_CIPHER_CTX, EVP_CIPHER) and
/// frees it in `deinit`. `pointer` must not escape the owner's lifetime.
/// `@unchecked Sendable`: a handle is either local to one call, or (the curve and the fetched
/// cipher) created once and only read afterwards, which OpenSSL allows from any thread.
final class WebPushCHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    private let release: (OpaquePointer) -> Void

    private init(pointer: OpaquePointer, release: @escaping (OpaquePointer) -> Void) {
        self.pointer = pointer
        self.release = release
    }

    /// Wraps `pointer`, or throws `CRYPTO_FAILURE` naming `operation` when OpenSSL returned NULL.
    static func make(_ pointer: OpaquePointer?, _ operation: String,
                     release: @escaping (OpaquePointer) -> Void) throws -> WebPushCHandle {
        guard let pointer else { throw WebPushError.cryptoFailure(operation) }
        return WebPushCHandle(pointer: pointer, release: release)
    }

    deinit { release(pointer) }
}

// MARK: - P-256

/// P-256 arithmetic for Web Push: point validation, public key from a scalar, ECDH.
enum WebPushEC {
    /// Length of an uncompressed SEC1 point: 0x04 || x(32) || y(32).
    static let pointLength = 65
    /// Length of a private scalar and of the ECDH shared secret (the x coordinate).
    static let scalarLength = 32

    /// The curve, built once: OpenSSL only reads a group during arithmetic, so sharing it
    /// between threads is safe.
    private static let group: WebPushCHandle? = try? WebPushCHandle.make(
        EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1), "EC_GROUP_new_by_curve_name") { EC_GROUP_free($0) }

    private static func curve() throws -> OpaquePointer {
        guard let group else { throw WebPushError.cryptoFailure("EC_GROUP_new_by_curve_name") }
        return group.pointer
    }

    private static func bnContext() throws -> WebPushCHandle {
        try WebPushCHandle.make(BN_CTX_new(), "BN_CTX_new") { BN_CTX_free($0) }
    }

    /// Decodes a 65-byte uncompressed point, or returns nil when it is not exactly that form or
    /// not on the curve (the point at infinity has no 65-byte form).
    static func decodePoint(_ bytes: [UInt8]) throws -> WebPushCHandle? {
        guard bytes.count == pointLength, bytes[0] == 0x04 else { return nil }
        let g = try curve()
        let ctx = try bnContext()
        let point = try WebPushCHandle.make(EC_POINT_new(g), "EC_POINT_new") { EC_POINT_free($0) }
        let decoded = bytes.withUnsafeBufferPointer {
            EC_POINT_oct2point(g, point.pointer, $0.baseAddress, $0.count, ctx.pointer)
        }
        guard decoded == 1, EC_POINT_is_on_curve(g, point.pointer, ctx.pointer) == 1,
              EC_POINT_is_at_infinity(g, point.pointer) == 0 else {
            ERR_clear_error()
            return nil
        }
        return point
    }

    /// True when `bytes` is a 65-byte uncompressed point on P-256 (R-DEV-3 shape).
    static func isValidPublicKey(_ bytes: [UInt8]) -> Bool {
        (try? decodePoint(bytes)) != nil
    }

    /// Decodes a private scalar: exactly 32 big-endian bytes, in 1...n-1.
    /// Throws `INVALID_PRIVATE_KEY` otherwise.
    private static func decodeScalar(_ bytes: [UInt8]) throws -> WebPushCHandle {
        guard bytes.count == scalarLength else {
            throw WebPushError.invalidPrivateKey("a P-256 private key is 32 bytes, got \(bytes.count)")
        }
        let g = try curve()
        let bn = try WebPushCHandle.make(
            bytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) },
            "BN_bin2bn") { BN_clear_free($0) }
        guard let order = EC_GROUP_get0_order(g) else { throw WebPushError.cryptoFailure("EC_GROUP_get0_order") }
        guard BN_is_zero(bn.pointer) == 0, BN_cmp(bn.pointer, order) < 0 else {
            throw WebPushError.invalidPrivateKey("a P-256 private key must lie in 1...n-1")
        }
        return bn
    }

    private static func encode(_ point: OpaquePointer, _ ctx: WebPushCHandle) throws -> [UInt8] {
        let g = try curve()
        var out = [UInt8](repeating: 0, count: pointLength)
        let written = out.withUnsafeMutableBufferPointer {
            EC_POINT_point2oct(g, point, POINT_CONVERSION_UNCOMPRESSED, $0.baseAddress, $0.count, ctx.pointer)
        }
        guard written == pointLength else { throw WebPushError.cryptoFailure("EC_POINT_point2oct") }
        return out
    }

    /// The 65-byte uncompressed public point of a 32-byte private scalar.
    /// Throws `INVALID_PRIVATE_KEY` for a scalar outside 1...n-1.
    static func publicKey(privateKey: [UInt8]) throws -> [UInt8] {
        let g = try curve()
        let d = try decodeScalar(privateKey)
        let ctx = try bnContext()
        let point = try WebPushCHandle.make(EC_POINT_new(g), "EC_POINT_new") { EC_POINT_free($0) }
        guard EC_POINT_mul(g, point.pointer, d.pointer, nil, nil, ctx.pointer) == 1 else {
            throw WebPushError.cryptoFailure("EC_POINT_mul")
        }
        return try encode(point.pointer, ctx)
    }

    /// A fresh random private scalar in 1...n-1 (RAND_bytes, retried on the ~2^-32 chance
    /// of an out-of-range draw).
    static func randomPrivateKey() throws -> [UInt8] {
        for _ in 0..<8 {
            let bytes = try WebPushRandom.bytes(scalarLength)
            if (try? decodeScalar(bytes)) != nil { return bytes }
        }
        throw WebPushError.cryptoFailure("RAND_bytes (no valid scalar)")
    }

    /// ECDH: the 32-byte x coordinate of `privateKey` times `peerPublicKey`.
    /// Throws `VALIDATION_ERROR(field: peerField)` for a peer that is not a valid point and
    /// `INVALID_PRIVATE_KEY` for a bad scalar.
    static func sharedSecret(privateKey: [UInt8], peerPublicKey: [UInt8], peerField: String) throws -> [UInt8] {
        guard let peer = try decodePoint(peerPublicKey) else {
            throw WebPushError.validation(peerField, "not an uncompressed P-256 point on the curve (65 bytes, 0x04 first)")
        }
        let g = try curve()
        let d = try decodeScalar(privateKey)
        let ctx = try bnContext()
        let product = try WebPushCHandle.make(EC_POINT_new(g), "EC_POINT_new") { EC_POINT_free($0) }
        let x = try WebPushCHandle.make(BN_new(), "BN_new") { BN_clear_free($0) }
        guard EC_POINT_mul(g, product.pointer, nil, peer.pointer, d.pointer, ctx.pointer) == 1,
              EC_POINT_is_at_infinity(g, product.pointer) == 0,
              EC_POINT_get_affine_coordinates(g, product.pointer, x.pointer, nil, ctx.pointer) == 1 else {
            throw WebPushError.cryptoFailure("ECDH")
        }
        var out = [UInt8](repeating: 0, count: scalarLength)
        let n = out.withUnsafeMutableBufferPointer { BN_bn2binpad(x.pointer, $0.baseAddress, Int32($0.count)) }
        guard n == scalarLength else { throw WebPushError.cryptoFailure("BN_bn2binpad") }
        return out
    }
}

// MARK: - Randomness

/// Cryptographically secure random bytes from OpenSSL's DRBG.
enum WebPushRandom {
    /// `count` random bytes; throws `CRYPTO_FAILURE` if the generator fails.
    static func bytes(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard ok == 1 else { throw WebPushError.cryptoFailure("RAND_bytes") }
        return out
    }
}

// MARK: - Digests

/// HMAC-SHA256 and SHA-256, one-shot.
enum WebPushDigest {
    /// HMAC-SHA256(key, data), 32 bytes; `key` must not be empty (all callers pass 16 or 32 bytes).
    static func hmacSHA256(key: [UInt8], data: [UInt8]) throws -> [UInt8] {
        guard !key.isEmpty else { throw WebPushError.cryptoFailure("HMAC (empty key)") }
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), d.baseAddress, d.count, o.baseAddress, &length)
                }
            }
        }
        guard result != nil, length == 32 else { throw WebPushError.cryptoFailure("HMAC") }
        return out
    }

    /// SHA-256 of `data`, 32 bytes.
    static func sha256(_ data: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o in
                EVP_Digest(d.baseAddress, d.count, o.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        guard ok == 1, length == 32 else { throw WebPushError.cryptoFailure("EVP_Digest") }
        return out
    }
}

// MARK: - AES-128-GCM

/// AES-128-GCM with a 12-byte nonce, empty AAD and a 16-byte tag appended to the ciphertext.
enum WebPushAESGCM {
    static let tagLength = 16

    /// Fetched once (a fetch per message costs a provider lookup); read-only afterwards.
    private static let cipher: WebPushCHandle? = try? WebPushCHandle.make(
        EVP_CIPHER_fetch(nil, "AES-128-GCM", nil), "EVP_CIPHER_fetch") { EVP_CIPHER_free($0) }

    private static func context(key: [UInt8], nonce: [UInt8], encrypt: Bool) throws -> WebPushCHandle {
        guard key.count == 16, nonce.count == 12, let cipher else {
            throw WebPushError.cryptoFailure("AES-128-GCM setup")
        }
        let ctx = try WebPushCHandle.make(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new") { EVP_CIPHER_CTX_free($0) }
        let ok = key.withUnsafeBufferPointer { k in
            nonce.withUnsafeBufferPointer { n in
                EVP_CipherInit_ex(ctx.pointer, cipher.pointer, nil, k.baseAddress, n.baseAddress, encrypt ? 1 : 0)
            }
        }
        guard ok == 1 else { throw WebPushError.cryptoFailure("EVP_CipherInit_ex") }
        return ctx
    }

    /// Encrypts `plaintext` (non-empty) and returns ciphertext || tag (plaintext.count + 16 bytes).
    static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        let ctx = try context(key: key, nonce: nonce, encrypt: true)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var written: Int32 = 0, final: Int32 = 0
        let ok = plaintext.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { o -> Bool in
                guard EVP_EncryptUpdate(ctx.pointer, o.baseAddress, &written, p.baseAddress, Int32(p.count)) == 1,
                      EVP_EncryptFinal_ex(ctx.pointer, o.baseAddress.map { $0 + Int(written) }, &final) == 1,
                      Int(written + final) == p.count else { return false }
                return EVP_CIPHER_CTX_ctrl(ctx.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagLength),
                                           o.baseAddress.map { UnsafeMutableRawPointer($0 + p.count) }) == 1
            }
        }
        guard ok else { throw WebPushError.cryptoFailure("AES-128-GCM encrypt") }
        return out
    }

    /// Decrypts ciphertext || tag; returns nil when the tag does not verify (or the input is
    /// shorter than a tag plus one byte).
    static func open(key: [UInt8], nonce: [UInt8], sealed: ArraySlice<UInt8>) throws -> [UInt8]? {
        guard sealed.count > tagLength else { return nil }
        let ctx = try context(key: key, nonce: nonce, encrypt: false)
        let bodyCount = sealed.count - tagLength
        var out = [UInt8](repeating: 0, count: bodyCount)
        var written: Int32 = 0, final: Int32 = 0
        let ok = sealed.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o -> Bool in
                guard let base = s.baseAddress,
                      EVP_DecryptUpdate(ctx.pointer, o.baseAddress, &written, base, Int32(bodyCount)) == 1,
                      EVP_CIPHER_CTX_ctrl(ctx.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagLength),
                                          UnsafeMutableRawPointer(mutating: base + bodyCount)) == 1 else { return false }
                return EVP_DecryptFinal_ex(ctx.pointer, o.baseAddress.map { $0 + Int(written) }, &final) == 1
            }
        }
        guard ok else {
            ERR_clear_error()
            return nil
        }
        return out
    }
}
