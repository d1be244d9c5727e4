/// The pure send-time policy (R-SEND-3..7, R-SEND-11, R-APP-4, R-MODE-2): per device,
/// `.refuse(error, refund:)` or `.send(PlannedDelivery)`.
///
/// Build one planner per notification (it prepares the device-independent bytes once), then call
/// `plan(_:)` per device. Checks, in order:
/// 1. platform known, else `UNKNOWN_PLATFORM`; an iOS or Android device that R-DEV-1 would refuse
///    (token outside its alphabet or length, iOS without `apns_environment`: a row written past the
///    registry) → `INVALID_STORED_DEVICE`, never handed to a provider;
/// 2. key policy: `web` always encrypted (R-SEND-11); a key → encrypted (R-SEND-3); no key and
///    `encrypted` (the notification's require_encryption read at send time) → `ENCRYPTION_KEY_MISSING`
///    (R-SEND-5); else plaintext (R-SEND-4). A key that is not 65 bytes starting 0x04 or a kid
///    that is not 16 characters → `INVALID_DEVICE_KEY` (the curve itself is checked by the store);
/// 3. live mode only: the platform's credential set invalid → `CREDENTIALS_INVALID` (R-APP-4);
/// 4. the 4096-byte rule → `PUSH_PAYLOAD_TOO_LARGE` stating the bytes to cut (R-SEND-7).
/// Every refusal nets zero charges, so `refund` is always true.
public struct DeliveryPlanner: Sendable {
    /// Length of a kid (R-DEV-3).
    public static let kidLength = 16

    /// The notification content.
    public let content: NotificationContent
    /// The app's placeholders.
    public let placeholders: AppPlaceholders
    /// The notification's `encrypted` flag (require_encryption at send time, R-SEND-2).
    public let requireEncryption: Bool
    /// Test or live.
    public let mode: Mode
    /// Platforms whose credential set is `invalid` (live mode only; ignored in test mode, R-MODE-2).
    public let invalidCredentials: Set<Platform>

    private let sealed: [UInt8]
    private let apnsPrefix: [UInt8]
    private let apnsPlaintext: [UInt8]
    private let fcmPlaintext: FCMMessage

    /// Prepares the device-independent bytes for `content`.
    public init(content: NotificationContent, placeholders: AppPlaceholders, requireEncryption: Bool,
                mode: Mode, invalidCredentials: Set<Platform> = []) {
        self.content = content
        self.placeholders = placeholders
        self.requireEncryption = requireEncryption
        self.mode = mode
        self.invalidCredentials = invalidCredentials
        sealed = SealedPlaintext.bytes(for: content)
        apnsPrefix = APNsPayload.encryptedPrefix(content: content, placeholders: placeholders)
        apnsPlaintext = APNsPayload.plaintext(content: content)
        fcmPlaintext = FCMMessage.plaintext(token: "", content: content)
    }

    /// The sealed plaintext (R-ENC-3) shared by every encrypted delivery of this notification.
    public var sealedPlaintext: [UInt8] { sealed }

    /// Plans one device.
    public func plan(_ device: DeviceSnapshot) -> PlanDecision {
        guard let platform = Platform(rawValue: device.platform) else {
            return refuse(PushError(.unknownPlatform, "device platform is not ios, android or web"))
        }
        if let problem = Self.storedDeviceProblem(device, platform: platform) { return refuse(problem) }
        let key: String?
        switch keyState(device, platform: platform) {
        case .failure(let error): return refuse(error)
        case .success(let kid): key = kid
        }
        if mode == .live && invalidCredentials.contains(platform) {
            return refuse(PushError(.credentialsInvalid, "the app's \(platform.rawValue) credentials are invalid"))
        }
        let check = sizeCheck(platform: platform, kid: key)
        if let error = check.error { return refuse(error) }

        let body: PlannedDelivery.Body
        switch (platform, key) {
        case (.web, _):
            body = .webPush(plaintext: sealed)
        case (.ios, let kid?):
            body = .sealed(plaintext: sealed, template: PayloadTemplate(
                shape: .apns(prefix: apnsPrefix), kid: kid, plaintextLength: sealed.count, finalSize: check.size))
        case (.android, let kid?):
            let base = FCMMessage(token: device.token, data: [], priority: content.priority,
                                  collapseKey: content.collapseKey)
            body = .sealed(plaintext: sealed, template: PayloadTemplate(
                shape: .fcm(base), kid: kid, plaintextLength: sealed.count, finalSize: check.size))
        case (.ios, nil):
            body = .plaintext(.apns(body: apnsPlaintext))
        case (.android, nil):
            var message = fcmPlaintext
            message.token = device.token
            body = .plaintext(.fcm(message))
        }
        return .send(PlannedDelivery(platform: platform, token: device.token, apnsEnvironment: device.apnsEnvironment,
                                     priority: content.priority, pushType: content.pushType, collapseKey: content.collapseKey,
                                     encrypted: key != nil || platform == .web, finalSize: check.size, body: body))
    }

