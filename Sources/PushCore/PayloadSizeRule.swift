import PushCrypto

/// The 4096-byte rule (R-SEND-7), in one place: the exact final size of each payload kind
/// computed WITHOUT sealing, and the minimal number of content bytes to cut so it fits.
///
/// Measures (all UTF-8 bytes):
/// - APNs: the whole request body. Encrypted: `fixed` (everything but the envelope) + the envelope
///   JSON, whose length follows from the plaintext length n: `ct` = n + 16 bytes, `enc` = 65 bytes,
///   each base64url without padding (ceil(4·len/3) characters).
/// - FCM: `data` keys and values plus `notification` title and body. Encrypted: `"hk"` (2) + envelope.
/// - Web Push: plaintext + 103 (RFC 8188 header 86, delimiter 1, tag 16; no padding).
///
/// "Content" is the sealed plaintext (R-ENC-3) for encrypted APNs/FCM and Web Push, and the
/// measured bytes themselves for plaintext APNs/FCM. Base64url is never 4k+1 long, so an encrypted
/// payload of exactly 4096 bytes may be unreachable: the rule is "largest that fits passes, one
/// content byte more is refused".
public enum PayloadSizeRule {
    /// The limit, in bytes.
    public static let limit = 4096
    /// Web Push body overhead over the plaintext: header 86 + delimiter 1 + tag 16.
    public static let webPushOverhead = 103
    /// Length of the FCM data key holding the envelope (`hk`).
    static let fcmEnvelopeKeyLength = 2

    /// How a payload's measured size depends on its content length n.
    public enum Shape: Sendable, Hashable {
        /// size = fixed + n (plaintext payloads with fixed 0 and n = measured size; Web Push with fixed 103).
        case linear(fixed: Int)
        /// size = fixed + length of the envelope JSON for `kid` and a plaintext of n bytes.
        case envelope(fixed: Int, kid: String)

        /// APNs encrypted: `fixed` = body bytes outside the envelope object.
        public static func apnsEncrypted(fixed: Int, kid: String) -> Shape { .envelope(fixed: fixed, kid: kid) }
        /// FCM encrypted: `"hk"` plus the envelope string.
        public static func fcmEncrypted(kid: String) -> Shape { .envelope(fixed: fcmEnvelopeKeyLength, kid: kid) }
        /// Web Push: plaintext + 103.
        public static let webPush = Shape.linear(fixed: webPushOverhead)
        /// Plaintext APNs body or FCM data+notification: the content is the measure.
        public static let plaintext = Shape.linear(fixed: 0)

        /// The measured size for content length `n`.
        public func size(contentLength n: Int) -> Int {
            switch self {
            case .linear(let fixed): return fixed + n
            case .envelope(let fixed, let kid):
                return fixed + Envelope.jsonLength(kid: kid, ctLength: n + Envelope.tagLength)
            }
        }

        /// The largest content length whose size fits the limit (negative when even 0 does not fit).
        public var maxContentLength: Int {
            switch self {
            case .linear(let fixed): return PayloadSizeRule.limit - fixed
            case .envelope(let fixed, let kid):
                // Characters left for base64url(ct): L. ceil(4m/3) <= L  <=>  m <= floor(3L/4).
                let left = PayloadSizeRule.limit - fixed - Envelope.jsonLength(kid: kid, ctLength: 0)
                if left < 0 { return -1 }
                return (3 * left) / 4 - Envelope.tagLength
            }
        }
    }

    /// Checks content of length `contentLength` against `shape`.
    public static func check(_ shape: Shape, contentLength: Int) -> SizeCheck {
        SizeCheck(size: shape.size(contentLength: contentLength), contentLength: contentLength,
                  maxContentLength: shape.maxContentLength)
    }
}

/// The outcome of the 4096-byte rule for one payload.
public struct SizeCheck: Sendable, Hashable {
    /// Final measured size in bytes.
    public let size: Int
    /// Content length the size was computed for.
    public let contentLength: Int
    /// Largest content length that fits (negative if nothing fits).
    public let maxContentLength: Int

    /// True when `size` is at most 4096.
    public var fits: Bool { size <= PayloadSizeRule.limit }

    /// Smallest number of content bytes to cut so the payload fits (0 when it fits); when even
    /// empty content does not fit this is more than `contentLength`.
    public var bytesToCut: Int { max(0, contentLength - maxContentLength) }

    /// The `PUSH_PAYLOAD_TOO_LARGE` refusal, or nil when the payload fits.
    public var error: PushError? {
        if fits { return nil }
        if maxContentLength < 0 {
            return PushError(.pushPayloadTooLarge,
                             "payload is \(size) bytes, over the \(PayloadSizeRule.limit)-byte limit even without content")
        }
        let cut = bytesToCut
        return PushError(.pushPayloadTooLarge,
                         "payload is \(size) bytes, over the \(PayloadSizeRule.limit)-byte limit: cut \(cut) \(cut == 1 ? "byte" : "bytes") of content")
    }
}
