internal import COpenSSL

// MARK: - P-256 arithmetic on a scratch (RFC 9180 §7.1, SEC1 §2.3.3/§2.3.4)

extension P256Scratch {
    /// Length of an uncompressed SEC1 point: 0x04 || X(32) || Y(32).
    static let pointLength = 65
    /// Length of a scalar / coordinate.
    static let scalarLength = 32

    /// Loads `bytes` (32, big-endian) into the scalar register and tells whether 0 < d < n.
    /// The register keeps the value until `clearScalar()`.
    func loadScalar(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == Self.scalarLength else { return false }
        let loaded = bytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), scalar) }
        guard loaded != nil else { return false }
        return BN_is_zero(scalar) == 0 && BN_cmp(scalar, order) < 0
    }

    /// Wipes the scalar register.
    @_spi(Benchmarks) public func clearScalar() { BN_clear(scalar) }

    /// Draws a uniform scalar in [1, n-1] by rejection sampling over `RAND_bytes` (a rejection
    /// has probability about 2^-32) and leaves it in the scalar register.
    /// - Returns: the 32-byte big-endian scalar.
    /// - Throws: `OPENSSL_FAILURE` when the random generator fails.
    @_spi(Benchmarks) public func loadRandomScalar() throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.scalarLength)
        for _ in 0..<64 {
            guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { throw CryptoError.openSSL("RAND_bytes") }
            if loadScalar(bytes) { return bytes }
        }
        throw CryptoError.openSSL("RAND_bytes gave no scalar below the group order")
    }

    /// d·G for the scalar in the register, as the 65-byte uncompressed point (fixed-base multiplication).
    /// - Throws: `OPENSSL_FAILURE`.
    @_spi(Benchmarks) public func generatorMultiple() throws -> [UInt8] {
        guard EC_POINT_mul(group, pointB, scalar, nil, nil, bnContext) == 1 else {
            throw CryptoError.openSSL("EC_POINT_mul(G)")
        }
        return try encode(pointB)
    }

    /// The 65-byte uncompressed encoding of `point`.
    func encode(_ point: OpaquePointer) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.pointLength)
        let written = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, bnContext)
        guard written == Self.pointLength else { throw CryptoError.openSSL("EC_POINT_point2oct") }
        return out
    }

    /// Checks the shape of a public key (R-DEV-3): 65 bytes beginning with 0x04. The SEC1 encoding
    /// of infinity (one 0x00 byte) and 33-byte compressed points get their own codes.
    /// - Throws: `POINT_AT_INFINITY`, `INVALID_KEY_ENCODING`, `INVALID_KEY_LENGTH`.
    static func checkShape(_ raw: [UInt8]) throws {
        if raw == [0x00] {
            throw CryptoError(code: .pointAtInfinity, message: "public key is the point at infinity (SEC1 0x00)")
        }
        if raw.count == 33 && (raw[0] == 0x02 || raw[0] == 0x03) {
            throw CryptoError(code: .invalidKeyEncoding,
                              message: "compressed P-256 points are not accepted; send the 65-byte uncompressed form")
        }
        guard raw.count == pointLength else {
            throw CryptoError(code: .invalidKeyLength,
                              message: "P-256 public key must be \(pointLength) bytes, got \(raw.count)")
        }
        guard raw[0] == 0x04 else {
            throw CryptoError(code: .invalidKeyEncoding,
                              message: "P-256 public key must be uncompressed (prefix 0x04), got prefix 0x\(String(raw[0], radix: 16))")
        }
    }

    /// Parses a 65-byte uncompressed point into `pointA`. OpenSSL checks the curve equation while
    /// parsing (a few field operations), so a corrupt stored key gives a typed error, never a crash.
    /// - Throws: `INVALID_KEY_LENGTH`, `INVALID_KEY_ENCODING`, `POINT_NOT_ON_CURVE`.
    @_spi(Benchmarks) public func loadPoint(_ raw: [UInt8]) throws {
        try Self.checkShape(raw)
        let ok = EC_POINT_oct2point(group, pointA, raw, raw.count, bnContext)
        guard ok == 1 else { throw CryptoError.cleared(.pointNotOnCurve, "public key is not a point on P-256") }
        guard EC_POINT_is_at_infinity(group, pointA) == 0 else {
            throw CryptoError(code: .pointAtInfinity, message: "public key is the point at infinity")
        }
    }

    /// Full public-key validation (RFC 9180 §7.1.4, SEC1 §3.2.2.1 with cofactor 1): shape,
    /// both coordinates below p, the curve equation, not infinity. Leaves the point in `pointA`.
    /// - Throws: `INVALID_KEY_LENGTH`, `INVALID_KEY_ENCODING`, `POINT_NOT_ON_CURVE`, `POINT_AT_INFINITY`.
    func validatePoint(_ raw: [UInt8]) throws {
        try Self.checkShape(raw)
        let inRange = raw.withUnsafeBufferPointer { bytes -> Bool in
            guard let base = bytes.baseAddress,
                  BN_bin2bn(base + 1, 32, coordinateX) != nil,
                  BN_bin2bn(base + 33, 32, coordinateY) != nil else { return false }
            return BN_cmp(coordinateX, fieldPrime) < 0 && BN_cmp(coordinateY, fieldPrime) < 0
        }
        guard inRange else {
            throw CryptoError.cleared(.invalidKeyEncoding, "public key coordinate is not below the field prime")
        }
        guard EC_POINT_set_affine_coordinates(group, pointA, coordinateX, coordinateY, bnContext) == 1,
              EC_POINT_is_on_curve(group, pointA, bnContext) == 1 else {
            throw CryptoError.cleared(.pointNotOnCurve, "public key is not a point on P-256")
        }
        guard EC_POINT_is_at_infinity(group, pointA) == 0 else {
            throw CryptoError(code: .pointAtInfinity, message: "public key is the point at infinity")
        }
    }

    /// DH(sk, pk) for P-256 (RFC 9180 §7.1.1): x-coordinate of scalar·pointA, 32 bytes
    /// (variable-base multiplication). Rejects an infinity result.
    /// - Throws: `POINT_AT_INFINITY`, `OPENSSL_FAILURE`.
    @_spi(Benchmarks) public func sharedSecretX() throws -> [UInt8] {
        guard EC_POINT_mul(group, pointB, nil, pointA, scalar, bnContext) == 1 else {
            throw CryptoError.openSSL("EC_POINT_mul(peer)")
        }
        guard EC_POINT_is_at_infinity(group, pointB) == 0 else {
            throw CryptoError(code: .pointAtInfinity, message: "Diffie-Hellman result is the point at infinity")
        }
        let encoded = try encode(pointB)
        return Array(encoded[1...32])
    }
}
