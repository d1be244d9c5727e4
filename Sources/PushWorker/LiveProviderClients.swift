import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore

/// The provider clients of the live router, one per (app, credential kind), each built by its
/// provider's descriptor (`ProviderTable`), kept across batches and rebuilt only when the set's
/// `version` changes (a replaced key, topic or service account). Not thread-safe: the router calls
/// it under its lock.
final class LiveProviderClients {
    /// Settings every client shares; `settings(kind)` gives one kind's.
    struct Settings {
        var caFile: String?
        var requestTimeoutMillis: [CredentialKind: Int]
        var tokenCaches: [CredentialKind: ProviderTokenCache]
        var allowLoopback: Bool
        var resolver: WebPushResolver
        /// The HTTP/2 client of APNs and FCM (Web Push ignores it).
        var transport: HTTPTransportKind = .nghttp2

        func settings(_ kind: CredentialKind) -> ProviderClientSettings {
            var http = HTTPClientConfiguration(caFile: caFile)
            http.transport = transport
            return ProviderClientSettings(http: http,
                                   requestTimeoutMillis: requestTimeoutMillis[kind] ?? 10_000,
                                   tokenCache: tokenCaches[kind] ?? InMemoryProviderTokenCache(),
                                   allowLoopback: allowLoopback, resolver: resolver)
        }
    }

    private struct Entry {
        var version: String
        var client: Result<PushProvider, PushError>
    }

    private let providers: ProviderTable
    private let settings: Settings
    private var entries: [UUID: [CredentialKind: Entry]] = [:]
    /// Clients built since start (tests check reuse).
    private(set) var built = 0

    init(providers: ProviderTable, settings: Settings) {
        self.providers = providers
        self.settings = settings
    }

    /// The client for `summary`'s set, reusing the cached one while the version is unchanged; `open`
    /// loads the set with its secret when a (re)build is needed.
    func client(for summary: CredentialSummary, open: () throws -> CredentialSet?) -> Result<PushProvider, PushError> {
        if let e = entries[summary.appID]?[summary.kind], e.version == summary.version { return e.client }
        let result: Result<PushProvider, PushError>
        do {
            guard let set = try open() else { throw PushError(.credentialsInvalid, "\(summary.kind.rawValue) set removed") }
            guard let provider = providers.provider(for: set.summary.kind) else {
                throw PushError(.providerError, "\(summary.kind.rawValue.prefix(40)) is not a provider of this release")
            }
            result = .success(try provider.makeClient(ProviderCredentials(identifiers: set.summary.identifiers, secret: set.secret),
                                                      settings.settings(set.summary.kind)))
            built += 1
        } catch let e as PushError {
            result = .failure(e)
        } catch {
            result = .failure(PushError(.providerError, "\(summary.kind.rawValue) client: \(Self.safe(error))"))
        }
        // Only working clients are kept: a failure (database, unreadable set) is tried again next batch.
        guard case .success = result else { return result }
        entries[summary.appID, default: [:]][summary.kind] = Entry(version: summary.version, client: result)
        return result
    }

    /// Forgets the clients of sets that no longer exist.
    func retain(appID: UUID, kinds: Set<CredentialKind>) {
        entries[appID] = entries[appID]?.filter { kinds.contains($0.key) }
    }

    /// An error's code only (client errors carry codes; never key material).
    static func safe(_ error: Error) -> String {
        switch error {
        case let e as PushError: return e.code.rawValue
        case let e as JWTError: return e.code
        case let e as FCMCredentialsError: return e.code
        case let e as HTTPClientError: return e.code
        case let e as PGError: return e.code.rawValue
        default: return String(describing: type(of: error))
        }
    }
}
