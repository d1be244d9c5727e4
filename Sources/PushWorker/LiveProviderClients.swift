import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore

/// Builds a Web Push client for an app's `webpush` set (issue 7 plugs its `WebPushClient` in here).
public typealias WebPushClientFactory = (_ set: CredentialSet, _ http: HTTPClientConfiguration) throws -> PushProvider

/// The provider clients of the live router, one per (app, credential kind), kept across batches and
/// rebuilt only when the set's `version` changes (a replaced key, topic or service account).
/// Not thread-safe: the router calls it under its lock.
final class LiveProviderClients {
    /// Settings every client shares.
    struct Settings {
        var caFile: String?
        var apnsRequestTimeoutMillis: Int
        var fcmRequestTimeoutMillis: Int
        var apnsTokenCache: ProviderTokenCache
        var fcmTokenCache: ProviderTokenCache
        var webPush: WebPushClientFactory?
        /// The HTTP/2 client of APNs and FCM (Web Push ignores it).
        var transport: HTTPTransportKind = .nghttp2
    }

    private struct Entry {
        var version: String
        var client: Result<PushProvider, PushError>
    }

    private let settings: Settings
    private var entries: [UUID: [CredentialKind: Entry]] = [:]
    /// Clients built since start (tests check reuse).
    private(set) var built = 0

    init(settings: Settings) {
        self.settings = settings
    }

    /// The client for `summary`'s set, reusing the cached one while the version is unchanged; `open`
    /// loads the set with its secret when a (re)build is needed.
    func client(for summary: CredentialSummary, open: () throws -> CredentialSet?) -> Result<PushProvider, PushError> {
        if let e = entries[summary.appID]?[summary.kind], e.version == summary.version { return e.client }
        let result: Result<PushProvider, PushError>
        do {
            guard let set = try open() else { throw PushError(.credentialsInvalid, "\(summary.kind.rawValue) set removed") }
            result = .success(try build(set))
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

    private func build(_ set: CredentialSet) throws -> PushProvider {
        let ids = set.summary.identifiers
        var http = HTTPClientConfiguration(caFile: settings.caFile)
        http.transport = settings.transport
        switch set.summary.kind {
        case .apns:
            var c = APNsClient.Configuration(teamId: ids["team_id"] ?? "", keyId: ids["key_id"] ?? "", topic: ids["topic"] ?? "")
            if let url = ids["apns_base_url_production"] { c.productionBaseURL = url }
            if let url = ids["apns_base_url_sandbox"] { c.sandboxBaseURL = url }
            c.requestTimeoutMillis = settings.apnsRequestTimeoutMillis
            c.http = http
            return try APNsClient.make(configuration: c, privateKeyPEM: String(decoding: set.secret, as: UTF8.self),
                                       tokenCache: settings.apnsTokenCache)
        case .fcm:
            let account = try FCMServiceAccount.parse(json: set.secret)
            var c = FCMClient.Configuration()
            if let url = ids["fcm_base_url"] { c.baseURL = url }
            c.tokenURLOverride = ids["fcm_token_uri"]
            c.requestTimeoutMillis = settings.fcmRequestTimeoutMillis
            c.http = http
            return try FCMClient.make(account: account, configuration: c, tokenCache: settings.fcmTokenCache)
        case .webpush:
            guard let factory = settings.webPush else { throw PushError(.providerError, "webpush not configured") }
            return try factory(set, http)
        case .twilio:
            throw PushError(.providerError, "twilio is an SMS provider, not a push provider")
        }
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
