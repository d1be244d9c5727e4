import Foundation
internal import COpenSSL

/// Working state for P-256 and HPKE operations on one thread at a time: its own `EC_GROUP`,
/// `BN_CTX`, big numbers, points, an HMAC-SHA256 context and an AES-128-GCM context. Nothing in
/// it is shared, so several threads each holding their own scratch never contend; the pool
/// (`P256ScratchPool`) hands them out. Owns every handle: private init, throwing `make()`,
/// `deinit` frees (the scalar is cleared before it is freed).
@_spi(Benchmarks) public final class P256Scratch {
    /// Reused algorithm objects (shared, immutable).
    let algorithms: OpenSSLAlgorithms
    /// `EC_GROUP` for prime256v1, private to this scratch.
    let group: OpaquePointer
    /// `BN_CTX` for temporaries of the EC calls.
    let bnContext: OpaquePointer
    /// Group order n (borrowed from `group`, not freed here).
    let order: OpaquePointer
    /// Field prime p, for the coordinate range check of full key validation.
    let fieldPrime: OpaquePointer
    /// Secret scalar register (flagged constant-time, cleared after use).
    let scalar: OpaquePointer
    /// Coordinate registers for validation.
    let coordinateX: OpaquePointer
    let coordinateY: OpaquePointer
    /// Point registers: `pointA` holds a loaded peer point, `pointB` results.
    let pointA: OpaquePointer
    let pointB: OpaquePointer
    /// `EVP_MAC_CTX` (HMAC, digest SHA-256 set once; the key is set per MAC).
    let macContext: OpaquePointer
    /// `EVP_CIPHER_CTX` with AES-128-GCM selected once; key and nonce are set per message.
    let gcmContext: OpaquePointer

    private init(algorithms: OpenSSLAlgorithms, group: OpaquePointer, bnContext: OpaquePointer, order: OpaquePointer,
                 fieldPrime: OpaquePointer, scalar: OpaquePointer, coordinateX: OpaquePointer, coordinateY: OpaquePointer,
                 pointA: OpaquePointer, pointB: OpaquePointer, macContext: OpaquePointer, gcmContext: OpaquePointer) {
        self.algorithms = algorithms
        self.group = group
        self.bnContext = bnContext
        self.order = order
        self.fieldPrime = fieldPrime
        self.scalar = scalar
        self.coordinateX = coordinateX
        self.coordinateY = coordinateY
        self.pointA = pointA
        self.pointB = pointB
        self.macContext = macContext
        self.gcmContext = gcmContext
    }

    deinit {
        BN_clear_free(scalar)
        BN_free(fieldPrime)
        BN_free(coordinateX)
        BN_free(coordinateY)
        EC_POINT_clear_free(pointA)
        EC_POINT_clear_free(pointB)
        EVP_MAC_CTX_free(macContext)
        EVP_CIPHER_CTX_free(gcmContext)
        BN_CTX_free(bnContext)
        EC_GROUP_free(group)
    }

    /// Allocates and configures a scratch.
    /// - Throws: `OPENSSL_FAILURE` if an allocation or a setup call fails (everything allocated is freed).
    static func make() throws -> P256Scratch {
        let algorithms = try OpenSSLAlgorithms.shared()
        let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
        let bnContext = BN_CTX_new()
        let fieldPrime = BN_new(), scalar = BN_new(), x = BN_new(), y = BN_new()
        let pointA = group.flatMap { EC_POINT_new($0) }
        let pointB = group.flatMap { EC_POINT_new($0) }
        let mac = EVP_MAC_CTX_new(algorithms.hmac)
        let gcm = EVP_CIPHER_CTX_new()
        guard let group, let bnContext, let fieldPrime, let scalar, let x, let y, let pointA, let pointB, let mac, let gcm,
              let order = EC_GROUP_get0_order(group) else {
            let error = CryptoError.openSSL("allocating P-256 scratch state")
            BN_free(fieldPrime); BN_free(scalar); BN_free(x); BN_free(y)
            EC_POINT_free(pointA); EC_POINT_free(pointB)
            EVP_MAC_CTX_free(mac); EVP_CIPHER_CTX_free(gcm)
            BN_CTX_free(bnContext); EC_GROUP_free(group)
            throw error
        }
        let scratch = P256Scratch(algorithms: algorithms, group: group, bnContext: bnContext, order: order,
                                  fieldPrime: fieldPrime, scalar: scalar, coordinateX: x, coordinateY: y,
                                  pointA: pointA, pointB: pointB, macContext: mac, gcmContext: gcm)
        try scratch.configure()
        return scratch
    }

    /// One-time setup: field prime, constant-time flag, HMAC digest, AES-128-GCM selection.
    private func configure() throws {
        BN_set_flags(scalar, BN_FLG_CONSTTIME)
        guard EC_GROUP_get_curve(group, fieldPrime, nil, nil, bnContext) == 1 else {
            throw CryptoError.openSSL("EC_GROUP_get_curve")
        }
        let macOK = "digest".withCString { key in
            "SHA256".withCString { value in
                var params = [OSSL_PARAM_construct_utf8_string(key, UnsafeMutablePointer(mutating: value), 0),
                              OSSL_PARAM_construct_end()]
                return EVP_MAC_CTX_set_params(macContext, &params)
            }
        }
        guard macOK == 1 else { throw CryptoError.openSSL("EVP_MAC_CTX_set_params(digest=SHA256)") }
        guard EVP_EncryptInit_ex2(gcmContext, algorithms.aes128GCM, nil, nil, nil) == 1 else {
            throw CryptoError.openSSL("EVP_EncryptInit_ex2(AES-128-GCM)")
        }
    }
}

/// A lock-guarded free list of `P256Scratch`: a thread takes one (creating it when the list is
/// empty), uses it alone, and gives it back. The list keeps at most `maxIdle` entries, so the
/// number of live scratches follows the peak number of threads sealing at once.
@_spi(Benchmarks) public final class P256ScratchPool: @unchecked Sendable {
    /// The pool used by every `PushCrypto` entry point.
    @_spi(Benchmarks) public static let shared = P256ScratchPool(maxIdle: 64)

    private let lock = NSLock()
    private var idle: [P256Scratch] = []
    private let maxIdle: Int

    init(maxIdle: Int) { self.maxIdle = maxIdle }

    /// Runs `body` with a scratch owned by the caller for the duration of the call (don't escape it).
    /// - Throws: whatever `body` throws, or `OPENSSL_FAILURE` when a new scratch cannot be made.
    @_spi(Benchmarks) public func withScratch<T>(_ body: (P256Scratch) throws -> T) throws -> T {
        lock.lock()
        let reused = idle.popLast()
        lock.unlock()
        let scratch = try reused ?? P256Scratch.make()
        defer {
            lock.lock()
            if idle.count < maxIdle { idle.append(scratch) }
            lock.unlock()
        }
        return try body(scratch)
    }
}
