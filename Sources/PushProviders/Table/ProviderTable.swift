import PushCore

/// The providers this release serves, one descriptor each. Adding a provider is one file with its
/// descriptor (`extension ProviderDescriptor { static let name = ... }`) and one entry here; every
/// part of the product that depends on the provider (the checks of its credential sets, the
/// planner's payload writer, the answer table, the live router's clients, the metrics' labels, registration, and on PostgreSQL the
/// platforms the SQL functions accept, which the processes write into `push_platforms` from this
/// table at start-up) reads it from this table.
extension ProviderTable {
    /// The product's table.
    public static let standard = ProviderTable([.apns, .fcm, .webPush])
}

/// Everything the product knows about one provider, in one value.
public struct ProviderDescriptor: Sendable {
    /// The devices it serves (`push_devices.platform`).
    public var platform: Platform
    /// How those devices register (R-DEV-1).
    public var addressing: DeviceAddressing
    /// The credential set it needs in live mode (`push_credentials.kind`, R-APP-3).
    public var credentialKind: CredentialKind
    /// How its credential sets are checked before they are stored (R-APP-3).
    public var credentials: any CredentialRules
    /// Who answered, as metrics and delivery rows name it (`pushfleet_deliveries_total{provider}`).
    public var label: ProviderKind
    /// Writes and measures its payloads (R-SEND-7).
    public var payload: any PayloadWriter
    /// What its answers mean (R-PRV-1..3, R-SEND-12).
    public var answers: any AnswerRules
    /// Builds a client for one credential set (kept by the live router until the set changes).
    public var makeClient: @Sendable (ProviderCredentials, ProviderClientSettings) throws -> PushProvider

    /// Makes a descriptor.
    public init(platform: Platform, addressing: DeviceAddressing, credentials: any CredentialRules, label: ProviderKind,
                payload: any PayloadWriter, answers: any AnswerRules,
                makeClient: @escaping @Sendable (ProviderCredentials, ProviderClientSettings) throws -> PushProvider) {
        self.platform = platform
        self.addressing = addressing
        self.credentialKind = credentials.kind
        self.credentials = credentials
        self.label = label
        self.payload = payload
        self.answers = answers
        self.makeClient = makeClient
    }
}

/// A credential set as a client factory sees it: non-secret identifiers and the secret in clear.
public struct ProviderCredentials: Sendable {
    /// Identifiers and overrides (`team_id`, `topic`, base URLs, ...).
    public var identifiers: [String: String]
    /// The secret: a `.p8` PEM, a service-account JSON, a VAPID key PEM.
    public var secret: [UInt8]

    /// Makes a value.
    public init(identifiers: [String: String], secret: [UInt8]) {
        self.identifiers = identifiers
        self.secret = secret
    }
}

/// What every client of one kind shares.
public struct ProviderClientSettings: Sendable {
    /// TLS and connection settings (CA file).
    public var http: HTTPClientConfiguration
    /// Per-request deadline, milliseconds.
    public var requestTimeoutMillis: Int
    /// Where provider tokens live (APNs JWTs, FCM access tokens).
    public var tokenCache: ProviderTokenCache
    /// Tests only: endpoints on 127.0.0.1 (Web Push) may be reached.
    public var allowLoopback: Bool
    /// How endpoint hosts are looked up for the send-time address guard (Web Push).
    public var resolver: WebPushResolver

    /// Makes settings.
    public init(http: HTTPClientConfiguration, requestTimeoutMillis: Int = 10_000,
                tokenCache: ProviderTokenCache = InMemoryProviderTokenCache(), allowLoopback: Bool = false,
                resolver: WebPushResolver = SystemWebPushResolver()) {
        self.http = http
        self.requestTimeoutMillis = requestTimeoutMillis
        self.tokenCache = tokenCache
        self.allowLoopback = allowLoopback
        self.resolver = resolver
    }
}

/// A list of provider descriptors with lookups by each of their keys.
public struct ProviderTable: Sendable {
    /// The descriptors, in order.
    public let descriptors: [ProviderDescriptor]

    /// A table of `descriptors` (later ones win on a repeated platform, kind or label).
    public init(_ descriptors: [ProviderDescriptor]) {
        self.descriptors = descriptors
        planning = Dictionary(descriptors.map { ($0.platform, PlatformRules(writer: $0.payload, addressing: $0.addressing)) },
                              uniquingKeysWith: { _, b in b })
    }

    /// This table with `descriptor` added (tests register extra providers this way).
    public func adding(_ descriptor: ProviderDescriptor) -> ProviderTable { ProviderTable(descriptors + [descriptor]) }

    /// The provider serving `platform`.
    public func provider(for platform: Platform) -> ProviderDescriptor? { descriptors.last { $0.platform == platform } }
    /// The provider whose credential sets are of `kind`.
    public func provider(for kind: CredentialKind) -> ProviderDescriptor? { descriptors.last { $0.credentialKind == kind } }
    /// The provider answering as `label`.
    public func provider(labelled label: ProviderKind) -> ProviderDescriptor? { descriptors.last { $0.label == label } }

    /// The rules of a set of `kind`: its provider's, or the SMS provider's.
    /// - Throws: `VALIDATION_ERROR` (field `kind`) for a kind no descriptor nor SMS provider has.
    public func credentialRules(for kind: CredentialKind) throws -> any CredentialRules {
        if let rules = provider(for: kind)?.credentials ?? CredentialKind.smsRules.first(where: { $0.kind == kind }) {
            return rules
        }
        throw PushError(.validationError, "kind: \(kind.rawValue.prefix(40)) has no credential validation", field: "kind")
    }

    /// Every platform served.
    public var platforms: Set<Platform> { Set(descriptors.map(\.platform)) }
    /// Every platform served with what SQL needs of it (`push_platforms`, sql/0024: addressing and
    /// whether its writer encrypts itself), in platform order; the provider serving each, as `provider(for:)`.
    public var servedPlatforms: [PlatformTraits] {
        platforms.sorted { $0.rawValue < $1.rawValue }.compactMap { p in
            provider(for: p).map { PlatformTraits(platform: p, addressing: $0.addressing, encryptsItself: $0.payload.encryptsItself) }
        }
    }
    /// Every credential kind, in table order.
    public var credentialKinds: [CredentialKind] { descriptors.map(\.credentialKind) }
    /// The planner's rules by platform (payload writer, addressing), built once with the table
    /// (the worker reads it for every claim).
    public let planning: [Platform: PlatformRules]
    /// Registration's addressing by platform.
    public var addressing: [Platform: DeviceAddressing] {
        Dictionary(descriptors.map { ($0.platform, $0.addressing) }, uniquingKeysWith: { _, b in b })
    }

    /// The answer rules for `label`: the provider's, or the simulator's for test mode; nil for a
    /// label no provider of the table has.
    public func answerRules(_ label: ProviderKind) -> (any AnswerRules)? {
        label == .simulator ? SimulatorAnswerRules() : provider(labelled: label)?.answers
    }
}
