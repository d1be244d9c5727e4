import struct Foundation.Date
import typealias Foundation.TimeInterval

/// The reasons the test-mode simulator puts in `ProviderAnswer.reason` (R-MODE-2), with the HTTP
/// status it pairs them with. A timeout is `transport: .timeout`, without a reason.
public enum SimulatorReason: String, Sendable, Hashable, CaseIterable {
    /// `test_unregistered` (410).
    case unregistered = "Unregistered"
    /// `test_invalid_token` (400).
    case invalidToken = "BadDeviceToken"
    /// `test_app_mismatch` (400): always a device-level mismatch.
    case appMismatch = "DeviceTokenNotForTopic"
    /// `test_rate_limited` (429, retry after 1 s).
    case rateLimited = "TooManyRequests"
    /// `test_unavailable` (503).
    case unavailable = "ServiceUnavailable"
}

/// What an answer means for the delivery (R-PRV-1..3, R-DEV-8, R-SEND-12).
public enum AnswerOutcome: Sendable, Hashable {
    /// Accepted; the provider's message id when given.
    case sent(messageId: String?)
    /// Token rejected: deactivate the device with `reason` (`.unregistered` / `.invalidToken`) subject to
    /// R-DEV-8; `verdictAt` is APNs' 410 timestamp, nil when the caller must use the request time.
    case deactivateDevice(reason: ErrorCode, verdictAt: Date?)
    /// `APP_MISMATCH` (R-PRV-2) and who is blamed (from `credentialsVerified`; the simulator always blames the device).
    case appMismatch(blame: AppMismatchBlame)
    /// Credentials problem (R-PRV-3): mark the set invalid, fail `CREDENTIALS_INVALID`; the raw reason.
    case credentialsInvalid(reason: String)
    /// The provider refused the size: fail `PUSH_PAYLOAD_TOO_LARGE` (refunded).
    case payloadTooLarge
    /// Retry with backoff, counting a failed attempt (R-SEND-12).
    case transient
    /// Retry after the given seconds (or the backoff), not a failed attempt.
    case deferral(retryAfter: TimeInterval?)
    /// Unknown or request-level answer: fail with this error (`PROVIDER_ERROR`, raw reason in the message).
    case failed(PushError)

    /// The delivery ending when the outcome is final (nil for `.transient` / `.deferral`).
    public var ending: DeliveryEnding? {
        switch self {
        case .sent: return .sent
        case .deactivateDevice(let reason, _): return .failed(reason)
        case .appMismatch(let blame): return .appMismatch(blame)
        case .credentialsInvalid: return .failed(.credentialsInvalid)
        case .payloadTooLarge: return .failed(.pushPayloadTooLarge)
        case .transient, .deferral: return nil
        case .failed(let error): return .failed(error.code)
        }
    }
}

/// What one provider's answers mean: the rows of its answer table. Each provider of the table
/// (`ProviderDescriptor.answers`) has one; `ProviderAnswerTable.classify` applies the rules every
/// provider shares around them.
public protocol AnswerRules: Sendable {
    /// The provider's name in `PROVIDER_ERROR` messages.
    var name: String { get }
    /// The row for a non-2xx response, or nil when the reason is not one the provider documents
    /// (the shared status fallback then applies: 413, 429, 5xx).
    func row(status: Int, reason: String, answer: ProviderAnswer) -> ProviderAnswerTable.Row?
    /// The outcome of an answer that is not a response, when the provider's own rule decides it;
    /// nil for the shared rule (transient).
    func outcomeWithoutResponse(_ answer: ProviderAnswer) -> AnswerOutcome?
    /// When the provider judged a token gone, when it says (APNs' 410 `timestamp`); nil = the request time.
    func verdictTime(_ answer: ProviderAnswer) -> Date?
    /// True when an `APP_MISMATCH` is always the device's, whatever the credentials (the simulator).
    var blamesDeviceForAppMismatch: Bool { get }
}

extension AnswerRules {
    public func outcomeWithoutResponse(_ answer: ProviderAnswer) -> AnswerOutcome? { nil }
    public func verdictTime(_ answer: ProviderAnswer) -> Date? { nil }
    public var blamesDeviceForAppMismatch: Bool { false }
}

/// Classifies a raw `ProviderAnswer` (table-driven; every row is tested).
///
/// Transport `timeout`, `connectionError`, `notSent` are transient for every provider unless the
/// provider's rules say otherwise (a Web Push `notSent` with reason `ENDPOINT_FORBIDDEN` fails
/// `INVALID_SUBSCRIPTION`; an FCM `notSent` whose OAuth refusal names the set's key or account is
/// `credentialsInvalid`). For a response: 2xx → `sent`; then the provider's row for the reason; an
/// unknown reason falls back on the status (429 → deferral, 5xx → transient, 413 → payloadTooLarge),
/// and anything else → `failed(PROVIDER_ERROR)` keeping the raw reason.
public enum ProviderAnswerTable {
    /// A row's meaning before inputs (blame, timestamp) are applied.
    public enum Row: Sendable, Hashable {
        case unregistered, invalidToken, appMismatch, credentials, tooLarge, transient, deferral, requestError
    }

