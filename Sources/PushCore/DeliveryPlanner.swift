import struct Foundation.UUID

/// The pure send-time policy (R-SEND-3..7, R-SEND-11, R-APP-4, R-MODE-2): per device,
/// `.refuse(error)` or `.send(PlannedDelivery)`.
///
/// Build one planner per notification (it prepares the device-independent bytes once), then call
/// `plan(_:)` per device. Checks, in order:
/// 1. platform served by the provider table, else `UNKNOWN_PLATFORM`; a token-addressed device that
///    R-DEV-1 would refuse (token outside its alphabet or length, iOS without `apns_environment`: a
///    row written past the registry) → `INVALID_STORED_DEVICE`, never handed to a provider;
/// 2. key policy: a writer that encrypts by itself (Web Push) always encrypted (R-SEND-11), whatever
///    the content mode; in `ids_only` (R-IDS-1) every other device gets its writer's `ids_only`
///    payload, keyed or not, never refused for a missing key and never sealed (a provider without
///    such a form: `UNKNOWN_PLATFORM`, never the content); otherwise a key →
///    encrypted (R-SEND-3); no key and
///    `encrypted` (the notification's require_encryption read at send time) → `ENCRYPTION_KEY_MISSING`
///    (R-SEND-5); else plaintext (R-SEND-4). A key that is not 65 bytes starting 0x04 or a kid
///    that is not 16 characters → `INVALID_DEVICE_KEY` (the curve itself is checked by the store);
/// 3. live mode only: the platform's credential set invalid → `CREDENTIALS_INVALID` (R-APP-4);
/// 4. the 4096-byte rule, measured by the platform's writer → `PUSH_PAYLOAD_TOO_LARGE` stating the
///    bytes to cut (R-SEND-7).
/// What a refusal nets is `LedgerRule`'s decision (every code the planner refuses with nets zero).
public struct DeliveryPlanner: Sendable {
    /// Length of a kid (R-DEV-3).
    public static let kidLength = 16

    /// The notification content.
    public var content: NotificationContent { notification.content }
    /// The app's placeholders.
    public var placeholders: AppPlaceholders { notification.placeholders }
    /// The notification's `encrypted` flag (require_encryption at send time, R-SEND-2).
    public let requireEncryption: Bool
    /// Test or live.
    public let mode: Mode
    /// Platforms whose credential set is `invalid` (live mode only; ignored in test mode, R-MODE-2).
    public let invalidCredentials: Set<Platform>
    /// The notification's content mode (the app's at send time, R-IDS-1).
    public let contentMode: ContentMode

    /// Each platform's rules (the provider table's `planning`).
    let rules: [Platform: PlatformRules]
    /// The prepared platforms' entries, looked up by comparing platforms: a table holds a handful
    /// of providers, where hashing the platform's spelling on every `plan(_:)` cost more than the
    /// plan's own work (docs/bench.md, issue 16).
    private let entries: [Entry]
    private let notification: PreparedNotification

    /// Prepares the device-independent bytes for `content`, with each platform's rules (the
    /// provider table's `planning`); a platform without rules is refused `UNKNOWN_PLATFORM`.
    /// `notificationID` is what an `ids_only` marker carries; nil only to measure (acceptance).
    /// `preparing`: the platforms of the devices that will be planned (a batch's), nil for every
    /// platform of the table. Only those are prepared now; a device of another platform is still
    /// planned the same, its payloads then prepared again for each such device (correct, slower).
    public init(content: NotificationContent, placeholders: AppPlaceholders, requireEncryption: Bool,
                mode: Mode, contentMode: ContentMode = .sealed, notificationID: UUID? = nil,
                invalidCredentials: Set<Platform> = [], platforms: [Platform: PlatformRules],
                preparing: [Platform]? = nil) {
        self.requireEncryption = requireEncryption
        self.mode = mode
        self.contentMode = contentMode
        self.invalidCredentials = invalidCredentials
        rules = platforms
        notification = PreparedNotification(content: content, placeholders: placeholders, notificationID: notificationID)
        var entries: [Entry] = []
        for (platform, rules) in platforms where preparing?.contains(platform) ?? true {
            entries.append(Entry(platform: platform, rules: rules, contentMode: contentMode, notification))
        }
        self.entries = entries
    }

