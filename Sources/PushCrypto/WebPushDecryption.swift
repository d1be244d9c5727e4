/// The receiving side of RFC 8291 (what a browser does), for tests and tools: decrypts a Web
/// Push body with the subscription's private key and auth secret.
public enum WebPushDecryption {
    /// Decrypts a Web Push `aes128gcm` body.
    ///
    /// - Parameters:
    ///   - body: the complete request body (header of 86 bytes, then one record).
    ///   - userAgentPrivateKey: the subscription's 32-byte P-256 private scalar.
    ///   - auth: the subscription's 16-byte auth secret.
    /// - Returns: the plaintext without delimiter and padding.
    /// - Throws: `TRUNCATED`, `INVALID_HEADER` (key id not a 65-byte point on P-256),
    ///   `MULTIPLE_RECORDS` (RFC 8291 §4 allows one), `DECRYPTION_FAILED`, `INVALID_PADDING`,
    ///   `VALIDATION_ERROR(auth)`, `INVALID_PRIVATE_KEY`.
    public static func decrypt(body: [UInt8], userAgentPrivateKey: [UInt8], auth: [UInt8]) throws -> [UInt8] {
        guard auth.count == WebPushEncryption.authSecretLength else {
            throw WebPushError.validation("auth", "the auth secret is 16 bytes, got \(auth.count)")
        }
        let header = try WebPushContentHeader.parse(body)
        guard header.keyID.count == WebPushEC.pointLength, WebPushEC.isValidPublicKey(header.keyID) else {
            throw WebPushError.invalidHeader("the key id must be the sender's 65-byte P-256 public key")
        }
        let records = WebPushContentCoding.recordCount(bodyLength: body.count, headerLength: header.length,
                                                       recordSize: header.recordSize)
        guard records <= 1 else { throw WebPushError.multipleRecords(records) }
        let uaPublic = try WebPushEC.publicKey(privateKey: userAgentPrivateKey)
        let ecdh = try WebPushEC.sharedSecret(privateKey: userAgentPrivateKey, peerPublicKey: header.keyID,
                                              peerField: "keyid")
        let ikm = try WebPushEncryption.inputKeyingMaterial(ecdhSecret: ecdh, auth: auth, userAgentPublicKey: uaPublic,
                                                            applicationServerPublicKey: header.keyID)
        return try WebPushContentCoding.decryptRecords(body: body, header: header, ikm: ikm)
    }

    /// The 65-byte public key (`p256dh`) of a 32-byte private scalar, to build test subscriptions.
    /// Throws `INVALID_PRIVATE_KEY` for a scalar outside 1...n-1.
    public static func publicKey(privateKey: [UInt8]) throws -> [UInt8] {
        try WebPushEC.publicKey(privateKey: privateKey)
    }

    /// A fresh random P-256 private scalar (32 bytes), to build test subscriptions.
    public static func generatePrivateKey() throws -> [UInt8] {
        try WebPushEC.randomPrivateKey()
    }
}