    /// The `reason` of a `.notSent` Web Push answer whose endpoint the client refused to call
    /// (R-DEV-1, issue 7): not a valid endpoint, or resolving to a loopback, private, link-local or
    /// otherwise internal address. Final: `INVALID_SUBSCRIPTION`, never retried.
    public static let webPushEndpointForbidden = "ENDPOINT_FORBIDDEN"

    /// Prefix of the `reason` of a `.notSent` FCM answer whose access token the OAuth token endpoint
    /// refused: `oauth:` + the RFC 6749 §5.2 `error` (4xx answers only), with the `error_description`
    /// in `rawDetail`. See `fcmOAuthRefusesCredentials`.
    public static let fcmOAuthReasonPrefix = "oauth:"

    /// True when the token endpoint's refusal means the set's service account or key is not usable
    /// (R-PRV-3, issue 11: a key that is not the account's): `invalid_client`, `unauthorized_client`,
    /// or `invalid_grant` naming the signature or the account (Google: "Invalid JWT Signature.",
    /// "account not found"). Other refusals (an `iat`/`exp` out of step with Google's clock, an unknown
    /// grant type) are not the set's fault: transient, as when the endpoint cannot be reached.
    public static func fcmOAuthRefusesCredentials(error: String, description: String) -> Bool {
        switch error {
        case "invalid_client", "unauthorized_client":
            return true
        case "invalid_grant":
            let text = description.lowercased()
            return text.contains("signature") || text.contains("account")
        default:
            return false
        }
    }

    /// Classifies `answer` by `rules`.
    /// - Parameter credentialsVerified: true when the credential set has had a live notification
    ///   accepted (R-APP-3); decides the `APP_MISMATCH` blame (R-PRV-2).
    public static func classify(_ answer: ProviderAnswer, rules: any AnswerRules, credentialsVerified: Bool) -> AnswerOutcome {
        guard answer.transport == .response, let status = answer.httpStatus else {
            return rules.outcomeWithoutResponse(answer) ?? .transient
        }
        if (200...299).contains(status) { return .sent(messageId: answer.messageId) }
        let reason = answer.reason ?? ""
        let row = rules.row(status: status, reason: reason, answer: answer) ?? statusFallback(status)
        switch row {
        case .unregistered:
            return .deactivateDevice(reason: .unregistered, verdictAt: rules.verdictTime(answer))
        case .invalidToken:
            return .deactivateDevice(reason: .invalidToken, verdictAt: nil)
        case .appMismatch:
            return .appMismatch(blame: rules.blamesDeviceForAppMismatch || credentialsVerified ? .device : .credentials)
        case .credentials:
            return .credentialsInvalid(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        case .tooLarge:
            return .payloadTooLarge
        case .transient:
            return .transient
        case .deferral:
            return .deferral(retryAfter: answer.retryAfterSeconds)
        case .requestError, nil:
            let raw = reason.isEmpty ? (answer.rawDetail ?? "") : reason
            return .failed(PushError(.providerError, "\(rules.name) answered HTTP \(status) \(raw)"))
        }
    }

    /// The shared meaning of a status no row names.
    static func statusFallback(_ status: Int) -> Row? {
        switch status {
        case 413: return .tooLarge
        case 429: return .deferral
        case 500...599: return .transient
        default: return nil
        }
    }
}

/// APNs reasons (Apple's "Handling notification responses from APNs"); a 410's `timestamp` is the
/// verdict's time (R-DEV-8).
public struct APNsAnswerRules: AnswerRules {
    public init() {}
    public var name: String { "apns" }

    static let reasons: [String: ProviderAnswerTable.Row] = [
        "Unregistered": .unregistered, "ExpiredToken": .unregistered,
        "BadDeviceToken": .invalidToken,
        "DeviceTokenNotForTopic": .appMismatch,
        "TopicDisallowed": .credentials, "InvalidProviderToken": .credentials,
        "BadEnvironmentKeyIdInToken": .credentials, "BadEnvironmentKeyInToken": .credentials,
        "BadCertificate": .credentials, "BadCertificateEnvironment": .credentials,
        "MissingProviderToken": .credentials, "BadTopic": .credentials, "MissingTopic": .credentials,
        "Forbidden": .credentials,
        "PayloadTooLarge": .tooLarge,
        "ExpiredProviderToken": .transient, "IdleTimeout": .transient, "UnrelatedKeyIdInToken": .transient,
        "InternalServerError": .transient, "ServiceUnavailable": .transient, "Shutdown": .transient,
        "TooManyProviderTokenUpdates": .deferral, "TooManyRequests": .deferral,
        "BadCollapseId": .requestError, "BadExpirationDate": .requestError, "BadMessageId": .requestError,
        "BadPriority": .requestError, "DuplicateHeaders": .requestError, "InvalidPushType": .requestError,
        "MissingDeviceToken": .requestError, "PayloadEmpty": .requestError, "BadPath": .requestError,
        "MethodNotAllowed": .requestError,
    ]