    /// The sealed plaintext (R-ENC-3) shared by every encrypted delivery of this notification.
    public var sealedPlaintext: [UInt8] { notification.sealedPlaintext }

    /// Plans one device.
    public func plan(_ device: DeviceSnapshot) -> PlanDecision {
        guard let entry = entries.first(where: { $0.platform == device.platform }) ?? entry(device.platform) else {
            return .refuse(PushError(.unknownPlatform, "device platform \(device.platform.rawValue.prefix(40)) is not one this release serves"))
        }
        return plan(device, entry)
    }

    /// The 4096-byte rule for one device without planning the rest (the acceptance check takes the
    /// largest among the targeted devices). Nil when the device is refused for another reason.
    public func sizeCheck(for device: DeviceSnapshot) -> SizeCheck? {
        guard let entry = entries.first(where: { $0.platform == device.platform }) ?? entry(device.platform),
              Self.storedDeviceProblem(device, addressing: entry.addressing) == nil,
              case .success(let kid) = keyState(device, encryptsItself: entry.encryptsItself, idsOnly: entry.idsOnly)
        else { return nil }
        return entry.payload(token: device.token, kid: kid)?.check
    }

    /// The smallest measure any payload kind of the table gives this content (R-SEND-7, R-KIND-3):
    /// with the standard providers FCM plaintext's `data` keys and values plus `notification` title
    /// and body and the loc keys and args; every other kind (APNs bodies, sealed plaintext, Web Push)
    /// measures more for the same content, so when this does not fit no device of any kind can take
    /// the notification: what the acceptance refuses whatever the audience, and what `push_enqueue`
    /// refuses by itself (its lower bound of this measure, sql/0006 with the loc texts of sql/0011).
    public var contentFloorCheck: SizeCheck {
        rules.keys.compactMap { platform in
            (entries.first { $0.platform == platform } ?? entry(platform))?.payload(token: "", kid: nil)?.check
        }.min { $0.size < $1.size }
            ?? PayloadSizeRule.check(.plaintext, contentLength: notification.sealedPlaintext.count)
    }

    /// Why a stored token-addressed device cannot be sent to as it is (R-DEV-1, checked again at
    /// send time for rows written past the registry), or nil. Subscriptions are checked by the Web
    /// Push path (`INVALID_SUBSCRIPTION`).
    static func storedDeviceProblem(_ device: DeviceSnapshot, addressing: DeviceAddressing) -> PushError? {
        guard case .token(let needsEnvironment) = addressing else { return nil }
        if !DeviceRegistration.isValidToken(device.token) {
            return PushError(.invalidStoredDevice, "the stored token is not 1 to \(DeviceRegistration.maxTokenLength) characters of A-Z a-z 0-9 _ : . -")
        }
        if needsEnvironment && device.apnsEnvironment == nil {
            return PushError(.invalidStoredDevice, "the stored iOS device has no apns_environment")
        }
        return nil
    }

    /// The acceptance check of R-SEND-7: among `devices`, the payload over 4096 bytes that needs
    /// the most content bytes cut, or nil when every payload fits (devices refused for another
    /// reason are ignored). Its `error` is the `PUSH_PAYLOAD_TOO_LARGE` answer to give.
    public func acceptanceSizeCheck(devices: [DeviceSnapshot]) -> SizeCheck? {
        devices.lazy.compactMap { self.sizeCheck(for: $0) }.filter { !$0.fits }.max { $0.bytesToCut < $1.bytesToCut }
    }

    /// R-SEND-3..5, R-SEND-11, R-IDS-1: whether the policy delivers to a device with (`hasKey`) or
    /// without a key, for a platform whose writer does or does not encrypt by itself, under the
    /// app's `require_encryption` and content mode (`ids_only` carries no content, so R-SEND-5 does
    /// not refuse a keyless device). The planner's key policy, without the key's well-formedness.
    /// At acceptance the same policy is `push_enqueue`'s charge predicate (SQL, its one owner
    /// there); `PGQueueConformanceTests` holds the two to each other.
    public static func policyDelivers(hasKey: Bool, encryptsItself: Bool, requireEncryption: Bool,
                                      contentMode: ContentMode = .sealed) -> Bool {
        hasKey || encryptsItself || !requireEncryption || contentMode == .idsOnly
    }

