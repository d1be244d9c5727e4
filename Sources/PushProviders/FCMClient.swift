import Foundation
import PushCore
import PushCrypto

/// FCM HTTP v1 client (Firebase's "REST Resource: projects.messages"): OAuth2 service-account flow
/// (RS256 assertion, Google's "Using OAuth 2.0 for Server to Server Applications") with the
/// access token kept in a `ProviderTokenCache`, and `messages:send` requests multiplexed over HTTP/2.
///
/// The request body is the caller's bytes (`ProviderRequest.payload`, built by PushCore). The access
/// token is cached under `tokenCacheKey`, which names the service account's key (issue 11: a set with
/// the same `client_email` and another key never gets this one's token). After a 401 the token is
/// replaced and the refused requests are sent once more. When the token endpoint refuses the
/// assertion, every answer is `.notSent` with reason `oauth:<error>` (RFC 6749 §5.2), which PushCore's
/// table judges (`ProviderAnswerTable.fcmOAuthReasonPrefix`).
public final class FCMClient: PushProvider, @unchecked Sendable {
    /// Endpoints and limits.
    public struct Configuration: Sendable {
        /// FCM base URL; tests point it at a fake. Default `https://fcm.googleapis.com`.
        public var baseURL: String = "https://fcm.googleapis.com"
        /// Where to POST the assertion instead of the account's `token_uri` (tests); the assertion's
        /// `aud` stays `token_uri`.
        public var tokenURLOverride: String?
        /// OAuth2 scope. Default `https://www.googleapis.com/auth/firebase.messaging`.
        public var scope: String = "https://www.googleapis.com/auth/firebase.messaging"
        /// Assertion lifetime in seconds (`exp - iat`, at most 3600).
        public var assertionLifetimeSeconds: Int64 = 3600
        /// The access token is replaced this many seconds before `expires_in` runs out. Default 300.
        public var tokenRefreshMarginSeconds: Int64 = 300
        /// Per-request deadline in milliseconds (sends and the token request). Default 10 000.
        public var requestTimeoutMillis: Int = 10_000
        /// Connection settings (CA file, limits) and which HTTP/2 client to use (`transport`:
        /// `NGHTTP2Client` by default, `HTTP2Client` on libcurl as the fallback).
        public var http: HTTPClientConfiguration = HTTPClientConfiguration()

        /// Production defaults.
        public init() {}
    }

    /// Settings in force.
    public let configuration: Configuration
    /// The service account in use.
    public let account: FCMServiceAccount
    /// The HTTP/2 client (exposed for connection statistics).
    public let http: any HTTPTransport
    private let signer: JWTSigner
    private let tokenCache: ProviderTokenCache
    private let clock: ProviderClock
    /// `pauseScopes`, made once.
    private let scopes: [String]

    private init(configuration: Configuration, account: FCMServiceAccount, http: any HTTPTransport, signer: JWTSigner,
                 tokenCache: ProviderTokenCache, clock: ProviderClock) {
        scopes = [PauseScope.host(ofURL: configuration.baseURL), PauseScope.fcmProject(account.projectId)]
        self.configuration = configuration
        self.account = account
        self.http = http
        self.signer = signer
        self.tokenCache = tokenCache
        self.clock = clock
    }

    /// Creates a client.
    /// - Throws: `JWTError` when the account's private key is unusable, `HTTPClientError` if the HTTP/2 client cannot start.
    public static func make(account: FCMServiceAccount, configuration: Configuration = Configuration(),
                            tokenCache: ProviderTokenCache = InMemoryProviderTokenCache(),
                            clock: ProviderClock = SystemProviderClock()) throws -> FCMClient {
        let signer = try JWTSigner.rs256(privateKeyPEM: account.privateKeyPEM, keyId: account.privateKeyId)
        let http = try configuration.http.makeTransport()
        return FCMClient(configuration: configuration, account: account, http: http, signer: signer,
                         tokenCache: tokenCache, clock: clock)
    }

    /// Cache key of the access token: `fcm:<client_email>:<fingerprint of the account key's public
    /// half>:<token endpoint> <scope>`: everything the token depends on.
    public var tokenCacheKey: String {
        "fcm:\(account.clientEmail):\(signer.publicKeyFingerprint):\(tokenEndpoint) \(configuration.scope)"
    }

    /// Where the assertion is POSTed: `tokenURLOverride`, else the account's `token_uri`.
    var tokenEndpoint: String { configuration.tokenURLOverride ?? account.tokenURI }

    /// `<baseURL>/v1/projects/<project>/messages:send`.
    public var sendURL: String { "\(configuration.baseURL)/v1/projects/\(account.projectId)/messages:send" }

    // MARK: - Sending

