internal import COpenSSL

/// Signs compact JWS tokens (RFC 7515 §7.1) for provider authentication:
/// - ES256 (RFC 7518 §3.4) for the APNs provider token (Apple's "Establishing a token-based connection
///   to APNs") and VAPID (RFC 8292 §2): the signature is the raw 64-byte `r || s`, each half
///   left-padded to 32 bytes, never OpenSSL's DER;
/// - RS256 (RFC 7518 §3.3) for the Google service-account assertion (Google's "Using OAuth 2.0 for
///   Server to Server Applications").
///
/// Owns one OpenSSL `EVP_PKEY` (freed in `deinit`). Immutable after creation, so one signer may
/// be used from several threads at once (each call builds its own digest context).
public final class JWTSigner: @unchecked Sendable {
    /// The JWS `alg` this signer produces.
    public enum Algorithm: String, Sendable {
        /// ECDSA P-256 + SHA-256, raw r||s (64 bytes).
        case es256 = "ES256"
        /// RSASSA-PKCS1-v1_5 + SHA-256 (signature as long as the modulus).
        case rs256 = "RS256"
    }

    /// Algorithm of every token signed here.
    public let algorithm: Algorithm
    /// Key id given at load time (APNs Key ID, Google `private_key_id`), if any.
    public let keyId: String?
    /// SHA-256 of the public key's DER `SubjectPublicKeyInfo` (RFC 5280 §4.1.2.7), unpadded base64url
    /// (43 characters): `openssl pkey -pubout -outform DER | openssl dgst -sha256`. Names the signing
    /// key without revealing it, so provider token caches share a token only between holders of the
    /// same key (issue 11).
    public let publicKeyFingerprint: String
    let pkey: OpaquePointer

    private init(pkey: OpaquePointer, algorithm: Algorithm, keyId: String?, publicKeyFingerprint: String) {
        self.pkey = pkey
        self.algorithm = algorithm
        self.keyId = keyId
        self.publicKeyFingerprint = publicKeyFingerprint
    }

