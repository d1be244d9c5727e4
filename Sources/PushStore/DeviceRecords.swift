import Foundation

/// A device as stored after a registration: what the API answers (issue 14), never its key.
public struct StoredDevice: Sendable, Equatable, Codable {
    /// The device id.
    @PrefixedUUID<DeviceIDKind> public var id: UUID
    /// Its push app.
    @PrefixedUUID<AppIDKind> public var appID: UUID
    /// `ios`, `android` or `web`.
    public var platform: String
    /// The user it belongs to now (R-DEV-2).
    public var userID: String
    /// `sandbox` or `production` for iOS, else nil.
    public var apnsEnvironment: String?
    /// True after a registration (R-DEV-7 reactivates).
    public var active: Bool
    /// The kid of its key (R-DEV-3), nil when it has none.
    public var encryptionKeyID: String?
    /// When the device (its token or endpoint) was first registered.
    public var createdAt: Date
    /// This registration's time (R-DEV-8: never moves backwards).
    public var lastRegisteredAt: Date

    /// Makes a device value.
    public init(id: UUID, appID: UUID, platform: String, userID: String, apnsEnvironment: String?, active: Bool,
                encryptionKeyID: String?, createdAt: Date, lastRegisteredAt: Date) {
        self.id = id
        self.appID = appID
        self.platform = platform
        self.userID = userID
        self.apnsEnvironment = apnsEnvironment
        self.active = active
        self.encryptionKeyID = encryptionKeyID
        self.createdAt = createdAt
        self.lastRegisteredAt = lastRegisteredAt
    }
}

/// What a registration did (R-DEV-2, R-DEV-5, R-DEV-7).
public struct RegistrationResult: Sendable, Equatable, Codable {
    /// The device's id: new, or the existing device of that token or endpoint (R-DEV-2).
    @PrefixedUUID<DeviceIDKind> public var deviceID: UUID
    /// A new device (new token or endpoint).
    public var created: Bool
    /// A deactivated device registered again (R-DEV-7).
    public var reactivated: Bool
    /// Devices of the same user deactivated with DEVICE_LIMIT (R-DEV-5).
    @PrefixedUUIDs<DeviceIDKind> public var evicted: [UUID]
    /// The device as stored now.
    public var device: StoredDevice
    /// The device's new preview token (issue 24 part 2), when this registration created the device
    /// or rotated its token; nil otherwise (only its hash is stored: it cannot be shown again).
    public var previewToken: String?

    /// Makes a value (the registry's decoder and test doubles).
    public init(deviceID: UUID, created: Bool, reactivated: Bool, evicted: [UUID], device: StoredDevice,
                previewToken: String? = nil) {
        self.deviceID = deviceID
        self.created = created
        self.reactivated = reactivated
        self.evicted = evicted
        self.device = device
        self.previewToken = previewToken
    }
}

/// A device as the API shows it: never its key, only `encryption_key_id` (R-DEV-3).
public struct DeviceInfo: Sendable, Codable, Equatable {
    /// The device id.
    @PrefixedUUID<DeviceIDKind> public var id: UUID
    /// `ios`, `android` or `web` (as stored; a newer release may add others).
    public var platform: String
    /// Provider token (iOS, Android); nil for web.
    public var token: String?
    /// Web Push endpoint; nil for iOS and Android. The subscription keys are not shown.
    public var endpoint: String?
    /// The user the device currently belongs to (R-DEV-2).
    public var userID: String
    /// `sandbox` or `production` for iOS, else nil.
    public var apnsEnvironment: String?
    /// The kid of the device's key, nil when it has none.
    public var encryptionKeyID: String?
    /// False once deleted (R-DEV-7), displaced (R-DEV-5) or rejected by its provider (R-PRV-1/2).
    public var active: Bool
    /// The latest registration (R-DEV-5 order, R-DEV-8 ordering against provider verdicts).
    public var lastRegisteredAt: Date
    /// When it was deactivated, nil while active.
    public var deactivatedAt: Date?
    /// `DELETED`, `DEVICE_LIMIT`, `UNREGISTERED`, `INVALID_TOKEN` or `APP_MISMATCH`; nil while active.
    public var deactivationReason: String?
}