    /// The 4096-byte rule for one device without planning the rest (the acceptance check takes the
    /// largest among the targeted devices). Nil when the device is refused for another reason.
    public func sizeCheck(for device: DeviceSnapshot) -> SizeCheck? {
        guard let platform = Platform(rawValue: device.platform), Self.storedDeviceProblem(device, platform: platform) == nil,
              case .success(let kid) = keyState(device, platform: platform) else { return nil }
        return sizeCheck(platform: platform, kid: kid)
    }

    /// The smallest measure any payload kind gives this content: FCM plaintext's `data` keys and
    /// values plus `notification` title and body and the loc keys and args (R-SEND-7, R-KIND-3). Every
    /// other kind (APNs bodies, sealed plaintext, Web Push) measures more for the same content, so when
    /// this does not fit no device of any kind can take the notification: what the acceptance refuses
    /// whatever the audience, and what `push_enqueue` refuses by itself (its lower bound of this
    /// measure, sql/0006 with the loc texts of sql/0011).
    public var contentFloorCheck: SizeCheck {
        PayloadSizeRule.check(.plaintext, contentLength: fcmPlaintext.ruleSize)
    }

    /// Why a stored iOS or Android device cannot be sent to as it is (R-DEV-1, checked again at send
    /// time for rows written past the registry), or nil. Web devices are checked by the Web Push
    /// path (`INVALID_SUBSCRIPTION`).
    static func storedDeviceProblem(_ device: DeviceSnapshot, platform: Platform) -> PushError? {
        switch platform {
        case .web:
            return nil
        case .ios, .android:
            if !DeviceRegistration.isValidToken(device.token) {
                return PushError(.invalidStoredDevice, "the stored token is not 1 to \(DeviceRegistration.maxTokenLength) characters of A-Z a-z 0-9 _ : . -")
            }
            if platform == .ios && device.apnsEnvironment == nil {
                return PushError(.invalidStoredDevice, "the stored iOS device has no apns_environment")
            }
            return nil
        }
    }

    /// The acceptance check of R-SEND-7: among `devices`, the payload over 4096 bytes that needs
    /// the most content bytes cut, or nil when every payload fits (devices refused for another
    /// reason are ignored). Its `error` is the `PUSH_PAYLOAD_TOO_LARGE` answer to give.
    public func acceptanceSizeCheck(devices: [DeviceSnapshot]) -> SizeCheck? {
        devices.lazy.compactMap { self.sizeCheck(for: $0) }.filter { !$0.fits }.max { $0.bytesToCut < $1.bytesToCut }
    }

    /// One-shot form of `init` + `plan(_:)`.
    public static func plan(content: NotificationContent, placeholders: AppPlaceholders, requireEncryption: Bool,
                            mode: Mode, invalidCredentials: Set<Platform> = [], device: DeviceSnapshot) -> PlanDecision {
        DeliveryPlanner(content: content, placeholders: placeholders, requireEncryption: requireEncryption,
                        mode: mode, invalidCredentials: invalidCredentials).plan(device)
    }

    // MARK: - Private

    /// The kid to seal to (nil = plaintext, and always nil for web), or a refusal.
    private func keyState(_ device: DeviceSnapshot, platform: Platform) -> Result<String?, PushError> {
        if platform == .web { return .success(nil) }
        guard let key = device.publicKey else {
            if requireEncryption {
                return .failure(PushError(.encryptionKeyMissing, "the app requires encryption and the device has no key"))
            }
            return .success(nil)
        }
        guard key.count == Envelope.encLength, key.first == 0x04, let kid = device.kid,
              kid.utf8.count == Self.kidLength else {
            return .failure(PushError(.invalidDeviceKey, "the stored device key or kid is malformed"))
        }
        return .success(kid)
    }

    private func sizeCheck(platform: Platform, kid: String?) -> SizeCheck {
        switch (platform, kid) {
        case (.web, _):
            return PayloadSizeRule.check(.webPush, contentLength: sealed.count)
        case (.ios, let kid?):
            let fixed = apnsPrefix.count + APNsPayload.encryptedSuffix.count
            return PayloadSizeRule.check(.apnsEncrypted(fixed: fixed, kid: kid), contentLength: sealed.count)
        case (.android, let kid?):
            return PayloadSizeRule.check(.fcmEncrypted(kid: kid), contentLength: sealed.count)
        case (.ios, nil):
            return PayloadSizeRule.check(.plaintext, contentLength: apnsPlaintext.count)
        case (.android, nil):
            return PayloadSizeRule.check(.plaintext, contentLength: fcmPlaintext.ruleSize)
        }
    }

    private func refuse(_ error: PushError) -> PlanDecision {
        .refuse(error, refund: !LedgerRule.netsCharge(.failed(error.code)))
    }
}
