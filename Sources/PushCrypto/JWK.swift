internal import COpenSSL

/// A public signing key from a JSON Web Key Set (RFC 7517 §4, RFC 7518 §6), for verifying the
/// signatures of OAuth access tokens (RFC 9068): RSA (`kty` `RSA`, `n` and `e`, at least 2048 bits)
/// for RS256, EC P-256 (`kty` `EC`, `crv` `P-256`, `x` and `y`) for ES256. A key verifies only the
/// one algorithm of its type, so an RSA key can never check an ES256 signature or the reverse, and
/// no key checks `none` or an HMAC (the algorithm confusion of RFC 8725 §2.1).
///
/// Owns one OpenSSL `EVP_PKEY` (freed in `deinit`). Immutable, so one key may verify from several
/// threads at once (each call builds its own digest context).
public final class JWKPublicKey: @unchecked Sendable {
    /// The one JWS algorithm this key verifies.
    public let algorithm: JWTSigner.Algorithm
    private let pkey: OpaquePointer

    private init(pkey: OpaquePointer, algorithm: JWTSigner.Algorithm) {
        self.pkey = pkey
        self.algorithm = algorithm
    }

    deinit { EVP_PKEY_free(pkey) }

    /// An RSA public key from its modulus and exponent (big-endian bytes, RFC 7518 §6.3.1).
    /// - Throws: `JWTError.wrongKeyType` when OpenSSL refuses the numbers or the modulus is under
    ///   2048 bits.
    public static func rsa(modulus n: [UInt8], exponent e: [UInt8]) throws -> JWKPublicKey {
        guard !n.isEmpty, !e.isEmpty, n.count <= 2048, e.count <= 16 else {
            throw JWTError.wrongKeyType("an RSA JWK needs n (at most 16384 bits) and e")
        }
        guard let builder = OSSL_PARAM_BLD_new() else { throw JWTError.wrongKeyType("OSSL_PARAM_BLD_new failed") }
        defer { OSSL_PARAM_BLD_free(builder) }
        let bnN = n.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        let bnE = e.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        defer {
            BN_free(bnN)
            BN_free(bnE)
        }
        guard let bnN, let bnE,
              OSSL_PARAM_BLD_push_BN(builder, cString(Self.rsaN), bnN) == 1,
              OSSL_PARAM_BLD_push_BN(builder, cString(Self.rsaE), bnE) == 1,
              let params = OSSL_PARAM_BLD_to_param(builder) else {
            ERR_clear_error()
            throw JWTError.wrongKeyType("an RSA JWK's n and e could not be read")
        }
        defer { OSSL_PARAM_free(params) }
        let key = try fromData(Self.rsaType, params)
        guard EVP_PKEY_get_bits(key) >= 2048 else {
            EVP_PKEY_free(key)
            throw JWTError.wrongKeyType("RS256 needs an RSA key of at least 2048 bits")
        }
        return JWKPublicKey(pkey: key, algorithm: .rs256)
    }

    /// A P-256 public key from its affine coordinates (32 bytes each, RFC 7518 §6.2.1); OpenSSL
    /// refuses a point that is not on the curve.
    /// - Throws: `JWTError.wrongKeyType` for coordinates of another length or a point off the curve.
    public static func p256(x: [UInt8], y: [UInt8]) throws -> JWKPublicKey {
        guard x.count == 32, y.count == 32 else { throw JWTError.wrongKeyType("a P-256 JWK needs 32-byte x and y") }
        guard let builder = OSSL_PARAM_BLD_new() else { throw JWTError.wrongKeyType("OSSL_PARAM_BLD_new failed") }
        defer { OSSL_PARAM_BLD_free(builder) }
        let point = [0x04] + x + y
        let built: UnsafeMutablePointer<OSSL_PARAM>? = point.withUnsafeBytes { pub in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, cString(Self.groupKey), cString(Self.groupValue), 0) == 1,
                  OSSL_PARAM_BLD_push_octet_string(builder, cString(Self.publicKeyKey), pub.baseAddress, pub.count) == 1
            else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params = built else {
            ERR_clear_error()
            throw JWTError.wrongKeyType("a P-256 JWK could not be read")
        }
        defer { OSSL_PARAM_free(params) }
        return JWKPublicKey(pkey: try fromData(Self.ecType, params), algorithm: .es256)
    }

