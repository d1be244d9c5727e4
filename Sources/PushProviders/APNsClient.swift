import Foundation
import PushCore
import PushCrypto

/// APNs provider API client with token authentication (Apple's "Sending notification requests to APNs",
/// "Establishing a token-based connection to APNs"): HTTP/2 multiplexed through an `HTTPTransport`
/// (`NGHTTP2Client` unless configured otherwise), one ES256 provider JWT per signing key from a
/// `ProviderTokenCache` (`tokenCacheKey`: team, key id and the fingerprint of the `.p8`'s public key,
/// so two apps share a JWT only when they hold the same key: issue 11).
///
/// Token lifetime ("Establishing a token-based connection to APNs"): a JWT is reused until `tokenRefreshSeconds` (45 min, never under
/// `tokenMinimumAgeSeconds`, 20 min) after its `iat`. After an `ExpiredProviderToken` answer it is
/// replaced at once, whatever its age (`ProviderTokenCache.replaceToken`: one replacement per rejected
/// token, fleet-wide with `PGProviderTokenCache`), and the refused requests are sent once more with
/// the new token (same `apns-id`), within the same attempt.
public final class APNsClient: PushProvider, @unchecked Sendable {
    /// Credentials, hosts and limits.
    public struct Configuration: Sendable {
        /// 10-character Team ID (JWT `iss`).
        public var teamId: String
        /// 10-character Key ID of the `.p8` key (JWT `kid`).
        public var keyId: String
        /// `apns-topic`: the app's bundle ID.
        public var topic: String
        /// Base URL for production tokens; tests point it at a fake.
        public var productionBaseURL: String = "https://api.push.apple.com"
        /// Base URL for sandbox tokens; tests point it at a second fake.
        public var sandboxBaseURL: String = "https://api.sandbox.push.apple.com"
        /// Per-request deadline in milliseconds. Default 10 000.
        public var requestTimeoutMillis: Int = 10_000
        /// JWT age (seconds) at which a new one is made. Default 2700 (45 min); Apple wants 20–60 min.
        public var tokenRefreshSeconds: Int64 = 45 * 60
        /// Youngest JWT age (seconds) of a voluntary refresh: a `tokenRefreshSeconds` below it is raised to
        /// it. Default 1200 (20 min, Apple's limit). An `ExpiredProviderToken` answer replaces the JWT at once.
        public var tokenMinimumAgeSeconds: Int64 = 20 * 60
        /// Connection settings (CA file, limits) and which HTTP/2 client to use (`transport`:
        /// `NGHTTP2Client` by default, `HTTP2Client` on libcurl as the fallback).
        public var http: HTTPClientConfiguration = HTTPClientConfiguration()

        /// Credentials with production defaults for everything else.
        public init(teamId: String, keyId: String, topic: String) {
            self.teamId = teamId
            self.keyId = keyId
            self.topic = topic
        }

        /// Base URL used for `environment`.
        public func baseURL(for environment: APNsEnvironment) -> String {
            environment == .production ? productionBaseURL : sandboxBaseURL
        }
    }

    /// Settings in force.
    public let configuration: Configuration
    /// The HTTP/2 client (exposed for connection statistics).
    public let http: any HTTPTransport
    private let signer: JWTSigner
    private let tokenCache: ProviderTokenCache
    private let clock: ProviderClock
    /// `pauseScopes` of each environment, made once.
    private let productionScopes: [String], sandboxScopes: [String]

    private init(configuration: Configuration, http: any HTTPTransport, signer: JWTSigner,
                 tokenCache: ProviderTokenCache, clock: ProviderClock) {
        productionScopes = [PauseScope.host(ofURL: configuration.baseURL(for: .production))]
        sandboxScopes = [PauseScope.host(ofURL: configuration.baseURL(for: .sandbox))]
        self.configuration = configuration
        self.http = http
        self.signer = signer
        self.tokenCache = tokenCache
        self.clock = clock
    }

    /// Creates a client.
    /// - Parameters:
    ///   - configuration: team, key id, topic, hosts.
    ///   - privateKeyPEM: the `.p8` file's text (PKCS#8 P-256).
    ///   - tokenCache: where the JWT lives; share one cache between clients of the same key.
    ///   - clock: time source for `iat` and refresh decisions.
    /// - Throws: `JWTError` for an unusable key, `HTTPClientError` if the HTTP/2 client cannot start.
    public static func make(configuration: Configuration, privateKeyPEM: String,
                            tokenCache: ProviderTokenCache = InMemoryProviderTokenCache(),
                            clock: ProviderClock = SystemProviderClock()) throws -> APNsClient {
        let signer = try JWTSigner.es256(privateKeyPEM: privateKeyPEM, keyId: configuration.keyId)
        let http = try configuration.http.makeTransport()
        return APNsClient(configuration: configuration, http: http, signer: signer, tokenCache: tokenCache, clock: clock)
    }

    /// Cache key of this client's JWT: `apns:<team>:<key id>:<fingerprint of the .p8's public key>`.
    public var tokenCacheKey: String {
        "apns:\(configuration.teamId):\(configuration.keyId):\(signer.publicKeyFingerprint)"
    }

