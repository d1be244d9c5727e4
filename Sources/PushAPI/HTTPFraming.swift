import Foundation

/// The request-framing checks the server makes itself once the headers are in, before any
/// handler sees the request; each refusal is 400 `INVALID_REQUEST` naming the header.
///
/// - A header value holding a NUL byte (RFC 9110 §5.5: NUL is never field content): refused
///   instead of read as the part before the NUL (two keys `zz\0a` and `zz\0b` would read as one).
/// - A header name that is not a token (RFC 9110 §5.1), such as one with whitespace before the
///   colon (RFC 9112 §5.1: MUST be refused with 400).
/// - Content-Length headers whose values differ (RFC 9112 §6.3: an unrecoverable framing error;
///   a proxy that picked the other value would see another request).
/// - An HTTP/1.1 request without a Host header (RFC 9112 §3.2: MUST be refused with 400).
enum HTTPFraming {
    /// One refusal: the header it names (as sent, or its canonical name) and why.
    struct Refusal: Equatable {
        var field: String
        var message: String
    }

    /// Whether `byte` may appear in a field name (RFC 9110 §5.6.2 `tchar`).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The refusal for one header's raw bytes, if any (the first problem found).
    static func check(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Refusal? {
        let shown = String(decoding: name, as: UTF8.self)
        if name.isEmpty || !name.allSatisfy(isTokenByte) {
            return Refusal(field: shown, message: "the header name \"\(shown)\" is not a token (no whitespace or separators, and none before the colon)")
        }
        if value.contains(0) { return nulRefusal(shown) }
        return nil
    }

    /// The refusal of a header value holding a NUL byte.
    static func nulRefusal(_ name: String) -> Refusal {
        Refusal(field: name, message: "the \(name) header contains a NUL byte")
    }

    /// The refusal for the header set as a whole (`headers` names lower-cased), if any.
    static func check(headers: [HTTPRequest.Header], version: String) -> Refusal? {
        let lengths = headers.filter { $0.name == "content-length" }.map { $0.value.trimmingCharacters(in: .whitespaces) }
        if let first = lengths.first, lengths.contains(where: { $0 != first }) {
            return Refusal(field: "Content-Length", message: "the Content-Length headers differ (\(lengths.joined(separator: ", ")))")
        }
        if version == "HTTP/1.1", !headers.contains(where: { $0.name == "host" }) {
            return Refusal(field: "Host", message: "an HTTP/1.1 request must carry a Host header")
        }
        return nil
    }
}
