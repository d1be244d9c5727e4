import PushCrypto

/// The honkio v2 envelope (R-ENC-2): `{"v":2,"kid":…,"enc":…,"ct":…}` with `enc` (the 65-byte
/// encapsulated key) and `ct` (ciphertext + 16-byte tag) in base64url without padding.
/// Built by the worker from the HPKE sealer's output; written compactly in that key order.
public struct Envelope: Sendable, Hashable {
    /// Envelope format version, the JSON number `2`.
    public static let version = 2
    /// Length of `enc`: an uncompressed P-256 point (RFC 9180 DHKEM(P-256) Nenc).
    public static let encLength = 65
    /// AES-128-GCM tag length appended to the ciphertext.
    public static let tagLength = 16

    /// Key id of the device key sealed to (R-DEV-3, 16 base64url characters).
    public let kid: String
    /// Encapsulated key bytes (65).
    public let enc: [UInt8]
    /// Ciphertext with tag (plaintext length + 16).
    public let ct: [UInt8]

    /// Makes an envelope from the sealer's output.
    public init(kid: String, enc: [UInt8], ct: [UInt8]) {
        self.kid = kid
        self.enc = enc
        self.ct = ct
    }

    /// Appends the envelope's compact JSON to `out`.
    public func appendJSON(to out: inout [UInt8]) {
        out.append(contentsOf: Self.head)
        JSONWriter.appendString(kid, to: &out)
        out.append(contentsOf: Self.encKey)
        Base64URLWriter.append(enc, to: &out)
        out.append(contentsOf: Self.ctKey)
        Base64URLWriter.append(ct, to: &out)
        out.append(contentsOf: Self.tail)
    }

    /// The envelope's compact JSON bytes.
    public var jsonBytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.jsonLength(kid: kid, encLength: enc.count, ctLength: ct.count))
        appendJSON(to: &out)
        return out
    }

    /// Exact length of the envelope JSON for a kid, `enc` and `ct` byte lengths, without sealing.
    public static func jsonLength(kid: String, encLength: Int = Envelope.encLength, ctLength: Int) -> Int {
        head.count + JSONWriter.quotedLength(kid) + encKey.count + Base64URL.encodedLength(encLength)
            + ctKey.count + Base64URL.encodedLength(ctLength) + tail.count
    }

    private static let head: [UInt8] = Array(#"{"v":2,"kid":"#.utf8)
    private static let encKey: [UInt8] = Array(#","enc":""#.utf8)
    private static let ctKey: [UInt8] = Array(#"","ct":""#.utf8)
    private static let tail: [UInt8] = Array(#""}"#.utf8)
}