    // MARK: - Private

    /// A platform `init` did not prepare: its entry, prepared now (nil: no rules for it).
    private func entry(_ platform: Platform) -> Entry? {
        rules[platform].map { Entry(platform: platform, rules: $0, contentMode: contentMode, notification) }
    }

    /// `plan(_:)` for a device of `entry`'s platform, its payloads prepared.
    private func plan(_ device: DeviceSnapshot, _ entry: Entry) -> PlanDecision {
        if entry.lacksIDsOnlyForm {
            return .refuse(PushError(.unknownPlatform, "device platform \(device.platform.rawValue.prefix(40)) has no ids_only payload"))
        }
        if let problem = Self.storedDeviceProblem(device, addressing: entry.addressing) { return .refuse(problem) }
        let key: String?
        switch keyState(device, encryptsItself: entry.encryptsItself, idsOnly: entry.idsOnly) {
        case .failure(let error): return .refuse(error)
        case .success(let kid): key = kid
        }
        if mode == .live && invalidCredentials.contains(device.platform) {
            return .refuse(PushError(.credentialsInvalid, "the app's \(device.platform.rawValue) credentials are invalid"))
        }
        guard let (check, body) = entry.payload(token: device.token, kid: key) else {
            return .refuse(PushError(.unknownPlatform, "device platform \(device.platform.rawValue.prefix(40)) has no ids_only payload"))
        }
        if let error = check.error { return .refuse(error) }
        return .send(PlannedDelivery(platform: device.platform, token: device.token, apnsEnvironment: device.apnsEnvironment,
                                     priority: content.priority, pushType: content.pushType, collapseKey: content.collapseKey,
                                     encrypted: key != nil || entry.encryptsItself, finalSize: check.size, body: body))
    }

    /// The kid to seal to (nil = plaintext, and always nil for a writer that encrypts by itself or
    /// an `ids_only` payload, which seals nothing), or a refusal.
    private func keyState(_ device: DeviceSnapshot, encryptsItself: Bool, idsOnly: Bool) -> Result<String?, PushError> {
        if encryptsItself || idsOnly { return .success(nil) }
        guard let key = device.publicKey else {
            if !Self.policyDelivers(hasKey: false, encryptsItself: false, requireEncryption: requireEncryption,
                                    contentMode: contentMode) {
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
}

extension DeliveryPlanner {
    /// One platform of the planner: its rules, read once, and this notification's payloads (a
    /// class: `plan(_:)` finds and reads it without copying its existentials).
    final class Entry: Sendable {
        let platform: Platform
        let writer: any PayloadWriter
        let addressing: DeviceAddressing
        /// `writer.encryptsItself`, read once.
        let encryptsItself: Bool
        /// Sent the `ids_only` payloads (R-IDS-1): the device key is not used.
        let idsOnly: Bool
        /// This notification's payloads; nil when `lacksIDsOnlyForm`.
        let payloads: (any PreparedPayloads)?
        /// `ids_only` and the writer has no such form: the platform's devices are refused.
        let lacksIDsOnlyForm: Bool

        /// The entry of `platform`, its payloads prepared for `notification` (the `ids_only` ones
        /// when the content mode says so and the writer does not encrypt by itself).
        init(platform: Platform, rules: PlatformRules, contentMode: ContentMode, _ notification: PreparedNotification) {
            self.platform = platform
            writer = rules.writer
            addressing = rules.addressing
            encryptsItself = writer.encryptsItself
            idsOnly = contentMode == .idsOnly && !encryptsItself
            payloads = idsOnly ? writer.prepareIDsOnly(notification) : writer.prepare(notification)
            lacksIDsOnlyForm = payloads == nil
        }

        /// The check and body for one device; nil when the writer has no `ids_only` form.
        func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body)? {
            payloads?.payload(token: token, kid: kid)
        }
    }
}