    /// Verifies the JOSE signature of `message` (the token's `header.payload` bytes) made with
    /// `algorithm`: false unless it is this key's algorithm and the signature holds. ES256
    /// signatures are the raw 64-byte `r || s` of RFC 7518 §3.4, turned into DER for OpenSSL; any
    /// other length (a DER signature too) is false.
    public func verify(algorithm: JWTSigner.Algorithm, signature: [UInt8], message: [UInt8]) -> Bool {
        guard algorithm == self.algorithm else { return false }
        let blob: [UInt8]
        switch algorithm {
        case .es256:
            guard signature.count == 64, let der = JWTSigner.derFromRaw(signature) else { return false }
            blob = der
        case .rs256:
            guard signature.count == Int(EVP_PKEY_get_size(pkey)) else { return false }
            blob = signature
        }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        let ok = EVP_DigestVerify(ctx, blob, blob.count, message, message.count) == 1
        ERR_clear_error()
        return ok
    }

    // MARK: - OpenSSL helpers

    /// An `EVP_PKEY` of `type` from public `params` (`EVP_PKEY_fromdata`).
    private static func fromData(_ type: StaticString, _ params: UnsafeMutablePointer<OSSL_PARAM>) throws -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, cString(type), nil) else {
            throw JWTError.wrongKeyType("EVP_PKEY_CTX_new_from_name failed")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        let selection = Int32(OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS
                              | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS)
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &pkey, selection, params) == 1, let key = pkey else {
            ERR_clear_error()
            throw JWTError.wrongKeyType("OpenSSL refused the key (EVP_PKEY_fromdata)")
        }
        return key
    }

    // OSSL_PARAM_BLD keeps the key pointers it is given: static literals only.
    private static let rsaType: StaticString = "RSA"
    private static let ecType: StaticString = "EC"
    private static let rsaN: StaticString = "n"                    // OSSL_PKEY_PARAM_RSA_N
    private static let rsaE: StaticString = "e"                    // OSSL_PKEY_PARAM_RSA_E
    private static let groupKey: StaticString = "group"            // OSSL_PKEY_PARAM_GROUP_NAME
    private static let groupValue: StaticString = "prime256v1"
    private static let publicKeyKey: StaticString = "pub"          // OSSL_PKEY_PARAM_PUB_KEY

    private static func cString(_ s: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

extension JWTSigner {
    /// The public half of this signer's key as JWK members (RFC 7517): `kty`, `n` and `e` for RSA,
    /// `kty`, `crv`, `x` and `y` for P-256, each base64url without padding; `kid` and `alg` are
    /// the caller's to add. What an authorization server publishes in its JWKS.
    /// - Throws: `JWTError.signingFailed` if OpenSSL cannot export the numbers.
    public func publicJWK() throws -> [String: String] {
        func number(_ name: String, pad: Int32 = 0) throws -> [UInt8] {
            var bn: OpaquePointer?
            guard EVP_PKEY_get_bn_param(pkey, name, &bn) == 1, let bn else {
                ERR_clear_error()
                throw JWTError.signingFailed("EVP_PKEY_get_bn_param(\(name))")
            }
            defer { BN_free(bn) }
            let length = pad > 0 ? pad : (BN_num_bits(bn) + 7) / 8
            var out = [UInt8](repeating: 0, count: Int(length))
            guard out.withUnsafeMutableBufferPointer({ BN_bn2binpad(bn, $0.baseAddress, length) }) == length else {
                throw JWTError.signingFailed("BN_bn2binpad(\(name))")
            }
            return out
        }
        switch algorithm {
        case .rs256:
            return ["kty": "RSA", "n": Base64URL.encode(try number("n")), "e": Base64URL.encode(try number("e"))]
        case .es256:
            return ["kty": "EC", "crv": "P-256", "x": Base64URL.encode(try number("qx", pad: 32)),
                    "y": Base64URL.encode(try number("qy", pad: 32))]
        }
    }
}
