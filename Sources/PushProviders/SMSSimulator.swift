import PushCore

/// The built-in test-mode SMS provider (R-MODE-2, R-SMS-1): a test notification's SMS fallback
/// never reaches a network. It answers by the recipient's number, with Twilio's documented magic
/// test numbers (Twilio's "Test credentials": the `To` numbers of test SMS messages) and Twilio's
/// answer shapes, so the worker judges both alike; and it keeps the exact form body the live
/// client would have written (`request`), with Twilio's magic sender `+15005550006`.
///
/// | `To` | answer |
/// |---|---|
/// | `+15005550001` | 400, code 21211: the number is invalid |
/// | `+15005550002` | 400, code 21612: Twilio cannot route to it |
/// | `+15005550003` | 400, code 21408: no permission to send to its region |
/// | `+15005550004` | 400, code 21610: the number is blocked (it replied STOP) |
/// | `+15005550009` | 400, code 21614: the number cannot receive SMS |
/// | any other | 201, `queued`, message id `SM` + the notification id's 32 hex digits |
public final class SMSSimulator: SMSProvider, @unchecked Sendable {
    /// Twilio's magic `From` that passes every check with test credentials.
    public static let sender = TwilioClient.Sender.from("+15005550006")

    /// The magic `To` numbers and their Twilio error codes.
    public static let refusals: [String: Int] = [
        "+15005550001": 21211, "+15005550002": 21612, "+15005550003": 21408, "+15005550004": 21610,
        "+15005550009": 21614,
    ]

    /// `simulator`.
    public let name = "simulator"

    /// A simulator.
    public init() {}

    /// The answer to `request` (never a network call).
    public static func answer(_ request: SMSRequest) -> ProviderAnswer {
        if let code = refusals[request.to] {
            return ProviderAnswer(transport: .response, httpStatus: 400, reason: String(code),
                                  rawDetail: "HTTP 400 code \(code) (simulated)")
        }
        return ProviderAnswer(transport: .response, httpStatus: 201, messageId: messageID(request.reference),
                              rawDetail: "queued")
    }

    /// `SM` and 32 lower-case hex digits: those of `reference` (a notification id), padded with zeros.
    public static func messageID(_ reference: String) -> String {
        let hex = reference.lowercased().filter { $0.isHexDigit }.prefix(32)
        return "SM" + hex + String(repeating: "0", count: 32 - hex.count)
    }

    /// The form body the live client would write for `request` (To, From, Body).
    public static func request(_ request: SMSRequest) -> [UInt8] {
        TwilioClient.formBody(request, sender: sender)
    }

    /// One answer per request, in order.
    public func send(_ batch: [SMSRequest]) -> [ProviderAnswer] { batch.map(Self.answer) }
}
