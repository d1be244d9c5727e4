import Dispatch
import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore

/// The production router (R-MODE-2, R-APP-3, R-APP-4): test mode goes to the simulator; live mode
/// goes by platform to the provider of the table (`ProviderTable`) and the app's client of that
/// provider, built from the app's credential set and kept across batches until the set is replaced.
/// Credential states come from a `CredentialSource` (`push_credentials` through its own connection
/// in production): a set that is missing or `invalid` makes its platform unusable (the planner fails
/// those deliveries `CREDENTIALS_INVALID` without a call); a set with a first acceptance is
/// verified (R-PRV-2 blame).
public final class LiveRouter: ProviderRouter, @unchecked Sendable {
    /// Router settings; every field has a production default.
    public struct Configuration {
        /// CA bundle for provider TLS (`PUSHFLEET_PROVIDER_CA_FILE`); nil = the system store. Never disables verification.
        public var caFile: String?
        /// APNs per-request deadline, milliseconds (default 10 000).
        public var apnsRequestTimeoutMillis: Int = 10_000
        /// FCM per-request deadline, milliseconds (default 10 000).
        public var fcmRequestTimeoutMillis: Int = 10_000
        /// Tests only: Web Push may reach a fake on 127.0.0.1 (never set in production).
        public var allowLoopback = false
        /// The Web Push send-time guard's host lookup (tests map names to addresses).
        public var resolver: WebPushResolver = SystemWebPushResolver()
        /// The providers served.
        public var providers: ProviderTable = .standard
        /// The HTTP/2 client of APNs and FCM (`PUSHFLEET_PROVIDER_HTTP_CLIENT`): `nghttp2` (the default)
        /// or `libcurl` (the fallback). Web Push always uses libcurl.
        public var providerTransport: HTTPTransportKind = .nghttp2

        public init(caFile: String? = nil) { self.caFile = caFile }
    }

    private let credentials: CredentialSource
    private let providers: ProviderTable
    private let clients: LiveProviderClients
    private let log: Log
    private let lock = NSLock()
    private var lastStates: [UUID: [CredentialSummary]] = [:]

    /// - Parameters:
    ///   - credentials: where credential sets are read.
    ///   - apnsTokenCache: where APNs JWTs live; `PGProviderTokenCache` shares one per signing key across the fleet.
    ///   - fcmTokenCache: where FCM access tokens live (process-local by default: not written to the database),
    ///     one per service-account key (`FCMClient.tokenCacheKey`).
    public init(credentials: CredentialSource, configuration: Configuration = Configuration(),
                apnsTokenCache: ProviderTokenCache, fcmTokenCache: ProviderTokenCache = InMemoryProviderTokenCache(),
                log: Log = .shared) {
        self.credentials = credentials
        self.providers = configuration.providers
        self.log = log
        self.clients = LiveProviderClients(providers: configuration.providers, settings: .init(
            caFile: configuration.caFile,
            requestTimeoutMillis: [.apns: configuration.apnsRequestTimeoutMillis, .fcm: configuration.fcmRequestTimeoutMillis],
            tokenCaches: [.apns: apnsTokenCache, .fcm: fcmTokenCache],
            allowLoopback: configuration.allowLoopback, resolver: configuration.resolver,
            transport: configuration.providerTransport))
    }

    /// A router reading credential sets from PostgreSQL through `openConnection` (its own
    /// connection, separate from the worker's queue session), secrets opened with `keys` (nil:
    /// every live platform unusable).
    public convenience init(keys: CredentialKeys?, configuration: Configuration = Configuration(),
                            apnsTokenCache: ProviderTokenCache, fcmTokenCache: ProviderTokenCache = InMemoryProviderTokenCache(),
                            log: Log = .shared, openConnection: @escaping () throws -> PGConnection) {
        self.init(credentials: PGCredentialSource(keys: keys, openConnection: openConnection), configuration: configuration,
                  apnsTokenCache: apnsTokenCache, fcmTokenCache: fcmTokenCache, log: log)
    }