    /// Takes ownership of `key` (freed here if the fingerprint cannot be made).
    private static func make(_ key: OpaquePointer, _ algorithm: Algorithm, keyId: String?) throws -> JWTSigner {
        do {
            guard let spki = subjectPublicKeyInfo(key) else {
                throw JWTError.signingFailed("public key not encodable: \(drainErrors())")
            }
            let fingerprint = Base64URL.encode(try SHA256.hash(spki))
            return JWTSigner(pkey: key, algorithm: algorithm, keyId: keyId, publicKeyFingerprint: fingerprint)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
    }

    deinit { EVP_PKEY_free(pkey) }

    // MARK: - Loading

    /// Loads an APNs `.p8` key: a PKCS#8 PEM holding a P-256 private key.
    /// - Parameters:
    ///   - privateKeyPEM: the PEM text (`-----BEGIN PRIVATE KEY-----` ...).
    ///   - keyId: the 10-character APNs Key ID, echoed as `kid` by callers.
    /// - Throws: `JWTError.malformedPEM` when the text is not a readable key,
    ///   `JWTError.wrongKeyType` when it is not a P-256 EC key.
    public static func es256(privateKeyPEM: String, keyId: String) throws -> JWTSigner {
        let key = try readPrivateKey(privateKeyPEM)
        guard EVP_PKEY_is_a(key, "EC") == 1, groupName(of: key) == "prime256v1" else {
            EVP_PKEY_free(key)
            throw JWTError.wrongKeyType("ES256 needs a P-256 (prime256v1) EC key")
        }
        return try make(key, .es256, keyId: keyId)
    }

    /// Loads an RSA private key (PKCS#8 or PKCS#1 PEM), as found in a Google service-account JSON.
    /// - Parameters:
    ///   - privateKeyPEM: the PEM text.
    ///   - keyId: optional `private_key_id`.
    /// - Throws: `JWTError.malformedPEM`, or `JWTError.wrongKeyType` unless RSA of at least 2048 bits.
    public static func rs256(privateKeyPEM: String, keyId: String? = nil) throws -> JWTSigner {
        let key = try readPrivateKey(privateKeyPEM)
        guard EVP_PKEY_is_a(key, "RSA") == 1, EVP_PKEY_get_bits(key) >= 2048 else {
            EVP_PKEY_free(key)
            throw JWTError.wrongKeyType("RS256 needs an RSA key of at least 2048 bits")
        }
        return try make(key, .rs256, keyId: keyId)
    }

    // MARK: - Signing

    /// Builds the compact JWS `b64url(header).b64url(claims).b64url(signature)`.
    /// - Parameters:
    ///   - header: the exact JSON text of the protected header (e.g. `{"alg":"ES256","kid":"ABC123DEFG"}`);
    ///     the caller is responsible for `alg` matching `algorithm`.
    ///   - claims: the exact JSON text of the claims.
    /// - Returns: the token (ASCII).
    /// - Throws: `JWTError.signingFailed` if OpenSSL fails.
    public func sign(header: String, claims: String) throws -> String {
        var input = [UInt8]()
        Base64URL.appendEncoded(Array(header.utf8), to: &input)
        input.append(UInt8(ascii: "."))
        Base64URL.appendEncoded(Array(claims.utf8), to: &input)
        let signature = try signRaw(input)
        input.append(UInt8(ascii: "."))
        Base64URL.appendEncoded(signature, to: &input)
        return String(decoding: input, as: UTF8.self)
    }

    /// Signs `message` and returns the JOSE signature bytes: 64 bytes `r || s` for ES256, the
    /// PKCS#1 v1.5 block for RS256.
    /// - Throws: `JWTError.signingFailed`.
    public func signRaw(_ message: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw JWTError.signingFailed("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw JWTError.signingFailed(Self.drainErrors())
        }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else {
            throw JWTError.signingFailed(Self.drainErrors())
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &signature, &length, message, message.count) == 1 else {
            throw JWTError.signingFailed(Self.drainErrors())
        }
        signature.removeSubrange(length...)
        return algorithm == .es256 ? try Self.rawFromDER(signature) : signature
    }

    // MARK: - Verifying (tests and self-checks)

    /// Verifies a compact JWS against this signer's own public key. For ES256 only the raw
    /// 64-byte form is accepted (a DER signature is rejected, as APNs does).
    /// - Returns: true when the token has three parts and the signature is valid.
    public func verify(_ compact: String) -> Bool {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = Base64URL.decode(String(parts[2])) else { return false }
        let input = Array(compact.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        return verifyRaw(signature: signature, message: input)
    }

    /// Verifies JOSE signature bytes over `message` with this key's public half.
    public func verifyRaw(signature: [UInt8], message: [UInt8]) -> Bool {
        let blob: [UInt8]
        if algorithm == .es256 {
            guard signature.count == 64, let der = Self.derFromRaw(signature) else { return false }
            blob = der
        } else {
            blob = signature
        }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            _ = Self.drainErrors()
            return false
        }
        let ok = EVP_DigestVerify(ctx, blob, blob.count, message, message.count) == 1
        _ = Self.drainErrors()
        return ok
    }

    // MARK: - OpenSSL helpers

    private static func readPrivateKey(_ pem: String) throws -> OpaquePointer {
        let bytes = Array(pem.utf8)
        guard bytes.count < Int(Int32.max), !bytes.isEmpty else { throw JWTError.malformedPEM("empty") }
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { throw JWTError.malformedPEM(drainErrors()) }
        return key
    }

    /// The DER `SubjectPublicKeyInfo` of `key`'s public half (`i2d_PUBKEY`), nil if OpenSSL fails.
    private static func subjectPublicKeyInfo(_ key: OpaquePointer) -> [UInt8]? {
        der { i2d_PUBKEY(key, $0) }
    }

    /// Runs an OpenSSL `i2d_*` encoder twice (length, then bytes); nil if it fails or disagrees.
    private static func der(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
        let length = encode(nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buf -> Int32 in
            var p: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            return encode(&p)
        }
        return written == length ? out : nil
    }

    private static func groupName(of key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &buffer, buffer.count, &length) == 1 else {
            _ = drainErrors()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// DER `ECDSA-Sig-Value` → 64-byte `r || s` (RFC 7518 §3.4; OpenSSL's `ECDSA_SIG_get0` /
    /// `BN_bn2binpad`).
    static func rawFromDER(_ der: [UInt8]) throws -> [UInt8] {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buf.count)
        }
        guard let sig else { throw JWTError.signingFailed("DER signature unreadable") }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?, s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let written = out.withUnsafeMutableBufferPointer { buf -> (Int32, Int32) in
            guard let base = buf.baseAddress else { return (-1, -1) }
            return (BN_bn2binpad(r, base, 32), BN_bn2binpad(s, base + 32, 32))
        }
        guard written == (32, 32) else { throw JWTError.signingFailed("r or s longer than 32 bytes") }
        return out
    }

    /// 64-byte `r || s` → DER, for `EVP_DigestVerify`.
    static func derFromRaw(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + 32 }, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        return der { i2d_ECDSA_SIG(sig, $0) }
    }

    /// Empties OpenSSL's thread-local error queue, returning the first reason as text.
    private static func drainErrors() -> String {
        var first = ""
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if first.isEmpty {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                first = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return first.isEmpty ? "unknown OpenSSL error" : first
    }
}