    public func row(status: Int, reason: String, answer: ProviderAnswer) -> ProviderAnswerTable.Row? { Self.reasons[reason] }

    public func verdictTime(_ answer: ProviderAnswer) -> Date? {
        answer.timestampMillis.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }
}

/// The test-mode simulator's answers (R-MODE-2): APNs' reasons (`SimulatorReason`), and an
/// `APP_MISMATCH` always blamed on the device.
public struct SimulatorAnswerRules: AnswerRules {
    public init() {}
    public var name: String { "simulator" }
    public var blamesDeviceForAppMismatch: Bool { true }

    public func row(status: Int, reason: String, answer: ProviderAnswer) -> ProviderAnswerTable.Row? {
        APNsAnswerRules.reasons[reason]
    }
}

/// FCM `details[].errorCode` or `error.status` values (Firebase's "ErrorCode"); `INVALID_ARGUMENT`
/// is the token's fault when it names it, too large when it says so, else a request error; an OAuth
/// refusal of the set's own key is `credentialsInvalid` (R-PRV-3).
public struct FCMAnswerRules: AnswerRules {
    public init() {}
    public var name: String { "fcm" }

    static let reasons: [String: ProviderAnswerTable.Row] = [
        "UNREGISTERED": .unregistered,
        "SENDER_ID_MISMATCH": .appMismatch,
        "THIRD_PARTY_AUTH_ERROR": .credentials, "PERMISSION_DENIED": .credentials,
        "QUOTA_EXCEEDED": .deferral, "RESOURCE_EXHAUSTED": .deferral,
        "UNAVAILABLE": .transient, "INTERNAL": .transient, "UNAUTHENTICATED": .transient,
        "DEADLINE_EXCEEDED": .transient,
    ]

    public func row(status: Int, reason: String, answer: ProviderAnswer) -> ProviderAnswerTable.Row? {
        if reason == "INVALID_ARGUMENT" {
            if answer.namesToken { return .invalidToken }
            if (answer.rawDetail ?? "").lowercased().contains("too big") { return .tooLarge }
            return .requestError
        }
        return Self.reasons[reason]
    }

    public func outcomeWithoutResponse(_ answer: ProviderAnswer) -> AnswerOutcome? {
        let prefix = ProviderAnswerTable.fcmOAuthReasonPrefix
        guard answer.transport == .notSent, let reason = answer.reason, reason.hasPrefix(prefix),
              ProviderAnswerTable.fcmOAuthRefusesCredentials(error: String(reason.dropFirst(prefix.count)),
                                                             description: answer.rawDetail ?? "") else { return nil }
        // The access token was refused for this set's own key: no push can go out with it.
        return .credentialsInvalid(reason: reason)
    }
}

/// Web Push statuses (RFC 8030 §5, §7.2, §7.3, §8.4; RFC 8292 §4): 404/410 gone; 401 and 403 are
/// VAPID refusals (missing, expired, or a key the subscription was not made with): the app's VAPID
/// credentials are marked invalid and devices are never touched (issue 7: a rotated or
/// misconfigured VAPID key must not deactivate every browser); 400 is a request error; Apple's
/// `BadJwtToken` is the credentials'. An endpoint our own send-time guard refused fails
/// `INVALID_SUBSCRIPTION` (retrying cannot help).
public struct WebPushAnswerRules: AnswerRules {
    public init() {}
    public var name: String { "webpush" }

    public func row(status: Int, reason: String, answer: ProviderAnswer) -> ProviderAnswerTable.Row? {
        if reason == "BadJwtToken" { return .credentials }
        switch status {
        case 404, 410: return .unregistered
        case 401, 403: return .credentials
        case 400: return .requestError
        default: return nil
        }
    }

    public func outcomeWithoutResponse(_ answer: ProviderAnswer) -> AnswerOutcome? {
        guard answer.transport == .notSent, answer.reason == ProviderAnswerTable.webPushEndpointForbidden else { return nil }
        return .failed(PushError(.invalidSubscription,
                                 "web push endpoint refused before sending: \(answer.rawDetail ?? "not a public address")"))
    }
}

/// R-DEV-8: registration and deactivation are an ordered pair.
public enum DeviceVerdictOrdering {
    /// True when a "token no longer valid" verdict at `verdictAt` (APNs' timestamp, or the request
    /// time for FCM/Web Push) may deactivate a device last registered at `lastRegisteredAt`: only when
    /// the verdict is strictly newer (a tie keeps the device: a wrongly kept device costs one more
    /// failed push, a wrongly dropped one loses the user).
    public static func shouldDeactivate(verdictAt: Date, lastRegisteredAt: Date) -> Bool {
        verdictAt > lastRegisteredAt
    }
}
