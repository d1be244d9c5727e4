import Foundation
import PushCore
import PushCrypto

/// Web Push client (RFC 8030 delivery, RFC 8291 bodies, RFC 8292 VAPID): POSTs already-encrypted
/// RFC 8291 `aes128gcm` bodies to subscription endpoints over HTTP/2, several push services at once.
///
/// How a `ProviderRequest` is read for web devices:
/// - `deviceToken` is the subscription **endpoint URL** (the request URL);
/// - `payload` is the final aes128gcm body (the worker encrypts, `WebPushEncryption`), sent unchanged;
/// - `ttlSeconds` → `TTL` (seconds left, R-SEND-10; clamped to 0...2 419 200);
/// - `priority` → `Urgency: high | normal`, and `low` for a background push (R-KIND-1, `pushType`);
/// - `collapseId` is the notification's collapse key → `Topic` (R-SEND-13, `WebPushTopic`), only if
///   one; `apnsId`, `apnsEnvironment` and `expirationUnixSeconds` are ignored.
///
/// Send-time guard (R-DEV-1, issue 7), before any connection: the endpoint is validated again, its
/// host is resolved (`WebPushResolver`) and every address checked by `WebPushAddressPolicy`; an
/// endpoint that fails is answered `.notSent` with reason `ENDPOINT_FORBIDDEN`
/// (`ProviderAnswerTable.webPushEndpointForbidden`, a final `INVALID_SUBSCRIPTION`). The checked
/// addresses are pinned with CURLOPT_RESOLVE so libcurl connects to exactly them (DNS rebinding),
/// redirects are never followed, and answer bodies are capped by `HTTP2Client`. A name that does not
/// resolve is a plain `.notSent` (transient).
public final class WebPushClient: PushProvider, @unchecked Sendable {
    /// VAPID identity, limits and the test-only loopback switch.
    public struct Configuration: Sendable {
        /// VAPID `sub`: `mailto:` or `https:` contact URI (always sent; Apple requires it).
        public var subject: String
        /// VAPID token lifetime in seconds (`exp - now`). Default 43 200 (12 h); at most 86 400.
        public var tokenLifetimeSeconds: Int64 = 12 * 3600
        /// A token is replaced this many seconds before its `exp`. Default 3600 (1 h).
        public var tokenRenewalMarginSeconds: Int64 = 3600
        /// Per-request deadline in milliseconds. Default 10 000.
        public var requestTimeoutMillis: Int = 10_000
        /// Admit loopback endpoints and addresses (127/8, ::1, `localhost`). Tests against local fakes
        /// only; never in production.
        public var allowLoopback: Bool = false
        /// Connection settings (CA file, limits).
        public var http: HTTP2Client.Configuration = HTTP2Client.Configuration()

        /// Production defaults with the given contact URI.
        public init(subject: String) { self.subject = subject }
    }

    /// What `prepare(_:)` made of one push.
    public enum Prepared: Sendable, Equatable {
        /// The request to perform.
        case ready(HTTPRequest)
        /// Refused before any connection: the answer to report.
        case refused(ProviderAnswer)
    }

    /// Settings in force.
    public let configuration: Configuration
    /// The HTTP/2 client (exposed for connection statistics).
    public let http: HTTP2Client
    /// The VAPID header maker (token per origin).
    public let vapid: WebPushVAPID
    private let clock: ProviderClock
    private let resolver: WebPushResolver

    private init(configuration: Configuration, http: HTTP2Client, vapid: WebPushVAPID, clock: ProviderClock,
                 resolver: WebPushResolver) {
        self.configuration = configuration
        self.http = http
        self.vapid = vapid
        self.clock = clock
        self.resolver = resolver
    }

    /// Creates a client for one VAPID key pair.
    /// - Parameters:
    ///   - keys: the app's VAPID keys (`VAPIDKeys(privateKeyPEM:)` from storage).
    ///   - tokenCache: where VAPID tokens live; share it between clients of the same key.
    ///   - clock: time for `exp` and renewal decisions.
    ///   - resolver: host lookup for the send-time guard (tests inject names → addresses).
    /// - Throws: `WebPushClientError` (subject, lifetimes), `JWTError`/`CryptoError` (key),
    ///   `HTTPClientError` (libcurl, CA file).
    public static func make(keys: VAPIDKeys, configuration: Configuration,
                            tokenCache: ProviderTokenCache = InMemoryProviderTokenCache(),
                            clock: ProviderClock = SystemProviderClock(),
                            resolver: WebPushResolver = SystemWebPushResolver()) throws -> WebPushClient {
        let vapid = try WebPushVAPID.make(keys: keys, subject: configuration.subject,
                                          lifetimeSeconds: configuration.tokenLifetimeSeconds,
                                          renewalMarginSeconds: configuration.tokenRenewalMarginSeconds,
                                          tokenCache: tokenCache)
        let http = try HTTP2Client.make(configuration: configuration.http)
        return WebPushClient(configuration: configuration, http: http, vapid: vapid, clock: clock, resolver: resolver)
    }

