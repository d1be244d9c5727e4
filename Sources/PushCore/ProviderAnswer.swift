/// What a provider (APNs, FCM, a Web Push service, or the test-mode simulator) answered to one
/// request, before any interpretation. `PushProviders` fills it; `PushCore`'s answer table
/// (`ProviderAnswerTable`) turns it into a delivery outcome. Pure data, no I/O.
public struct ProviderAnswer: Sendable, Equatable {
    /// How the request ended at the transport level.
    public enum Transport: String, Sendable, Equatable {
        /// A complete HTTP response was read (see `httpStatus`).
        case response
        /// No answer within the per-request deadline; the outcome is unknown (the push may have been delivered).
        case timeout
        /// The connection broke, was reset, or the stream was refused or cut by a GOAWAY.
        case connectionError
        /// The request could not be sent at all (DNS, TLS handshake, refused connection): nothing reached the provider.
        case notSent

        /// The outcome in words, as operators read it in a delivery's `error_detail` and a
        /// provider pause's detail: `response`, `timeout`, `connection error`, `not sent`.
        public var words: String {
            switch self {
            case .response: return "response"
            case .timeout: return "timeout"
            case .connectionError: return "connection error"
            case .notSent: return "not sent"
            }
        }
    }

    /// Transport outcome.
    public var transport: Transport
    /// HTTP status (200, 410, ...) when `transport == .response`.
    public var httpStatus: Int?
    /// Provider reason string: APNs `reason`, FCM `details[].errorCode` or else `error.status`; nil on
    /// success. For a `.notSent` FCM answer refused by the OAuth token endpoint, `oauth:<error>`.
    public var reason: String?
    /// APNs 410 `timestamp` (milliseconds since the epoch), when given.
    public var timestampMillis: Int64?
    /// `Retry-After` in seconds, when the provider gave one.
    public var retryAfterSeconds: Double?
    /// Provider message id on success: APNs `apns-id`, FCM message `name`, Web Push `Location`.
    public var messageId: String?
    /// For FCM `INVALID_ARGUMENT`: true when a field violation or the message names the token.
    public var namesToken: Bool
    /// Short raw detail kept for operators (truncated response body, curl error text); never content.
    public var rawDetail: String?

    public init(transport: Transport, httpStatus: Int? = nil, reason: String? = nil,
                timestampMillis: Int64? = nil, retryAfterSeconds: Double? = nil,
                messageId: String? = nil, namesToken: Bool = false, rawDetail: String? = nil) {
        self.transport = transport
        self.httpStatus = httpStatus
        self.reason = reason
        self.timestampMillis = timestampMillis
        self.retryAfterSeconds = retryAfterSeconds
        self.messageId = messageId
        self.namesToken = namesToken
        self.rawDetail = rawDetail
    }
}
