import Foundation
import PushAcceptance
import PushCore
import PushStore

/// The acceptance service's refusals as the API's errors (R-API-6: the API decodes and answers;
/// every rule of what is accepted is `AcceptanceService`'s).
enum AcceptanceMapping {
    /// A refusal as the API answers it: 422 `VALIDATION_ERROR` and `PUSH_PAYLOAD_TOO_LARGE` (with
    /// `bytes_to_cut`), 404 `NOT_FOUND`, 409 `PUSH_DEVICE_LIMIT`, `IDEMPOTENCY_KEY_REUSED`,
    /// `NOT_CANCELLABLE`, `TOKEN_PLATFORM_CONFLICT`. The idempotency key, a header here, is named `Idempotency-Key`.
    static func apiError(_ e: AcceptanceError) -> APIError {
        let field = e.field == "idempotency_key" ? "Idempotency-Key" : e.field
        let status: Int
        switch e.code {
        case .notFound: status = 404
        case .pushDeviceLimit, .idempotencyKeyReused, .notCancellable, .tokenPlatformConflict: status = 409
        default: status = 422
        }
        return APIError(status: status, code: e.code.rawValue, message: e.message, field: field, bytesToCut: e.bytesToCut)
    }

    /// A store's own refusal (`PushError`), as the acceptance service would give it.
    static func apiError(_ e: PushError) -> APIError { apiError(AcceptanceError(e)) }
}
