import PushCore

/// One SMS to send (R-SMS-1), already accepted: the number is E.164 and the text bounded.
public struct SMSRequest: Sendable, Equatable {
    /// The recipient, E.164 (`+` and 8 to 15 digits).
    public var to: String
    /// The text, sent as given (the provider splits it into segments).
    public var body: String
    /// The caller's reference, the notification id: for logs and the simulator's message id (never sent).
    public var reference: String

    /// Memberwise initializer.
    public init(to: String, body: String, reference: String) {
        self.to = to
        self.body = body
        self.reference = reference
    }
}

/// An SMS provider as the worker sees it, the seam another vendor plugs into beside
/// `TwilioClient` and the test-mode `SMSSimulator`. Calls block the calling thread.
///
/// Each request is written at most once: an implementation never sends a request again on its
/// own (no automatic retry, no reuse of a connection that could make the HTTP stack resend it),
/// because only the caller knows whether the message may already have been taken (R-SMS-1).
public protocol SMSProvider: AnyObject, Sendable {
    /// The provider's name as recorded on the SMS (`twilio`, `simulator`).
    var name: String { get }

    /// Sends every request of `batch` and returns one raw answer per request, in order. Never
    /// throws: transport problems are answers (`ProviderAnswer.Transport`: `.notSent` only when
    /// nothing reached the server), judged by PushCore's `SMSAnswerTable`. On acceptance,
    /// `messageId` is the provider's message id; on refusal `reason` is the provider's error code.
    func send(_ batch: [SMSRequest]) -> [ProviderAnswer]
}

/// `application/x-www-form-urlencoded` bodies (the HTML form encoding, which Twilio's REST API and
/// OAuth2 token endpoints take): every byte of a name or value other than `A-Z a-z 0-9 - . _ ~` as
/// `%XX` of its UTF-8 byte (a space as `%20`), pairs joined by `&`.
enum FormURLEncoding {
    /// The encoded body of `pairs`, in their order.
    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    /// One name or value, escaped.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + hex(byte >> 4) + hex(byte & 0xF)
            }
        }
        return out
    }

    private static func hex(_ nibble: UInt8) -> String {
        String(UnicodeScalar(nibble < 10 ? nibble + 0x30 : nibble - 10 + 0x41))
    }
}
