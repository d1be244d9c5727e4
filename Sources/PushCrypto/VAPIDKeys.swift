internal import COpenSSL

/// An application server's VAPID key pair (RFC 8292 §3): the long-term P-256 key an app signs its Web
/// Push JWTs with. It must differ from any ECDH key (RFC 8292 §2: a signing key, never reused for RFC
/// 8291's ECDH).
///
/// Forms:
/// - `publicKeyBase64URL`: the 65-byte uncompressed point as unpadded base64url, which is both the
///   `k=` parameter of the `Authorization: vapid` header and the `applicationServerKey` a browser's
///   `pushManager.subscribe` takes;
/// - `privateKeyPEM()`: an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) for storage, the
///   form `JWTSigner.es256(privateKeyPEM:keyId:)` and `init(privateKeyPEM:)` read back.
///
/// `description` shows the public key only.
public struct VAPIDKeys: Sendable, CustomStringConvertible {
    /// The private scalar with its public point.
    public let privateKey: P256PrivateKey

    /// Wraps an existing P-256 key.
    public init(privateKey: P256PrivateKey) {
        self.privateKey = privateKey
    }

    /// A fresh random key pair.
    /// - Throws: `CryptoError` `OPENSSL_FAILURE` if OpenSSL's random generator fails.
    public static func generate() throws -> VAPIDKeys {
        VAPIDKeys(privateKey: try P256PrivateKey.generate())
    }

    /// Loads a stored key: a PKCS#8 (or SEC1 `EC PRIVATE KEY`) PEM holding a P-256 private key.
    /// - Throws: `JWTError.malformedPEM` when the text is not a readable key, `JWTError.wrongKeyType`
    ///   when it is not a P-256 EC key, `CryptoError` when the scalar is out of range.
    public init(privateKeyPEM: String) throws {
        let scalar = try VAPIDKeyCodec.scalar(fromPEM: privateKeyPEM)
        self.init(privateKey: try P256PrivateKey(rawScalar: scalar))
    }

    /// The 65-byte uncompressed public point `0x04 || X || Y`.
    public var publicKeyBytes: [UInt8] { privateKey.publicKey.raw }

    /// The public point as unpadded base64url (87 characters): the VAPID `k` and the browser's
    /// `applicationServerKey`.
    public var publicKeyBase64URL: String { privateKey.publicKey.base64URL }

    /// The private key as an unencrypted PKCS#8 PEM document (RFC 5958 / RFC 7468 `PRIVATE KEY`),
    /// with the public key included. Handle it as a secret.
    /// - Throws: `CryptoError` `OPENSSL_FAILURE` if OpenSSL cannot build or write the key.
    public func privateKeyPEM() throws -> String {
        try VAPIDKeyCodec.pem(scalar: privateKey.rawScalar, publicKey: privateKey.publicKey.raw)
    }

    /// `VAPIDKeys(public: <base64url>)`.
    public var description: String { "VAPIDKeys(public: \(publicKeyBase64URL))" }
}

/// OpenSSL conversions between a raw P-256 key and PEM, for `VAPIDKeys`.
enum VAPIDKeyCodec {
    /// Builds an `EVP_PKEY` from the scalar and point (EVP_PKEY_fromdata) and writes it as PKCS#8 PEM.
    static func pem(scalar: [UInt8], publicKey: [UInt8]) throws -> String {
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.openSSL("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard let bn = scalar.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw CryptoError.openSSL("BN_bin2bn")
        }
        defer { BN_clear_free(bn) }
        // OSSL_PARAM_BLD keeps the key and string pointers it is given (keys even end up in the
        // built array), so they must be static: StaticString literals, not bridged Swift strings.
        let built: UnsafeMutablePointer<OSSL_PARAM>? = publicKey.withUnsafeBytes { pub in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, Self.cString(Self.groupKey), Self.cString(Self.groupValue), 0) == 1,
                  OSSL_PARAM_BLD_push_BN(builder, Self.cString(Self.privateKeyKey), bn) == 1,
                  OSSL_PARAM_BLD_push_octet_string(builder, Self.cString(Self.publicKeyKey), pub.baseAddress, pub.count) == 1
            else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)  // copies the values (not the keys)
        }
        guard let params = built else { throw CryptoError.openSSL("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(params) }  // frees (and clears) the secure block holding the scalar
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, Self.cString(Self.keyType), nil) else {
            throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        let selection = Int32(OSSL_KEYMGMT_SELECT_PRIVATE_KEY | OSSL_KEYMGMT_SELECT_PUBLIC_KEY
                              | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS)
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &pkey, selection, params) == 1,
              let key = pkey else {
            throw CryptoError.openSSL("EVP_PKEY_fromdata")
        }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("BIO_new") }
        defer { BIO_free(bio) }
        // PEM_write_bio_PrivateKey writes PKCS#8 (`BEGIN PRIVATE KEY`) in OpenSSL 3.
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.openSSL("PEM_write_bio_PrivateKey")
        }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let n = chunk.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            out += chunk[0..<Int(n)]
        }
        ERR_clear_error()
        for i in chunk.indices { chunk[i] = 0 }
        guard !out.isEmpty else { throw CryptoError.openSSL("BIO_read") }
        return String(decoding: out, as: UTF8.self)
    }

    private static let keyType: StaticString = "EC"               // kept by the context
    private static let groupKey: StaticString = "group"            // OSSL_PKEY_PARAM_GROUP_NAME
    private static let groupValue: StaticString = "prime256v1"
    private static let privateKeyKey: StaticString = "priv"        // OSSL_PKEY_PARAM_PRIV_KEY
    private static let publicKeyKey: StaticString = "pub"          // OSSL_PKEY_PARAM_PUB_KEY

    /// The NUL-terminated static bytes of a literal as a C string.
    private static func cString(_ s: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// Reads a PEM private key and returns its 32-byte scalar, refusing anything but P-256.
    static func scalar(fromPEM pem: String) throws -> [UInt8] {
        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty, bytes.count < Int(Int32.max) else { throw JWTError.malformedPEM("empty") }
        let read: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key = read else { throw JWTError.malformedPEM(drainOpenSSLErrors()) }
        defer { EVP_PKEY_free(key) }
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        guard EVP_PKEY_is_a(key, "EC") == 1,
              EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &group, group.count, &groupLength) == 1,
              String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
            ERR_clear_error()
            throw JWTError.wrongKeyType("a VAPID key must be a P-256 (prime256v1) EC key")
        }
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &bn) == 1, let priv = bn else {
            throw CryptoError.openSSL("EVP_PKEY_get_bn_param(priv)")
        }
        defer { BN_clear_free(priv) }
        var scalar = [UInt8](repeating: 0, count: P256PrivateKey.byteCount)
        let written = scalar.withUnsafeMutableBufferPointer { BN_bn2binpad(priv, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(P256PrivateKey.byteCount) else {
            throw CryptoError(code: .invalidPrivateKey, message: "P-256 scalar longer than 32 bytes")
        }
        return scalar
    }
}
