import struct Foundation.UUID

/// How one provider's payloads are written and measured (R-SEND-7, R-ENC-4..6): the planner asks
/// the writer of the device's platform, found in the provider table. Writers are pure.
public protocol PayloadWriter: Sendable {
    /// True when the provider's transport encrypts every delivery with keys of its own (Web Push,
    /// RFC 8291, R-SEND-11): the device's HPKE key is not used, the delivery counts as encrypted
    /// and is never refused for a missing key.
    var encryptsItself: Bool { get }

    /// Prepares what every device of one notification shares (done once per notification).
    func prepare(_ notification: PreparedNotification) -> any PreparedPayloads

    /// The `ids_only` payloads (R-IDS-1) of one notification: nothing of its content, the same for
    /// every device keyed or not; nil for a provider without such a form (its devices are then
    /// refused in `ids_only`, never sent the content). Not asked of a writer that `encryptsItself`
    /// (Web Push keeps the full content, R-IDS-1).
    func prepareIDsOnly(_ notification: PreparedNotification) -> (any PreparedPayloads)?
}

extension PayloadWriter {
    /// No `ids_only` form by default.
    public func prepareIDsOnly(_ notification: PreparedNotification) -> (any PreparedPayloads)? { nil }
}

/// What the planner needs of one platform (the provider table's `planning`): its payload writer
/// and how its devices are addressed (R-DEV-1, re-checked at send time).
public struct PlatformRules: Sendable {
    public var writer: any PayloadWriter
    public var addressing: DeviceAddressing

    /// Makes a value.
    public init(writer: any PayloadWriter, addressing: DeviceAddressing) {
        self.writer = writer
        self.addressing = addressing
    }
}

/// The device-independent parts of one notification every writer starts from.
public struct PreparedNotification: Sendable {
    public let content: NotificationContent
    public let placeholders: AppPlaceholders
    /// The sealed plaintext (R-ENC-3), shared by every encrypted delivery.
    public let sealedPlaintext: [UInt8]
    /// The notification's id, what an `ids_only` marker carries (R-IDS-1); the all-zero id when
    /// only measuring (acceptance: an `ids_only` payload's size does not depend on the id).
    public let notificationID: UUID

    /// Prepares `content` (computes the sealed plaintext).
    public init(content: NotificationContent, placeholders: AppPlaceholders, notificationID: UUID? = nil) {
        self.content = content
        self.placeholders = placeholders
        self.sealedPlaintext = SealedPlaintext.bytes(for: content)
        self.notificationID = notificationID ?? PreparedNotification.measuringID
    }

    /// The id an `ids_only` payload is measured with when no notification exists yet.
    public static let measuringID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
}

/// `ids_only` payloads (R-IDS-1): one payload for every device of the notification, its key unused.
struct IDsOnlyPayloads: PreparedPayloads {
    let payload: ProviderPayload

    func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body) {
        var payload = self.payload
        if case .fcm(var message) = payload {
            message.token = token
            payload = .fcm(message)
        }
        return (PayloadSizeRule.check(.plaintext, contentLength: payload.ruleSize), .plaintext(payload))
    }
}

/// One notification's payloads for one provider, per device.
public protocol PreparedPayloads: Sendable {
    /// The 4096-byte check and the body for a device with provider token `token`, sealed to `kid`
    /// (nil: plaintext; always nil for a writer that `encryptsItself`).
    func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body)
}

/// APNs bodies (R-ENC-4, R-PLAIN-1): the envelope as `hk` beside `aps`, or the plaintext body.
public struct APNsPayloadWriter: PayloadWriter {
    public init() {}
    public var encryptsItself: Bool { false }

    public func prepare(_ n: PreparedNotification) -> any PreparedPayloads {
        Prepared(sealed: n.sealedPlaintext, prefix: APNsPayload.encryptedPrefix(content: n.content, placeholders: n.placeholders),
                 plaintext: APNsPayload.plaintext(content: n.content))
    }

    public func prepareIDsOnly(_ n: PreparedNotification) -> (any PreparedPayloads)? {
        IDsOnlyPayloads(payload: .body(APNsPayload.idsOnly(content: n.content, placeholders: n.placeholders,
                                                           notificationID: n.notificationID)))
    }

    struct Prepared: PreparedPayloads {
        let sealed: [UInt8], prefix: [UInt8], plaintext: [UInt8]

        func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body) {
            guard let kid else {
                return (PayloadSizeRule.check(.plaintext, contentLength: plaintext.count), .plaintext(.body(plaintext)))
            }
            let fixed = prefix.count + APNsPayload.encryptedSuffix.count
            let check = PayloadSizeRule.check(.apnsEncrypted(fixed: fixed, kid: kid), contentLength: sealed.count)
            let template = PayloadTemplate.wrapped(prefix: prefix, suffix: APNsPayload.encryptedSuffix, kid: kid,
                                                   plaintextLength: sealed.count, finalSize: check.size)
            return (check, .sealed(plaintext: sealed, template: template))
        }
    }
}

/// FCM v1 messages (R-ENC-5): the envelope as `data.hk` of a data-only message, or the plaintext message.
public struct FCMPayloadWriter: PayloadWriter {
    public init() {}
    public var encryptsItself: Bool { false }

    public func prepare(_ n: PreparedNotification) -> any PreparedPayloads {
        let plaintext = FCMMessage.plaintext(token: "", content: n.content)
        return Prepared(sealed: n.sealedPlaintext, content: n.content, plaintext: plaintext, ruleSize: plaintext.ruleSize)
    }

    public func prepareIDsOnly(_ n: PreparedNotification) -> (any PreparedPayloads)? {
        IDsOnlyPayloads(payload: .fcm(FCMMessage.idsOnly(token: "", content: n.content, notificationID: n.notificationID)))
    }

    struct Prepared: PreparedPayloads {
        let sealed: [UInt8], content: NotificationContent, plaintext: FCMMessage
        /// `plaintext.ruleSize` (R-SEND-7), the same for every device of the notification.
        let ruleSize: Int

        func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body) {
            guard let kid else {
                var message = plaintext
                message.token = token
                return (PayloadSizeRule.check(.plaintext, contentLength: ruleSize), .plaintext(.fcm(message)))
            }
            let check = PayloadSizeRule.check(.fcmEncrypted(kid: kid), contentLength: sealed.count)
            let base = FCMMessage(token: token, data: [], priority: content.priority, collapseKey: content.collapseKey)
            let template = PayloadTemplate(shape: .fcm(base), kid: kid, plaintextLength: sealed.count, finalSize: check.size)
            return (check, .sealed(plaintext: sealed, template: template))
        }
    }
}

/// Web Push bodies (R-SEND-11): the sealed plaintext encrypted by RFC 8291 (body = plaintext + 103).
public struct WebPushPayloadWriter: PayloadWriter {
    public init() {}
    public var encryptsItself: Bool { true }

    public func prepare(_ n: PreparedNotification) -> any PreparedPayloads { Prepared(sealed: n.sealedPlaintext) }

    struct Prepared: PreparedPayloads {
        let sealed: [UInt8]

        func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body) {
            (PayloadSizeRule.check(.webPush, contentLength: sealed.count), .webPush(plaintext: sealed))
        }
    }
}
