import Foundation
import PushCore

/// Turns one HTTP outcome from a Web Push service into a raw `ProviderAnswer` (RFC 8030 §5,
/// §7.2, §7.3, §8.4; RFC 8292 §4), without judging it; `ProviderAnswerTable` (provider `.webpush`) does that.
///
/// - 201 Created / 202 Accepted: `messageId` = the `Location` header (the message resource),
///   clipped to `messageIdLimit` characters; nil when absent.
/// - any other status: `reason` = the JSON body's string `reason` when there is one (Apple's
///   `{"reason":"BadJwtToken"}`), else nil, so the status decides; `rawDetail` = `HTTP <status>`
///   and a printable prefix of the body, at most `rawDetailLimit` characters. A 3xx is kept as
///   it is (redirects are never followed).
/// - every status: `retryAfterSeconds` = `Retry-After` as delay-seconds (an HTTP-date gives nil).
/// - no response: the transport, with curl's text clipped as `rawDetail`.
public enum WebPushAnswerParser {
    /// Longest `rawDetail` kept, in characters.
    public static let rawDetailLimit = 160
    /// Longest `messageId` kept, in characters.
    public static let messageIdLimit = 256

    /// See the type's documentation.
    public static func answer(for outcome: HTTPOutcome) -> ProviderAnswer {
        guard case .response(let response) = outcome else {
            return ProviderAnswer(transport: outcome.transport,
                                  rawDetail: outcome.failureDetail.map { ProviderText.clip($0, limit: rawDetailLimit) })
        }
        var answer = ProviderAnswer(transport: .response, httpStatus: response.status)
        answer.retryAfterSeconds = ProviderText.retryAfterSeconds(response.headers["retry-after"])
        if response.status == 201 || response.status == 202 {
            answer.messageId = response.headers["location"].map { ProviderText.clip($0, limit: messageIdLimit) }
            return answer
        }
        if let reason = ProviderText.jsonObject(response.body)?["reason"] as? String, !reason.isEmpty {
            answer.reason = ProviderText.clip(reason, limit: 64)
        }
        answer.rawDetail = detail(response)
        return answer
    }

    /// `HTTP <status>` plus, when the body is not empty, `: <printable prefix>`; a 3xx notes that
    /// the redirect was not followed.
    static func detail(_ response: HTTPResponse) -> String {
        var text = "HTTP \(response.status)"
        if (300...399).contains(response.status) { text += " (redirect not followed)" }
        if !response.body.isEmpty {
            text += ": " + String(decoding: response.body.prefix(rawDetailLimit), as: UTF8.self)
        }
        return ProviderText.clip(text, limit: rawDetailLimit)
    }
}