    // MARK: - Sending

    /// The push service's origin (the subscription endpoint's scheme, host and port; R-KIND-4).
    public func pauseScopes(for request: ProviderRequest) -> [String] {
        [PauseScope.host(ofURL: request.deviceToken)]
    }

    /// Sends `batch` concurrently; one answer per request, same order (see `PushProvider`). Each
    /// host is resolved once per batch. Answers are shaped by `WebPushAnswerParser`.
    public func send(_ batch: [ProviderRequest]) -> [ProviderAnswer] {
        guard !batch.isEmpty else { return [] }
        var answers = [ProviderAnswer?](repeating: nil, count: batch.count)
        var requests: [HTTPRequest] = []
        var slots: [Int] = []
        var lookups: [String: Result<[String], Error>] = [:]
        for (i, request) in batch.enumerated() {
            switch prepare(request, lookups: &lookups) {
            case .ready(let http):
                requests.append(http)
                slots.append(i)
            case .refused(let answer):
                answers[i] = answer
            }
        }
        if !requests.isEmpty {
            for (slot, outcome) in zip(slots, http.perform(requests)) {
                answers[slot] = WebPushAnswerParser.answer(for: outcome)
            }
        }
        return answers.map { $0 ?? ProviderAnswer(transport: .notSent, rawDetail: "no outcome") }
    }

    /// Builds the request for one push, or the answer refusing it (runs the send-time guard,
    /// resolving the host). Headers, in order: `ttl`, `urgency`, `topic` (if any),
    /// `content-encoding: aes128gcm`, `content-type: application/octet-stream`, `authorization`.
    public func prepare(_ request: ProviderRequest) -> Prepared {
        var lookups: [String: Result<[String], Error>] = [:]
        return prepare(request, lookups: &lookups)
    }

    private func prepare(_ request: ProviderRequest, lookups: inout [String: Result<[String], Error>]) -> Prepared {
        let endpoint: OutboundURL
        do {
            endpoint = try OutboundURL(request.deviceToken, field: "endpoint", allowLoopback: configuration.allowLoopback)
        } catch {
            return .refused(Self.forbidden("endpoint: \(Self.message(of: error))"))
        }
        var pinned: [String] = []
        if !endpoint.isIPLiteral {
            let key = "\(endpoint.host):\(endpoint.port)"
            let lookup = lookups[key] ?? Result { try resolver.addresses(host: endpoint.host, port: endpoint.port) }
            lookups[key] = lookup
            switch lookup {
            case .failure(let error):
                return .refused(Self.notSent("dns: \(error)"))
            case .success(let addresses):
                do {
                    pinned = try endpoint.pinnedEntries(addresses, allowLoopback: configuration.allowLoopback)
                } catch {
                    return .refused(Self.forbidden("\(endpoint.host) resolves to \(error.address): \(Self.message(of: error.error))"))
                }
            }
        }
        var headers: [(String, String)] = [
            ("ttl", String(min(max(0, request.ttlSeconds), Int64(Expiry.maxTTLSeconds)))),
            ("urgency", request.pushType.webPushUrgency(request.priority)),
        ]
        do {
            if let key = request.collapseId, !key.isEmpty {
                headers.append(("topic", try WebPushTopic.topic(forCollapseKey: key)))
            }
            headers.append(("content-encoding", "aes128gcm"))
            headers.append(("content-type", "application/octet-stream"))
            headers.append(("authorization", try vapid.authorization(origin: endpoint.origin, now: clock.nowUnixSeconds())))
        } catch {
            return .refused(Self.notSent("vapid: \(error)"))
        }
        return .ready(HTTPRequest(url: endpoint.url, method: "POST", headers: headers, body: request.payload,
                                  timeoutMillis: configuration.requestTimeoutMillis, resolve: pinned))
    }

    /// `.notSent` with reason `ENDPOINT_FORBIDDEN` (final, see `ProviderAnswerTable`).
    private static func forbidden(_ detail: String) -> ProviderAnswer {
        ProviderAnswer(transport: .notSent, reason: ProviderAnswerTable.webPushEndpointForbidden,
                       rawDetail: ProviderText.clip(detail, limit: WebPushAnswerParser.rawDetailLimit))
    }

    /// `.notSent` without a reason (transient).
    private static func notSent(_ detail: String) -> ProviderAnswer {
        ProviderAnswer(transport: .notSent, rawDetail: ProviderText.clip(detail, limit: WebPushAnswerParser.rawDetailLimit))
    }

    /// The human message of a `WebPushError` (no code prefix), or the error's description.
    private static func message(of error: Error) -> String {
        (error as? WebPushError)?.message ?? "\(error)"
    }
}