    /// The router `pushfleet worker` runs: keys from `PUSHFLEET_CREDENTIALS_KEY` (and `_PREVIOUS`), CA file
    /// from `PUSHFLEET_PROVIDER_CA_FILE`, the APNs/FCM HTTP/2 client from `PUSHFLEET_PROVIDER_HTTP_CLIENT`
    /// (`nghttp2` or `libcurl`), APNs JWTs shared through PostgreSQL, sealed under the same keys.
    /// - Throws: `VALIDATION_ERROR` for a malformed key or client name (a missing key only logs a
    ///   warning: live mode is then off).
    public static func fromEnvironment(databaseURL: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                                       log: Log = .shared) throws -> LiveRouter {
        var keys: CredentialKeys?
        if environment[CredentialKeys.currentVariable].map({ !$0.isEmpty }) == true {
            keys = try CredentialKeys.fromEnvironment(environment)
        } else {
            log.warn("live.no_credentials_key", ["variable": CredentialKeys.currentVariable,
                                                 "effect": "live deliveries fail CREDENTIALS_INVALID"])
        }
        let ca = environment["PUSHFLEET_PROVIDER_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let open = { try PGConnection.connect(databaseURL) }
        var configuration = Configuration(caFile: ca)
        configuration.providerTransport = try providerTransport(environment)
        // Tests only: let Web Push reach a fake on 127.0.0.1 (never set in production).
        configuration.allowLoopback = environment["PUSHFLEET_WEBPUSH_ALLOW_LOOPBACK"] == "1"
        // Without keys no live set opens, so no APNs client is ever built: nothing to share.
        let apnsTokens: ProviderTokenCache = keys.map { PGProviderTokenCache(keys: $0, log: log, openConnection: open) }
            ?? InMemoryProviderTokenCache()
        return LiveRouter(keys: keys, configuration: configuration, apnsTokenCache: apnsTokens, log: log, openConnection: open)
    }

    /// `PUSHFLEET_PROVIDER_HTTP_CLIENT`: `nghttp2` when unset or empty.
    /// - Throws: `VALIDATION_ERROR` for any other value than `nghttp2` or `libcurl`.
    static func providerTransport(_ environment: [String: String]) throws -> HTTPTransportKind {
        guard let name = environment["PUSHFLEET_PROVIDER_HTTP_CLIENT"], !name.isEmpty else { return .nghttp2 }
        guard let kind = HTTPTransportKind(rawValue: name) else {
            throw PushError(.validationError, "PUSHFLEET_PROVIDER_HTTP_CLIENT must be nghttp2 or libcurl")
        }
        return kind
    }

    /// Provider clients built since start (one per app and kind, unless a set was replaced).
    public var clientsBuilt: Int { lock.withLock { clients.built } }

    // MARK: - ProviderRouter

    /// Unusable: platforms whose set is missing or `invalid` (all, without keys); verified: sets with a
    /// first acceptance (R-APP-3). Reads the credential source once.
    /// - Throws: the source's error when it stays unreachable.
    public func credentialStates(appID: UUID) throws -> CredentialStates {
        let summaries = try lock.withLock { try readStates(appID: appID) }
        var states = CredentialStates(unusable: providers.platforms, verified: [])
        guard credentials.canOpenSecrets else { return states }
        for s in summaries {
            guard let platform = providers.provider(for: s.kind)?.platform else { continue }
            if s.state != .invalid { states.unusable.remove(platform) }
            if s.isVerified { states.verified.insert(platform) }
        }
        return states
    }

    /// One provider's pushes of a call and the app's client of that provider.
    private typealias Group = (provider: ProviderDescriptor, indices: [Int], client: Result<PushProvider, PushError>)

    /// The pushes of a live call grouped by provider with the app's client of each (built or
    /// reused under the lock), and the pushes no provider serves.
    private func groups(appID: UUID, pushes: [OutboundPush]) -> (groups: [Group], unserved: [Int]) {
        var groups: [Group] = []
        var unserved: [Int] = []
        lock.withLock {
            let summaries = lastStates[appID] ?? ((try? readStates(appID: appID)) ?? [])
            var byKind: [CredentialKind: [Int]] = [:]
            for i in pushes.indices {
                guard let kind = providers.provider(for: pushes[i].platform)?.credentialKind else { unserved.append(i); continue }
                byKind[kind, default: []].append(i)
            }
            for provider in providers.descriptors {
                guard let indices = byKind[provider.credentialKind] else { continue }
                let kind = provider.credentialKind
                guard let summary = summaries.first(where: { $0.kind == kind }) else {
                    groups.append((provider, indices, .failure(PushError(.credentialsInvalid, "no \(kind.rawValue) set"))))
                    continue
                }
                groups.append((provider, indices, clients.client(for: summary) { try self.loadSet(appID: appID, kind: kind) }))
            }
        }
        return (groups, unserved)
    }

    /// Live mode: each push's scopes from the app's client of its provider (none in test mode, or
    /// without a client).
    public func pauseScopes(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [[String]] {
        var scopes = [[String]](repeating: [], count: pushes.count)
        if mode == .test { return scopes }
        for group in groups(appID: appID, pushes: pushes).groups {
            guard case .success(let client) = group.client else { continue }
            for i in group.indices { scopes[i] = client.pauseScopes(for: Self.request(pushes[i], index: i)) }
        }
        return scopes
    }

    /// Test mode: the simulator. Live mode: one concurrent batch per provider to the app's client.
    public func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)] {
        if mode == .test { return pushes.map(SimulatorOnlyRouter.simulate) }
        let (groups, unserved) = self.groups(appID: appID, pushes: pushes)
        var answers = [(ProviderKind, ProviderAnswer)?](repeating: nil, count: pushes.count)
        let answersLock = NSLock()
        DispatchQueue.concurrentPerform(iterations: groups.count) { g in
            let group = groups[g]
            let result: [ProviderAnswer]
            switch group.client {
            case .success(let client):
                result = client.send(group.indices.map { Self.request(pushes[$0], index: $0) })
            case .failure(let error):
                log.warn("live.client_unavailable", ["app_id": PrefixedID.format(.app, appID),
                                                      "kind": group.provider.credentialKind.rawValue, "error": error.code.rawValue])
                result = group.indices.map { _ in
                    ProviderAnswer(transport: .notSent,
                                   rawDetail: "\(group.provider.credentialKind.rawValue) client unavailable: \(error.message)")
                }
            }
            answersLock.withLock {
                for (slot, answer) in zip(group.indices, result) { answers[slot] = (group.provider.label, answer) }
            }
        }
        for i in unserved { answers[i] = (.simulator, ProviderAnswer(transport: .notSent, rawDetail: "no provider for the platform")) }
        return answers.map { $0 ?? (.simulator, ProviderAnswer(transport: .notSent, rawDetail: "no answer from provider")) }
    }

    // MARK: - Mapping

    /// The provider request for one push: `apns-id` lower-case and stable across attempts, priority,
    /// `apns-expiration`, collapse id, FCM/Web Push body as built.
    public static func request(_ p: OutboundPush, index: Int) -> ProviderRequest {
        ProviderRequest(deliveryId: Int64(index), deviceToken: p.token, apnsEnvironment: p.apnsEnvironment ?? .production,
                        payload: p.body, priority: p.priority, pushType: p.pushType, expirationUnixSeconds: p.apnsExpiration,
                        collapseId: p.collapseKey, apnsId: p.apnsID.uuidString.lowercased(),
                        ttlSeconds: Int64(p.secondsLeft))
    }

    // MARK: - Credentials (called under `lock`)

    private func readStates(appID: UUID) throws -> [CredentialSummary] {
        let summaries = try credentials.states(appID: appID)
        lastStates[appID] = summaries
        clients.retain(appID: appID, kinds: Set(summaries.map(\.kind)))
        return summaries
    }

    private func loadSet(appID: UUID, kind: CredentialKind) throws -> CredentialSet? {
        try credentials.load(appID: appID).first { $0.summary.kind == kind }
    }
}
