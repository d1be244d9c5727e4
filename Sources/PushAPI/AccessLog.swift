import Foundation
import Glibc
import PushCore
import PushWorker

/// The access log (issue 14 part 8): one JSON object per line on standard error for each request,
/// in `Log`'s form (`ts`, `level`, `event` `api.request`, then the fields in name order): `abort`
/// (when the connection ended without an answer), `client`, `duration_ms`, `key_prefix`,
/// `method`, `request_id`, `route` (the template, never the path with its ids), `status`. Never a
/// full key, device token, encryption key or content: none of them reaches an `HTTPExchange`.
/// Built as bytes and written with one `write(2)` per line (it runs for every request; `Log`'s
/// dictionary of `Any` cost a tenth of the server's CPU on small reads).
enum AccessLog {
    /// The line for `x` at `now` (method already normalised), newline included.
    static func line(_ x: HTTPExchange, method: String, now: Date) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        func raw(_ s: StaticString) { out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)) }
        func text(_ key: StaticString, _ value: String) {
            raw(key)
            JSONWriter.appendString(value, to: &out)
        }
        raw("{\"ts\":\"")
        out.append(contentsOf: Log.timestamp(now).utf8)
        raw("\",\"level\":\"info\",\"event\":\"api.request\"")
        if let a = x.abort { text(",\"abort\":", a) }
        if let c = x.client { text(",\"client\":", c) }
        raw(",\"duration_ms\":")
        out.append(contentsOf: String((x.seconds * 1_000_000).rounded() / 1000).utf8)
        if let p = x.keyPrefix { text(",\"key_prefix\":", p) }
        text(",\"method\":", method)
        text(",\"request_id\":", x.requestID)
        text(",\"route\":", x.route)
        raw(",\"status\":")
        out.append(contentsOf: String(x.status).utf8)
        raw("}\n")
        return out
    }

    /// Writes the line on standard error (one `write(2)`, so lines of concurrent requests never mix).
    static func write(_ x: HTTPExchange, method: String) {
        let bytes = line(x, method: method, now: Date())
        bytes.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
