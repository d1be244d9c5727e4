/// A P-256 private key: the 32-byte big-endian scalar d with 0 < d < n (RFC 9180
/// SerializePrivateKey), with its public key computed once at creation. `description` redacts
/// the scalar. Used as the HPKE recipient key in tests and tools, and as a deterministic ephemeral
/// key for vector tests; the worker's own envelopes use fresh random ephemerals.
public struct P256PrivateKey: Sendable, CustomStringConvertible {
    /// Byte length of the scalar (32).
    public static let byteCount = 32

    /// The scalar, 32 bytes big-endian (left-padded with zeros).
    public let rawScalar: [UInt8]
    /// d·G.
    public let publicKey: P256PublicKey

    private init(rawScalar: [UInt8], publicKey: P256PublicKey) {
        self.rawScalar = rawScalar
        self.publicKey = publicKey
    }

    /// Wraps a stored 32-byte scalar and computes its public key.
    /// - Throws: `INVALID_KEY_LENGTH` (not 32 bytes), `INVALID_PRIVATE_KEY` (zero or ≥ n), `OPENSSL_FAILURE`.
    public init(rawScalar: [UInt8]) throws {
        guard rawScalar.count == Self.byteCount else {
            throw CryptoError(code: .invalidKeyLength,
                              message: "P-256 private key must be \(Self.byteCount) bytes, got \(rawScalar.count)")
        }
        let publicRaw = try P256ScratchPool.shared.withScratch { scratch -> [UInt8] in
            defer { scratch.clearScalar() }
            guard scratch.loadScalar(rawScalar) else {
                throw CryptoError(code: .invalidPrivateKey, message: "P-256 scalar must be in [1, n-1]")
            }
            return try scratch.generatorMultiple()
        }
        self.init(rawScalar: rawScalar, publicKey: try P256PublicKey(validatedStoredBytes: publicRaw))
    }

    /// A fresh uniformly random key (scalar from `RAND_bytes` by rejection sampling).
    /// - Throws: `OPENSSL_FAILURE`.
    public static func generate() throws -> P256PrivateKey {
        let (scalar, publicRaw) = try P256ScratchPool.shared.withScratch { scratch -> ([UInt8], [UInt8]) in
            defer { scratch.clearScalar() }
            let scalar = try scratch.loadRandomScalar()
            return (scalar, try scratch.generatorMultiple())
        }
        return P256PrivateKey(rawScalar: scalar, publicKey: try P256PublicKey(validatedStoredBytes: publicRaw))
    }

    /// DeriveKeyPair(ikm) for DHKEM(P-256, HKDF-SHA256), RFC 9180 §7.1.3: dkp_prk =
    /// LabeledExtract("", "dkp_prk", ikm); for counter 0…255 the candidate
    /// LabeledExpand(dkp_prk, "candidate", I2OSP(counter, 1), 32) (bitmask 0xff) is taken when 0 < sk < n.
    /// - Throws: `DERIVE_KEY_PAIR_FAILED` if no candidate fits (probability about 2^-8192), `OPENSSL_FAILURE`.
    public static func deriveKeyPair(ikm: [UInt8]) throws -> P256PrivateKey {
        let (scalar, publicRaw) = try P256ScratchPool.shared.withScratch { scratch -> ([UInt8], [UInt8]) in
            defer { scratch.clearScalar() }
            let suite = HPKELabels.kemSuiteID
            let prk = try scratch.labeledExtract(suite: suite, salt: [], label: HPKELabels.dkpPRK, ikm: ikm)
            for counter in 0...255 {
                var candidate = try scratch.labeledExpand(suite: suite, prk: prk, label: HPKELabels.candidate,
                                                          info: [UInt8(counter)], length: byteCount)
                candidate[0] &= 0xFF
                if scratch.loadScalar(candidate) {
                    return (candidate, try scratch.generatorMultiple())
                }
            }
            throw CryptoError(code: .deriveKeyPairFailed, message: "no candidate scalar below the group order")
        }
        return P256PrivateKey(rawScalar: scalar, publicKey: try P256PublicKey(validatedStoredBytes: publicRaw))
    }

    /// `P256PrivateKey(kid: …, scalar redacted)`.
    public var description: String { "P256PrivateKey(kid: \(publicKey.kid), scalar redacted)" }
}
