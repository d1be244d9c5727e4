/// A device's platform (R-DEV-1): the stored spelling, `push_devices.platform`. Open on purpose:
/// the provider table (`ProviderTable` in PushProviders) says which platforms this release serves;
/// a device of any other platform fails only its own delivery (`UNKNOWN_PLATFORM`, the planner).
public struct Platform: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// Wraps a stored spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Apple device reached through APNs.
    public static let ios = Platform(rawValue: "ios")
    /// Android device reached through FCM HTTP v1.
    public static let android = Platform(rawValue: "android")
    /// Browser subscription reached through Web Push (RFC 8030/8291); always encrypted (R-SEND-11).
    public static let web = Platform(rawValue: "web")
}

extension Platform: ExpressibleByStringLiteral {
    /// A literal is the stored spelling.
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// How a platform's devices are addressed at registration (R-DEV-1): by a provider token (with an
/// APNs environment or not), or by a Web Push subscription (endpoint, p256dh, auth). Each provider
/// of the table says which (`ProviderDescriptor.addressing`).
public enum DeviceAddressing: Sendable, Hashable {
    /// A provider token of `A-Z a-z 0-9 _ : . -`; `apnsEnvironment`: the device names its APNs host.
    case token(apnsEnvironment: Bool)
    /// A Web Push subscription (RFC 8030 endpoint, RFC 8291 keys); no encryption key of its own.
    case subscription
}

/// What the database is told about one platform a deployment serves (`push_platforms`, sql/0024):
/// how its devices register and whether its transport encrypts every push itself (the acceptance
/// charges' policy, R-SEND-11). The provider table's descriptors give both
/// (`ProviderTable.servedPlatforms`); SQL stores them and reads them, and names no platform itself.
public struct PlatformTraits: Sendable, Hashable {
    /// The platform (`push_devices.platform`).
    public var platform: Platform
    /// How its devices register (R-DEV-1).
    public var addressing: DeviceAddressing
    /// Its payload writer's `encryptsItself`.
    public var encryptsItself: Bool

    /// Makes a value.
    public init(platform: Platform, addressing: DeviceAddressing, encryptsItself: Bool) {
        self.platform = platform
        self.addressing = addressing
        self.encryptsItself = encryptsItself
    }
}

/// Who answered a push, the label of `pushfleet_deliveries_total{provider}` and the spelling of
/// `push_deliveries.provider`: one per provider of the table, plus the test-mode simulator.
public struct ProviderKind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// Wraps a label.
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Apple Push Notification service.
    public static let apns = ProviderKind(rawValue: "apns")
    /// Firebase Cloud Messaging HTTP v1.
    public static let fcm = ProviderKind(rawValue: "fcm")
    /// A Web Push service (RFC 8030).
    public static let webpush = ProviderKind(rawValue: "webpush")
    /// The test-mode simulator (R-MODE-2); reasons are `SimulatorReason` values.
    public static let simulator = ProviderKind(rawValue: "simulator")
}

/// Which provider a credential set serves, `push_credentials.kind` (R-APP-3).
public struct CredentialKind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// Wraps a stored spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// APNs token auth: team id, key id, `.p8` key, topic.
    public static let apns = CredentialKind(rawValue: "apns")
    /// FCM HTTP v1: a Google service account.
    public static let fcm = CredentialKind(rawValue: "fcm")
    /// Web Push: a VAPID key pair (RFC 8292).
    public static let webpush = CredentialKind(rawValue: "webpush")
    /// The app's SMS provider (R-SMS-1): Twilio's account SID and auth token, or an API key SID and
    /// secret, and the sender. Stored in `push_sms_credentials` (sql/0012), which workers of earlier
    /// releases never read; never a push provider of the provider table.
    public static let twilio = CredentialKind(rawValue: "twilio")

    /// The SMS providers' kinds (their sets live in `push_sms_credentials`).
    public static let sms: Set<CredentialKind> = [.twilio]

    /// True for an SMS provider's set (`twilio`).
    public var isSMS: Bool { Self.sms.contains(self) }
}

/// Test or live (R-MODE-1, R-MODE-2): a mode of a device and of a notification, never of an app.
public enum Mode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Answered by the built-in simulator; never billed, never touches credential state.
    case test
    /// Sent to the real providers.
    case live
}

/// APNs environment of an iOS token (R-DEV-1; Apple's "Sending notification requests to APNs").
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// `api.sandbox.push.apple.com` (builds run from Xcode).
    case sandbox
    /// `api.push.apple.com` (App Store, TestFlight, ad hoc).
    case production
}
