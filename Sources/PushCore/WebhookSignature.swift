import struct Foundation.Data
import struct Foundation.UUID
import PushCrypto

/// A webhook endpoint's signing secret (Standard Webhooks): `whsec_` + base64 (RFC 4648 §4, padded)
/// of the key bytes. Made of 24 random bytes here; the HMAC key is the decoded bytes.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    /// The text prefix.
    public static let prefix = "whsec_"
    /// Key length of generated secrets, in bytes (the specification allows 24 to 64).
    public static let generatedLength = 24

    /// The HMAC key.
    public let key: [UInt8]

    /// Wraps key bytes (24...64 of them). - Throws: `VALIDATION_ERROR` otherwise.
    public init(key: [UInt8]) throws {
        guard (24...64).contains(key.count) else {
            throw PushError(.validationError, "secret: a webhook secret is 24 to 64 bytes, got \(key.count)")
        }
        self.key = key
    }

    /// A fresh random secret. - Throws: `CryptoError` when the random generator fails.
    public static func generate() throws -> WebhookSecret {
        try WebhookSecret(key: try SecureRandom.bytes(generatedLength))
    }

    /// Parses `whsec_...` text. - Throws: `VALIDATION_ERROR` when it is not that shape.
    public init(text: String) throws {
        guard text.hasPrefix(Self.prefix), let data = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))) else {
            throw PushError(.validationError, "secret: must be whsec_ followed by base64")
        }
        try self.init(key: Array(data))
    }

    /// `whsec_` + base64 of the key: shown once, at creation and rotation.
    public var text: String { Self.prefix + Data(key).base64EncodedString() }

    /// Never the secret itself.
    public var description: String { "WebhookSecret(\(key.count) bytes)" }
}

/// Standard Webhooks signatures (R-HOOK-1): the signed content is `webhook-id` + "." +
/// `webhook-timestamp` + "." + body bytes; a signature is `v1,` + base64(HMAC-SHA256(secret key,
/// signed content)); `webhook-signature` lists one per secret in force, separated by spaces
/// (the current secret, and the previous one for 24 h after a rotation).
public enum WebhookSignature {
    /// The signed content `id.timestamp.body`.
    public static func signedContent(messageID: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        Array("\(messageID).\(timestamp).".utf8) + body
    }

    /// `v1,<base64>` for one secret.
    /// - Throws: `CryptoError` only if OpenSSL fails.
    public static func sign(messageID: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) throws -> String {
        let mac = try HMACSHA256.mac(key: secret.key, message: signedContent(messageID: messageID, timestamp: timestamp, body: body))
        return "v1," + Data(mac).base64EncodedString()
    }

    /// The `webhook-signature` header value: one `v1,` signature per secret, in the order given.
    /// - Throws: `CryptoError` only if OpenSSL fails.
    public static func header(messageID: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) throws -> String {
        try secrets.map { try sign(messageID: messageID, timestamp: timestamp, body: body, secret: $0) }.joined(separator: " ")
    }

    /// True when one `v1` signature of `header` matches `secret` (constant-time comparison). The
    /// receiver's side, for tests and tools; receivers also check the timestamp's age.
    public static func verify(header: String, messageID: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) -> Bool {
        guard let expected = try? HMACSHA256.mac(key: secret.key,
                                                 message: signedContent(messageID: messageID, timestamp: timestamp, body: body)) else {
            return false
        }
        for part in header.split(separator: " ") {
            let pieces = part.split(separator: ",", maxSplits: 1)
            guard pieces.count == 2, pieces[0] == "v1", let given = Data(base64Encoded: String(pieces[1])) else { continue }
            if HMACSHA256.constantTimeEquals(Array(given), expected) { return true }
        }
        return false
    }

    /// The `webhook-id` of one event for one endpoint: `msg_` + 32 hex digits of
    /// SHA-256(event public id bytes || endpoint id bytes). The same on every attempt and on a
    /// resend, so receivers can deduplicate (at-least-once delivery).
    /// - Throws: `CryptoError` only if OpenSSL fails.
    public static func messageID(eventID: UUID, endpointID: UUID) throws -> String {
        var input = [UInt8]()
        withUnsafeBytes(of: eventID.uuid) { input += $0 }
        withUnsafeBytes(of: endpointID.uuid) { input += $0 }
        let digest = try SHA256.hash(input)
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out = Array("msg_".utf8)
        for b in digest.prefix(16) {
            out.append(hex[Int(b >> 4)])
            out.append(hex[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
