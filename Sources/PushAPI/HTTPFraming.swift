import Foundation

/// The request-framing checks the server makes itself once the headers are in, before any
/// handler sees the request; each refusal is 400 `INVALID_REQUEST` naming the header.
///
/// - A header value holding a NUL byte (RFC 9110 §5.5: NUL is never field content), inside it or
///   at its end: refused instead of read as the part before the NUL (two keys `zz\0a` and
///   `zz\0b`, or `zz\0` and `zz`, would read as one).
/// - A header continued on an obsolete folded line (RFC 9112 §5.2: a server MUST refuse it with
///   400 or replace the fold with spaces; libmicrohttpd joins it to the header's name instead).
/// - A header name that is not a token (RFC 9110 §5.1), such as one with whitespace before the
///   colon (RFC 9112 §5.1: MUST be refused with 400).
/// - Content-Length headers whose values differ (RFC 9112 §6.3: an unrecoverable framing error;
///   a proxy that picked the other value would see another request).
/// - An HTTP/1.1 request without a Host header (RFC 9112 §3.2: MUST be refused with 400).
/// - More than one Authorization header (a singleton field, RFC 9110 §5.3, §11.6.2): which
///   credential applies would depend on which one a reader picks.
/// - A path whose percent-decoding holds a NUL byte or is not UTF-8: libmicrohttpd decodes the
///   path in place, so `/v1/push/users/a%00b` would be read as `/v1/push/users/a` (another user
///   erased) and `%FF` as U+FFFD; the raw request target is checked instead (field `null`).
/// - A raw NUL byte (0x00, not `%00`) anywhere in the request target, path or query:
///   libmicrohttpd hands the target as a C string, so `/v1/push/users/zed\0evil` would be read
///   as `/v1/push/users/zed`; it is found from the target's span (`cpush_http_target_was_cut`).
enum HTTPFraming {
    /// One refusal: the header or query argument it names (as sent, or its canonical name; `nil`
    /// for the path) and why.
    struct Refusal: Equatable {
        var field: String?
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
        if name.isEmpty || !name.allSatisfy(isTokenByte) {
            let shown = quotedNamePrefix(name)
            return Refusal(field: shown.isEmpty ? nil : shown,
                           message: shown.isEmpty ? "a header name is empty or starts with a byte a token cannot hold (no whitespace or separators, and none before the colon)"
                               : "the header name starting \"\(shown)\" is not a token (no whitespace or separators, and none before the colon)")
        }
        let shown = String(decoding: name, as: UTF8.self)
        if value.contains(0) { return nulRefusal(shown) }
        return nil
    }

    /// At most the first `namePrefixLimit` bytes of a refused header name, and none from its
    /// first byte that is not a token's on: libmicrohttpd joins an obsolete folded line to the
    /// name before it, so the bytes after that point can be another header's value (a folded
    /// `Authorization: Bearer <key>` came back whole in the answer). The limit is below the
    /// 14-character key prefixes the logs show.
    static func quotedNamePrefix(_ name: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: name.prefix(while: isTokenByte).prefix(namePrefixLimit), as: UTF8.self)
    }

    /// Bytes of a refused header name an answer may quote.
    static let namePrefixLimit = 16

    /// The refusal of a header value holding a NUL byte.
    static func nulRefusal(_ name: String) -> Refusal {
        Refusal(field: name, message: "the \(name) header contains a NUL byte")
    }

    /// The refusal of a header continued on a folded line (`name` as libmicrohttpd joined it: only
    /// its first token bytes are quoted, `quotedNamePrefix`).
    static func foldedRefusal(_ name: UnsafeBufferPointer<UInt8>) -> Refusal {
        let shown = quotedNamePrefix(name)
        return Refusal(field: shown.isEmpty ? nil : shown,
                       message: "a header line starts with whitespace (obsolete line folding is not accepted; send each header on one line)")
    }

    /// The refusal of a request target holding a raw NUL byte (path or query).
    static let targetNULRefusal = Refusal(field: nil, message: "the request target contains a NUL byte")

    /// The refusal for the header set as a whole (`headers` names lower-cased), if any.
    static func check(headers: [HTTPRequest.Header], version: String) -> Refusal? {
        let lengths = headers.filter { $0.name == "content-length" }.map { $0.value.trimmingCharacters(in: .whitespaces) }
        if let first = lengths.first, lengths.contains(where: { $0 != first }) {
            return Refusal(field: "Content-Length", message: "the Content-Length headers differ (\(lengths.joined(separator: ", ")))")
        }
        // Headers the API reads as one value: several would be read as the last one (a second
        // Idempotency-Key replayed whichever notification that key named), so they are refused.
        for (name, shown) in [("authorization", "Authorization"), ("idempotency-key", "Idempotency-Key")]
        where headers.filter({ $0.name == name }).count > 1 {
            return Refusal(field: shown, message: "send one \(shown) header, not several")
        }
        if version == "HTTP/1.1", !headers.contains(where: { $0.name == "host" }) {
            return Refusal(field: "Host", message: "an HTTP/1.1 request must carry a Host header")
        }
        return nil
    }

    /// Whether the answer must close the connection: a request carrying both Content-Length and
    /// Transfer-Encoding is read by Transfer-Encoding alone (libmicrohttpd does), and RFC 9112
    /// §6.1 says the server MUST close the connection after answering it, since an intermediary
    /// that framed it by Content-Length would read what follows as another request (`headers`
    /// names lower-cased).
    static func closesAfterAnswer(headers: [HTTPRequest.Header]) -> Bool {
        headers.contains { $0.name == "content-length" } && headers.contains { $0.name == "transfer-encoding" }
    }

    /// The refusal for the request target's path (the raw bytes of the request line, before
    /// libmicrohttpd decodes them; the query is checked argument by argument), if any: a
    /// percent-decoded NUL byte, or bytes that are not UTF-8 once decoded (RFC 3986 §2.1, §2.5).
    static func check(target: [UInt8]) -> Refusal? {
        let path = target.prefix { $0 != UInt8(ascii: "?") }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(path.count)
        var i = path.startIndex
        while i < path.endIndex {
            let byte = path[i]
            if byte == UInt8(ascii: "%"), i + 2 < path.endIndex,
               let high = hexValue(path[i + 1]), let low = hexValue(path[i + 2]) {
                decoded.append(high << 4 | low)
                i += 3
            } else {
                decoded.append(byte)
                i += 1
            }
        }
        if decoded.contains(0) { return Refusal(field: nil, message: "the path contains a NUL byte (%00)") }
        if String(validating: decoded, as: UTF8.self) == nil {
            return Refusal(field: nil, message: "the path is not UTF-8 once percent-decoded")
        }
        return nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
