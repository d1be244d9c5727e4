/// A P-256 public key: the 65-byte uncompressed SEC1 point `0x04 || X || Y`, the form devices
/// register as `encryption_public_key` (R-DEV-3) and HPKE's SerializePublicKey (RFC 9180 §7.1.1).
/// `description` shows only the kid, so logging a key never prints it.
public struct P256PublicKey: Sendable, Hashable, CustomStringConvertible {
    /// Byte length of the encoding (65).
    public static let byteCount = 65
    /// Length of a key id in characters (16).
    public static let kidLength = 16

    /// The 65 bytes `0x04 || X || Y`.
    public let raw: [UInt8]
    /// Key id (R-DEV-3): the first 16 characters of base64url(SHA-256(raw)), e.g. `cHRL-UfvREIeEx3Q`.
    public let kid: String

    /// Validates `raw` fully (R-DEV-3, RFC 9180 §7.1.4): 65 bytes, prefix 0x04, coordinates below p,
    /// on the curve, not infinity. Costs a few microseconds; use it at registration.
    /// - Throws: `CryptoError` `INVALID_KEY_LENGTH`, `INVALID_KEY_ENCODING` (compressed or hybrid
    ///   form, coordinate out of range), `POINT_NOT_ON_CURVE`, `POINT_AT_INFINITY`, `OPENSSL_FAILURE`.
    public init(raw: [UInt8]) throws {
        try P256ScratchPool.shared.withScratch { try $0.validatePoint(raw) }
        self.raw = raw
        self.kid = try Self.makeKid(raw)
    }

    /// Decodes unpadded base64url text (the API's `encryption_public_key`), then validates as `init(raw:)`.
    /// - Throws: `INVALID_BASE64URL`, then as `init(raw:)`.
    public init(base64URL text: String) throws {
        guard let bytes = Base64URL.decode(text) else {
            throw CryptoError(code: .invalidBase64URL, message: "public key is not unpadded base64url")
        }
        try self.init(raw: bytes)
    }

    /// Wraps bytes that were fully validated when the device registered (read back from storage),
    /// checking only the shape: 65 bytes with prefix 0x04. The curve check happens anyway when a
    /// seal parses the point, so a corrupt row yields a typed error (`POINT_NOT_ON_CURVE`) there,
    /// never a crash or a wrong envelope.
    /// - Throws: `INVALID_KEY_LENGTH`, `INVALID_KEY_ENCODING`, `OPENSSL_FAILURE`.
    public init(validatedStoredBytes raw: [UInt8]) throws {
        try P256Scratch.checkShape(raw)
        self.raw = raw
        self.kid = try Self.makeKid(raw)
    }

    /// The unpadded base64url text of `raw` (87 characters).
    public var base64URL: String { Base64URL.encode(raw) }

    /// `P256PublicKey(kid: …)`.
    public var description: String { "P256PublicKey(kid: \(kid))" }

    /// Computes the kid of any 65-byte key encoding (R-DEV-3).
    /// - Throws: `OPENSSL_FAILURE` only if SHA-256 cannot run.
    public static func makeKid(_ raw: [UInt8]) throws -> String {
        String(Base64URL.encode(try SHA256.hash(raw)).prefix(kidLength))
    }
}
