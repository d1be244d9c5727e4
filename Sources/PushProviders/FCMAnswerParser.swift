import Foundation
import PushCore

/// Turns one HTTP outcome from FCM v1 `messages:send` into a raw `ProviderAnswer` (Firebase's "ErrorCode").
///
/// `reason` = the `errorCode` of the `details[]` entry whose `@type` ends in
/// `google.firebase.fcm.v1.FcmError`, else `error.status`, else nil (the HTTP status then speaks alone).
/// `namesToken` (only for `INVALID_ARGUMENT`) = a `google.rpc.BadRequest` field violation on
/// `message.token`, or an error message naming `message.token` or the registration token. `messageId` = `name` on 200.
public enum FCMAnswerParser {
    /// Longest `rawDetail` kept, in characters.
    public static let rawDetailLimit = 160

    /// See the type's documentation.
    public static func answer(for outcome: HTTPOutcome) -> ProviderAnswer {
        guard case .response(let response) = outcome else {
            return ProviderAnswer(transport: outcome.transport,
                                  rawDetail: outcome.failureDetail.map { ProviderText.clip($0, limit: rawDetailLimit) })
        }
        var answer = ProviderAnswer(transport: .response, httpStatus: response.status)
        answer.retryAfterSeconds = ProviderText.retryAfterSeconds(response.headers["retry-after"])
        let object = ProviderText.jsonObject(response.body)
        if response.status == 200 {
            answer.messageId = object?["name"] as? String
            if answer.messageId == nil { answer.rawDetail = ProviderText.unparseable(response, limit: rawDetailLimit) }
            return answer
        }
        guard let error = object?["error"] as? [String: Any] else {
            answer.rawDetail = ProviderText.unparseable(response, limit: rawDetailLimit)
            return answer
        }
        let details = error["details"] as? [[String: Any]] ?? []
        let fcmCode = details.first { ($0["@type"] as? String)?.hasSuffix("google.firebase.fcm.v1.FcmError") ?? false }?["errorCode"] as? String
        answer.reason = fcmCode ?? (error["status"] as? String)
        let message = error["message"] as? String ?? ""
        answer.namesToken = answer.reason == "INVALID_ARGUMENT" && Self.namesToken(details: details, message: message)
        if !message.isEmpty { answer.rawDetail = ProviderText.clip(message, limit: rawDetailLimit) }
        return answer
    }

    private static func namesToken(details: [[String: Any]], message: String) -> Bool {
        for entry in details where (entry["@type"] as? String)?.hasSuffix("google.rpc.BadRequest") ?? false {
            let violations = entry["fieldViolations"] as? [[String: Any]] ?? []
            if violations.contains(where: { ($0["field"] as? String)?.hasPrefix("message.token") ?? false }) { return true }
        }
        return message.contains("message.token") || message.lowercased().contains("registration token")
    }
}
