/// One device as the planner sees it at send time (R-SEND-2: its key is read when sealed).
public struct DeviceSnapshot: Sendable, Hashable {
    /// Stored platform; one the provider table does not serve is refused `UNKNOWN_PLATFORM`.
    public var platform: Platform
    /// Provider token (APNs hex token, FCM registration token; the endpoint for `web`, unused here).
    public var token: String
    /// APNs environment (iOS only).
    public var apnsEnvironment: APNsEnvironment?
    /// Raw 65-byte uncompressed P-256 key, or nil when the device has none (R-DEV-3). Ignored for `web`.
    public var publicKey: [UInt8]?
    /// The key's kid (16 base64url characters), required with `publicKey`.
    public var kid: String?

    /// Makes a snapshot.
    public init(platform: Platform, token: String, apnsEnvironment: APNsEnvironment? = nil,
                publicKey: [UInt8]? = nil, kid: String? = nil) {
        self.platform = platform
        self.token = token
        self.apnsEnvironment = apnsEnvironment
        self.publicKey = publicKey
        self.kid = kid
    }
}

/// The planner's verdict for one device.
public enum PlanDecision: Sendable, Hashable {
    /// Do not send: the delivery ends `failed` with the error's code (what the ledger then writes
    /// is `LedgerRule`'s to say).
    case refuse(PushError)
    /// Send as planned.
    case send(PlannedDelivery)
}

/// A delivery ready to seal (if encrypted) and send; its final size is known and within 4096 bytes.
public struct PlannedDelivery: Sendable, Hashable {
    /// What goes to the provider.
    public enum Body: Sendable, Hashable {
        /// Plaintext (R-SEND-4): the final payload.
        case plaintext(ProviderPayload)
        /// HPKE-encrypted (R-SEND-3): seal `plaintext` to the device key (kid `template.kid`), then
        /// `template.render(envelope:)`.
        case sealed(plaintext: [UInt8], template: PayloadTemplate)
        /// Web Push (R-SEND-11): encrypt `plaintext` (R-ENC-3 JSON) with RFC 8291; body = plaintext + 103.
        case webPush(plaintext: [UInt8])
    }

    /// Platform.
    public let platform: Platform
    /// Provider token.
    public let token: String
    /// APNs environment (iOS only).
    public let apnsEnvironment: APNsEnvironment?
    /// Priority (R-SEND-10).
    public let priority: Priority
    /// Alert or background (R-KIND-1): with the priority, what the provider headers say
    /// (`PushType.apnsPriority(_:)`, `PushType.webPushUrgency(_:)`).
    public let pushType: PushType
    /// Collapse key, sent outside the envelope (R-ENC-6).
    public let collapseKey: String?
    /// Whether the delivery counts as encrypted (R-SEND-3, R-SEND-11).
    public let encrypted: Bool
    /// Final measured size (R-SEND-7), at most 4096.
    public let finalSize: Int
    /// The payload or what to seal.
    public let body: Body

    /// Makes a planned delivery (the planner's output; public for test doubles in other modules).
    public init(platform: Platform, token: String, apnsEnvironment: APNsEnvironment?, priority: Priority,
                pushType: PushType = .alert, collapseKey: String?, encrypted: Bool, finalSize: Int, body: Body) {
        self.platform = platform
        self.token = token
        self.apnsEnvironment = apnsEnvironment
        self.priority = priority
        self.pushType = pushType
        self.collapseKey = collapseKey
        self.encrypted = encrypted
        self.finalSize = finalSize
        self.body = body
    }
}
