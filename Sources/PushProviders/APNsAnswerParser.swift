import Foundation
import PushCore

/// Turns one HTTP outcome from APNs into a raw `ProviderAnswer` (Apple's "Handling notification
/// responses from APNs"), without judging it. Garbage, HTML, empty or truncated bodies give `reason ==
/// nil` and a short sanitized `rawDetail`.
public enum APNsAnswerParser {
    /// Longest `rawDetail` kept, in characters.
    public static let rawDetailLimit = 160

    /// - Parameters:
    ///   - outcome: what `HTTP2Client` returned for the request.
    ///   - apnsId: the `apns-id` the request carried (used when a 200 lacks the header).
    /// - Returns: status, `reason` (JSON `reason`), `timestampMillis` (JSON `timestamp`, 410 only),
    ///   `retryAfterSeconds` (`retry-after` header), `messageId` (`apns-id` on 200).
    public static func answer(for outcome: HTTPOutcome, apnsId: String) -> ProviderAnswer {
        guard case .response(let response) = outcome else {
            return ProviderAnswer(transport: outcome.transport,
                                  rawDetail: outcome.failureDetail.map { ProviderText.clip($0, limit: rawDetailLimit) })
        }
        var answer = ProviderAnswer(transport: .response, httpStatus: response.status)
        answer.retryAfterSeconds = ProviderText.retryAfterSeconds(response.headers["retry-after"])
        if response.status == 200 {
            answer.messageId = response.headers["apns-id"] ?? apnsId
            return answer
        }
        guard let object = ProviderText.jsonObject(response.body), let reason = object["reason"] as? String else {
            answer.rawDetail = ProviderText.unparseable(response, limit: rawDetailLimit)
            return answer
        }
        answer.reason = reason
        answer.timestampMillis = ProviderText.int64(object["timestamp"])
        return answer
    }
}

/// Small text helpers shared by the APNs and FCM answer parsers.
enum ProviderText {
    /// Parses `bytes` as a JSON object; nil for anything else (HTML, empty, cut).
    static func jsonObject(_ bytes: [UInt8]) -> [String: Any]? {
        guard !bytes.isEmpty, bytes.first == UInt8(ascii: "{") else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    /// A JSON number as Int64 (Foundation on Linux may hand back Int, Double or NSNumber); nil otherwise.
    static func int64(_ value: Any?) -> Int64? {
        switch value {
        case let v as Int: return Int64(v)
        case let v as Int64: return v
        case let v as Double: return v.isFinite ? Int64(exactly: v.rounded()) : nil
        case let v as NSNumber: return v.int64Value
        default: return nil
        }
    }

    /// `Retry-After` as delay-seconds (RFC 9110 §10.2.3); an HTTP-date or junk gives nil.
    static func retryAfterSeconds(_ header: String?) -> Double? {
        guard let header, let seconds = Double(header.trimmingCharacters(in: .whitespaces)),
              seconds.isFinite, seconds >= 0 else { return nil }
        return seconds
    }

    /// `unparseable body (<status>, <n> bytes): <printable prefix>` for operators.
    static func unparseable(_ response: HTTPResponse, limit: Int) -> String {
        let size = response.bodyTruncated ? "more than \(response.body.count)" : "\(response.body.count)"
        let head = "unparseable body (\(response.status), \(size) bytes)"
        if response.body.isEmpty { return head }
        return clip(head + ": " + String(decoding: response.body.prefix(limit), as: UTF8.self), limit: limit)
    }

    /// Keeps printable ASCII (others become `?`), cut to `limit` characters.
    static func clip(_ text: String, limit: Int) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if out.count >= limit { break }
            out.unicodeScalars.append(scalar.value >= 0x20 && scalar.value < 0x7F ? scalar : "?")
        }
        return out
    }
}
