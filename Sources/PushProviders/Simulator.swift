import Foundation
import PushCore

/// The built-in test-mode provider (R-MODE-2): test notifications never reach a network provider; this
/// answers by token, as docs/rules.md R-MODE-2 lists, in the same `ProviderAnswer` shape the real
/// clients produce, so the worker's answer table and retry policy handle both alike.
///
/// | token | answer |
/// |---|---|
/// | `test_unregistered` | 410 `Unregistered` (token no longer valid) |
/// | `test_invalid_token` | 400 `BadDeviceToken` (malformed token) |
/// | `test_app_mismatch` | 400 `DeviceTokenNotForTopic` (a device-level mismatch; credentials untouched) |
/// | `test_rate_limited` | 429 `TooManyRequests`, retry after 1 s, on the first attempt; then accepted |
/// | `test_unavailable` | 503 `ServiceUnavailable` on the first two attempts; then accepted |
/// | `test_timeout` | no answer within the deadline, every time |
/// | anything else (`test_accept`, ...) | accepted, message id `sim-<apns-id>` |
public enum Simulator {
    /// The answer to attempt number `previousAttempts + 1` of a delivery to `token`.
    /// - Parameters:
    ///   - token: the device token (for web devices, the subscription endpoint's last path segment).
    ///   - previousAttempts: provider attempts already made for this delivery (deferrals included).
    ///   - messageID: the delivery's stable id, echoed as the message id on acceptance.
    public static func answer(token: String, previousAttempts: Int, messageID: String) -> ProviderAnswer {
        switch token {
        case "test_unregistered":
            return ProviderAnswer(transport: .response, httpStatus: 410, reason: SimulatorReason.unregistered.rawValue)
        case "test_invalid_token":
            return ProviderAnswer(transport: .response, httpStatus: 400, reason: SimulatorReason.invalidToken.rawValue)
        case "test_app_mismatch":
            return ProviderAnswer(transport: .response, httpStatus: 400, reason: SimulatorReason.appMismatch.rawValue)
        case "test_rate_limited" where previousAttempts < 1:
            return ProviderAnswer(transport: .response, httpStatus: 429, reason: SimulatorReason.rateLimited.rawValue,
                                  retryAfterSeconds: 1)
        case "test_unavailable" where previousAttempts < 2:
            return ProviderAnswer(transport: .response, httpStatus: 503, reason: SimulatorReason.unavailable.rawValue)
        case "test_timeout":
            return ProviderAnswer(transport: .timeout, rawDetail: "simulated: no answer within the deadline")
        default:
            return ProviderAnswer(transport: .response, httpStatus: 200, messageId: "sim-\(messageID)")
        }
    }
}