    // MARK: - Sending

    /// The APNs host of the request's environment (production and sandbox are paused apart, R-KIND-4).
    public func pauseScopes(for request: ProviderRequest) -> [String] {
        request.apnsEnvironment == .production ? productionScopes : sandboxScopes
    }

    /// Sends `batch` concurrently; one answer per request, same order (see `PushProvider`).
    public func send(_ batch: [ProviderRequest]) -> [ProviderAnswer] {
        guard !batch.isEmpty else { return [] }
        let token: ProviderToken
        do {
            token = try tokenCache.currentToken(for: tokenCacheKey, now: clock.nowUnixSeconds(), mint: mintToken)
        } catch {
            return batch.map { _ in ProviderAnswer(transport: .notSent, rawDetail: "provider token: \(error)") }
        }
        var answers = sendOnce(batch, token: token.value)

        let expired = answers.indices.filter { answers[$0].httpStatus == 403 && answers[$0].reason == "ExpiredProviderToken" }
        guard !expired.isEmpty else { return answers }
        guard let fresh = try? tokenCache.replaceToken(for: tokenCacheKey, rejected: token.value,
                                                       now: clock.nowUnixSeconds(), mint: mintToken),
              fresh.value != token.value else { return answers }
        let retried = sendOnce(expired.map { batch[$0] }, token: fresh.value)
        for (slot, answer) in zip(expired, retried) { answers[slot] = answer }
        return answers
    }

    private func sendOnce(_ batch: [ProviderRequest], token: String) -> [ProviderAnswer] {
        let authorization = "bearer " + token  // one string shared by the batch's header lists
        let outcomes = http.perform(batch.map { httpRequest(for: $0, authorization: authorization) })
        return zip(batch, outcomes).map { APNsAnswerParser.answer(for: $1, apnsId: $0.apnsId) }
    }

    /// The HTTP/2 request for one push (Apple's "Sending notification requests to APNs"): path, headers
    /// in a fixed order, body unchanged. `apns-push-type` is the request's push type, `apns-priority`
    /// its priority's 10 or 5, and always 5 for a background push (R-KIND-1, `PushType.apnsPriority`).
    public func httpRequest(for request: ProviderRequest, token: String) -> HTTPRequest {
        httpRequest(for: request, authorization: "bearer " + token)
    }

    /// `httpRequest(for:token:)` with the `authorization` value already built (issue 18: the
    /// batch's requests share it and the topic and push-type strings instead of formatting them).
    private func httpRequest(for request: ProviderRequest, authorization: String) -> HTTPRequest {
        var headers: [(String, String)] = []
        headers.reserveCapacity(8)
        headers.append(("authorization", authorization))
        headers.append(("apns-topic", configuration.topic))
        headers.append(("apns-push-type", request.pushType.apnsPushType))
        headers.append(("apns-priority", request.pushType.apnsPriorityText(request.priority)))
        headers.append(("apns-expiration", request.expirationUnixSeconds <= 0 ? "0" : String(request.expirationUnixSeconds)))
        if let collapse = request.collapseId { headers.append(("apns-collapse-id", collapse)) }
        headers.append(("apns-id", request.apnsId))
        headers.append(("content-type", "application/json"))
        let base = configuration.baseURL(for: request.apnsEnvironment)
        var url = ""
        url.reserveCapacity(base.utf8.count + 10 + request.deviceToken.utf8.count * 3)
        url += base
        url += "/3/device/"
        Self.appendPathSegment(request.deviceToken, to: &url)
        return HTTPRequest(url: url, method: "POST", headers: headers, body: request.payload,
                           timeoutMillis: configuration.requestTimeoutMillis)
    }

    /// Builds a provider JWT: header `{"alg":"ES256","kid":...}`, claims `{"iss":...,"iat":...}`
    /// ("Establishing a token-based connection to APNs").
    private func mintToken(now: Int64) throws -> ProviderToken {
        let header = #"{"alg":"ES256","kid":"\#(Self.jsonEscaped(configuration.keyId))"}"#
        let claims = #"{"iss":"\#(Self.jsonEscaped(configuration.teamId))","iat":\#(now)}"#
        let jwt = try signer.sign(header: header, claims: claims)
        let refreshAge = max(configuration.tokenRefreshSeconds, configuration.tokenMinimumAgeSeconds)
        return ProviderToken(value: jwt, issuedAt: now, refreshAt: now + refreshAge)
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters, so a token can never change the path.
    static func pathSegment(_ token: String) -> String {
        var out = ""
        appendPathSegment(token, to: &out)
        return out
    }

    /// Appends `pathSegment(token)` to `out`; a token of unreserved characters only (a hex device
    /// token) is appended as it is.
    static func appendPathSegment(_ token: String, to out: inout String) {
        func unreserved(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
        if token.utf8.allSatisfy(unreserved) {
            out += token
            return
        }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(token.utf8.count * 3)
        for byte in token.utf8 {
            if unreserved(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        out += String(decoding: bytes, as: UTF8.self)
    }

    private static func jsonEscaped(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