    /// The FCM host, and the service account's project (its quota is project-wide: Firebase's
    /// "QUOTA_EXCEEDED"; R-KIND-4).
    public func pauseScopes(for request: ProviderRequest) -> [String] { scopes }

    /// Sends `batch` concurrently; one answer per request, same order (see `PushProvider`). When no
    /// access token can be had, every answer is `.notSent` with `rawDetail` starting `oauth:`.
    public func send(_ batch: [ProviderRequest]) -> [ProviderAnswer] {
        guard !batch.isEmpty else { return [] }
        let token: ProviderToken
        do {
            token = try tokenCache.currentToken(for: tokenCacheKey, now: clock.nowUnixSeconds(), mint: fetchAccessToken)
        } catch {
            return batch.map { _ in Self.authFailure(error) }
        }
        var answers = sendOnce(batch, token: token.value)
        let refused = answers.indices.filter { answers[$0].httpStatus == 401 }
        guard !refused.isEmpty else { return answers }
        let fresh: ProviderToken
        do {
            fresh = try tokenCache.replaceToken(for: tokenCacheKey, rejected: token.value, now: clock.nowUnixSeconds(),
                                                mint: fetchAccessToken)
        } catch {
            return answers
        }
        let retried = sendOnce(refused.map { batch[$0] }, token: fresh.value)
        for (slot, answer) in zip(refused, retried) { answers[slot] = answer }
        return answers
    }

    private func sendOnce(_ batch: [ProviderRequest], token: String) -> [ProviderAnswer] {
        let requests = batch.map { request in
            HTTPRequest(url: sendURL, method: "POST",
                        headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json; UTF-8")],
                        body: request.payload, timeoutMillis: configuration.requestTimeoutMillis)
        }
        return http.perform(requests).map(FCMAnswerParser.answer(for:))
    }

    private static func authFailure(_ error: Error) -> ProviderAnswer {
        let refusal = (error as? FCMCredentialsError)?.oauthError
        return ProviderAnswer(transport: .notSent, reason: refusal.map { ProviderAnswerTable.fcmOAuthReasonPrefix + $0 },
                              rawDetail: ProviderText.clip("oauth: \(error)", limit: FCMAnswerParser.rawDetailLimit))
    }

    // MARK: - OAuth2 (Google's "Using OAuth 2.0 for Server to Server Applications")

    /// The signed assertion: header `{"alg":"RS256","typ":"JWT"[,"kid"]}`, claims iss/scope/aud/iat/exp.
    public func assertion(now: Int64) throws -> String {
        var header = #"{"alg":"RS256","typ":"JWT""#
        if let kid = account.privateKeyId { header += #","kid":"\#(Self.jsonEscaped(kid))""# }
        header += "}"
        let claims = #"{"iss":"\#(Self.jsonEscaped(account.clientEmail))","scope":"\#(Self.jsonEscaped(configuration.scope))","aud":"\#(Self.jsonEscaped(account.tokenURI))","iat":\#(now),"exp":\#(now + min(3600, configuration.assertionLifetimeSeconds))}"#
        return try signer.sign(header: header, claims: claims)
    }

    /// POSTs a fresh assertion to the token endpoint.
    /// - Throws: `JWTError`, or `FCMCredentialsError.oauthFailed` with the status/transport detail.
    private func fetchAccessToken(now: Int64) throws -> ProviderToken {
        let body = FormURLEncoding.encode([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                                           ("assertion", try assertion(now: now))])
        let request = HTTPRequest(url: tokenEndpoint, method: "POST",
                                  headers: [("content-type", "application/x-www-form-urlencoded")],
                                  body: Array(body.utf8), timeoutMillis: configuration.requestTimeoutMillis)
        guard let outcome = http.perform([request]).first else { throw FCMCredentialsError.oauthFailed("no outcome") }
        guard case .response(let response) = outcome else {
            throw FCMCredentialsError.oauthFailed("token endpoint unreachable: \(outcome.failureDetail ?? "")")
        }
        let object = ProviderText.jsonObject(response.body)
        guard response.status == 200, let access = object?["access_token"] as? String, !access.isEmpty else {
            let refusal = (object?["error"] as? String).map { ProviderText.clip($0, limit: 40) }
            let why = refusal.map { "\($0) \(object?["error_description"] as? String ?? "")" }
                ?? ProviderText.unparseable(response, limit: 80)
            throw FCMCredentialsError.oauthFailed("token endpoint \(response.status): \(why)",
                                                  oauthError: (400...499).contains(response.status) ? refusal : nil)
        }
        let lifetime = ProviderText.int64(object?["expires_in"]) ?? 3600
        let refreshAt = now + max(60, lifetime - configuration.tokenRefreshMarginSeconds)
        return ProviderToken(value: access, issuedAt: now, refreshAt: refreshAt)
    }

    private static func jsonEscaped(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
