/// The bytes (or message) handed to a provider for one delivery.
public enum ProviderPayload: Sendable, Hashable {
    /// A complete request body (APNs, or any provider whose body needs nothing at send time).
    case body([UInt8])
    /// FCM message; its request body needs the TTL left at send time.
    case fcm(FCMMessage)

    /// The R-SEND-7 measure: the body's length, or FCM data + notification strings.
    public var ruleSize: Int {
        switch self {
        case .body(let body): return body.count
        case .fcm(let message): return message.ruleSize
        }
    }

    /// The HTTP request body: the body as is, or the FCM body with `android.ttl` = `ttlSeconds`.
    public func requestBody(ttlSeconds: Int) -> [UInt8] {
        switch self {
        case .body(let body): return body
        case .fcm(let message): return message.requestBody(ttlSeconds: ttlSeconds)
        }
    }
}

/// An encrypted payload waiting for its envelope: everything but `hk` is fixed at planning time,
/// and the final size is already known and checked (R-SEND-7).
public struct PayloadTemplate: Sendable, Hashable {
    enum Shape: Sendable, Hashable {
        /// The envelope's JSON object between `prefix` and `suffix` (APNs: `hk` beside `aps`).
        case wrapped(prefix: [UInt8], suffix: [UInt8])
        case fcm(FCMMessage)
    }

    let shape: Shape
    /// The kid the envelope must carry (the device's, R-DEV-3).
    public let kid: String
    /// Length of the sealed plaintext the envelope must hold.
    public let plaintextLength: Int
    /// The final measured size once rendered (R-SEND-7 measure).
    public let finalSize: Int

    init(shape: Shape, kid: String, plaintextLength: Int, finalSize: Int) {
        self.shape = shape
        self.kid = kid
        self.plaintextLength = plaintextLength
        self.finalSize = finalSize
    }

    /// A body whose envelope object stands between `prefix` and `suffix`, of `finalSize` bytes once
    /// rendered (the shape of APNs' body; any JSON provider that carries the envelope as one member).
    public static func wrapped(prefix: [UInt8], suffix: [UInt8], kid: String, plaintextLength: Int,
                               finalSize: Int) -> PayloadTemplate {
        PayloadTemplate(shape: .wrapped(prefix: prefix, suffix: suffix), kid: kid, plaintextLength: plaintextLength,
                        finalSize: finalSize)
    }

    /// Puts `envelope` into the payload (APNs `hk` object, or FCM `data.hk` string).
    /// - Throws: `PushError` `.envelopeMismatch` when the envelope's kid differs from the plan, `enc`
    ///   is not 65 bytes or `ct` is not plaintext + 16 bytes (the planned size would be wrong).
    public func render(envelope: Envelope) throws -> ProviderPayload {
        guard envelope.kid == kid, envelope.enc.count == Envelope.encLength,
              envelope.ct.count == plaintextLength + Envelope.tagLength else {
            throw PushError(.envelopeMismatch, "envelope does not match the planned kid or lengths")
        }
        switch shape {
        case .wrapped(let prefix, let suffix):
            var out = prefix
            out.reserveCapacity(finalSize)
            envelope.appendJSON(to: &out)
            out.append(contentsOf: suffix)
            return .body(out)
        case .fcm(let base):
            var message = base
            message.data = [FCMMessage.DataEntry("hk", String(decoding: envelope.jsonBytes, as: UTF8.self))]
            return .fcm(message)
        }
    }
}
