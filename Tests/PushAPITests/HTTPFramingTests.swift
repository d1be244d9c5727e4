import Foundation
@testable import PushAPI
import XCTest
import PushCore

/// Framing the server refuses itself (`HTTPFraming`) with a JSON 400 `INVALID_REQUEST` naming the
/// header, before any handler runs: NUL inside a header value (never cut there), a header name
/// that is not a token (RFC 9112 §5.1), differing Content-Length values (RFC 9112 §6.3), an
/// HTTP/1.1 request without Host (RFC 9112 §3.2), several Authorization or Idempotency-Key headers, a path holding a
/// decoded NUL or bytes that are not UTF-8. Nothing is written; the server keeps serving.
final class HTTPFramingTests: APITestCase {
    /// Sends `head` (request line and headers, without the blank line) and `body` raw.
    private func raw(_ head: [UInt8], body: [UInt8] = []) throws -> RawHTTP.Response {
        let c = try RawHTTP(port: port)
        try c.send(head + Array("\r\n\r\n".utf8) + body)
        return try c.readResponse()
    }

    private func refused(_ label: String, field: String?, _ send: () throws -> RawHTTP.Response) throws {
        let before = try fingerprint()
        let r = try send()
        XCTAssertEqual(r.status, 400, "\(label): \(r.text)")
        XCTAssertEqual(r.errorCode, "INVALID_REQUEST", "\(label): \(r.text)")
        XCTAssertEqual(r.errorField, field, "\(label): \(r.text)")
        XCTAssertEqual(r.headers["content-type"], "application/json", label)
        XCTAssertEqual(try fingerprint(), before, "\(label) wrote something")
        XCTAssertEqual(try call("GET", "/v1/push/apps/\(appID)", key: testKey).status, 200, "after \(label)")
    }

    private var sendBody: [UInt8] { Array("{\"app_id\":\"\(appID)\",\"user_ids\":[\"u_nul\"],\"title\":\"t\"}".utf8) }

    /// A send with `extra` raw header bytes (each line without its CRLF).
    private func send(_ extra: [[UInt8]], host: Bool = true, version: String = "HTTP/1.1", head: [[UInt8]] = []) throws -> RawHTTP.Response {
        var lines: [[UInt8]] = [Array("POST /v1/push/notifications \(version)".utf8)] + head
        if host { lines.append(Array("Host: x".utf8)) }
        lines += [Array("Content-Type: application/json".utf8), Array("Content-Length: \(sendBody.count)".utf8)]
        if !extra.contains(where: { $0.starts(with: Array("Authorization".utf8)) }) {
            lines.append(Array("Authorization: Bearer \(testKey)".utf8))
        }
        lines += extra
        return try raw(Array(lines.joined(separator: Array("\r\n".utf8))), body: sendBody)
    }

    private func header(_ name: String, _ before: String, nul after: String) -> [UInt8] {
        Array("\(name): \(before)".utf8) + [0] + Array(after.utf8)
    }

    /// "zz\0first" and "zz\0second" are two keys: neither may be read as "zz" (the second would
    /// replay the first's notification and never be sent).
    func testNULInAHeaderValueIsRefusedNotCut() throws {
        try register(token: "nul_header")
        try refused("Idempotency-Key zz NUL first", field: "Idempotency-Key") { try send([header("Idempotency-Key", "zz", nul: "first")]) }
        try refused("Idempotency-Key zz NUL second", field: "Idempotency-Key") { try send([header("Idempotency-Key", "zz", nul: "second")]) }
        let plain = try send([Array("Idempotency-Key: zz".utf8)])
        XCTAssertEqual(plain.status, 201, plain.text)
        try refused("Idempotency-Key after zz was used", field: "Idempotency-Key") { try send([header("Idempotency-Key", "zz", nul: "first")]) }
        try refused("Authorization with a NUL", field: "Authorization") { try send([header("Authorization", "Bearer \(testKey)", nul: "junk")]) }
        try refused("Content-Type with a NUL", field: "Content-Type") {
            try send([header("Content-Type", "application/json", nul: "; charset=latin1")])
        }
        // In the middle of the block too (the next header follows the cut value), and a NUL at the end.
        try refused("NUL header followed by another", field: "Idempotency-Key") {
            try send([header("Idempotency-Key", "zz", nul: "third"), Array("X-After: 1".utf8)])
        }
        try refused("NUL then spaces", field: "X-Trailing") { try send([header("X-Trailing", "v", nul: "  ")]) }
        // A NUL at the value's very end (fresh-user trial: "zz\0" replayed the notification of "zz"),
        // as the last header, in the middle, after blanks, twice, and on bare-LF lines.
        try refused("Idempotency-Key zz NUL, last", field: "Idempotency-Key") { try send([header("Idempotency-Key", "zz", nul: "")]) }
        try refused("Idempotency-Key zz NUL, then another", field: "Idempotency-Key") {
            try send([header("Idempotency-Key", "zz", nul: ""), Array("X-After: 1".utf8)])
        }
        try refused("Idempotency-Key zz blank NUL", field: "Idempotency-Key") { try send([header("Idempotency-Key", "zz ", nul: "")]) }
        try refused("Idempotency-Key zz NUL NUL", field: "Idempotency-Key") { try send([header("Idempotency-Key", "zz", nul: "\u{0}")]) }
        try refused("Host NUL, first header", field: "Host") { try send([], host: false, head: [header("Host", "x", nul: "")]) }
        try refused("bare LF, NUL NUL", field: "X-Lf") {
            try raw(Array("GET /v1/push/apps/\(appID) HTTP/1.1\nHost: x\nAuthorization: Bearer \(testKey)\nX-Lf: v".utf8) + [0, 0] + Array("\nX-Last: 1".utf8))
        }
        // Whole values are not mistaken for cut ones: bare-LF line ends, trailing blanks, empty values.
        let lf = try raw(Array("GET /v1/push/apps/\(appID) HTTP/1.1\nHost: x\nX-Empty:\nX-Blank: v  \t\nAuthorization: Bearer \(testKey)\nX-Last: 1".utf8))
        XCTAssertEqual(lf.status, 200, lf.text)
        try refused("query value with %00", field: "user_id") { try call("GET", "/v1/push/devices?user_id=a%00b", key: testKey) }
    }

    func testHeaderNameWithWhitespaceIsRefused() throws {
        try refused("space before the colon", field: "Authorization") {
            try raw(Array("GET /v1/push/apps HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer \(testKey)".utf8))
        }
    }

    /// An obsolete folded line (RFC 9112 §5.2) after another header: libmicrohttpd joins it to
    /// that header's name, so the refused "name" held `Authorization: Bearer <the whole key>`, and
    /// the answer quoted it in `message` and `field`. Now at most 16 token bytes of it are quoted,
    /// fewer than the key's first 14 characters after the header names.
    func testAFoldedHeaderIsRefusedWithoutQuotingWhatFollowsTheName() throws {
        for (label, head) in [("folded Authorization", "Host: x\r\n Authorization: Bearer \(testKey)"),
                              ("folded bare key", "Host: x\r\n \(testKey)"),
                              ("folded after another header", "Host: x\r\nX-Secret-Title: a\r\n\tAuthorization: Bearer \(testKey)")] {
            let r = try raw(Array("GET /v1/push/apps HTTP/1.1\r\n\(head)".utf8))
            XCTAssertEqual(r.status, 400, "\(label): \(r.text)")
            XCTAssertEqual(r.errorCode, "INVALID_REQUEST", "\(label): \(r.text)")
            XCTAssertLessThanOrEqual(r.errorField?.utf8.count ?? 0, 16, "\(label): \(r.text)")
            XCTAssertFalse(r.text.contains(String(testKey.suffix(testKey.count - 8))), "\(label) quoted the key: \(r.text)")
            XCTAssertFalse(r.text.contains("Bearer"), "\(label): \(r.text)")
        }
        XCTAssertEqual(try call("GET", "/v1/push/apps/\(appID)", key: testKey).status, 200, "still serving")
    }

    /// A folded line of token bytes alone (RFC 9112 §5.2: refuse with 400, or replace the fold):
    /// libmicrohttpd joined it to the name (`X-Tag: a` then ` b` read as `X-Tagb: a`), and with a
    /// NUL check measuring the line the fold was taken for a NUL. Refused as a fold, wherever it is.
    func testAFoldedLineOfTokenBytesIsRefusedAsAFold() throws {
        for (label, head) in [("folded last", "Host: x\r\nAuthorization: Bearer \(testKey)\r\nX-Tag: a\r\n b"),
                              ("folded middle", "Host: x\r\nX-Tag: a\r\n\tb\r\nAuthorization: Bearer \(testKey)"),
                              ("folded bare LF", "Host: x\nX-Tag: a\n b\nAuthorization: Bearer \(testKey)")] {
            try refused(label, field: "X-Tagb") { try raw(Array("GET /v1/push/apps/\(appID) HTTP/1.1\r\n\(head)".utf8)) }
        }
    }

    func testDifferingContentLengthsAreRefused() throws {
        let body = Array("{\"name\":\"raw\"}".utf8)
        for (a, b) in [(body.count, 3), (3, body.count)] {
            try refused("Content-Length \(a) then \(b)", field: "Content-Length") {
                try raw(Array("POST /v1/push/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testKey)\r\nContent-Type: application/json\r\nContent-Length: \(a)\r\nContent-Length: \(b)\r\nConnection: close".utf8), body: body)
            }
        }
        // The same value twice frames one body: accepted.
        let same = try raw(Array("POST /v1/push/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testKey)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nContent-Length: \(body.count)".utf8), body: body)
        XCTAssertEqual(same.status, 201, same.text)
    }

    /// Two Idempotency-Key headers were read as the last one: a request carrying `dupA` and `dupB`
    /// created a notification under `dupB` and none under `dupA` (R-API-5). Refused, like two
    /// Authorization headers; one key still works.
    func testSeveralIdempotencyKeysAreRefused() throws {
        try refused("two Idempotency-Key headers", field: "Idempotency-Key") {
            try send([Array("Idempotency-Key: dupA".utf8), Array("Idempotency-Key: dupB".utf8)])
        }
        try refused("two Authorization headers", field: "Authorization") {
            try send([Array("Authorization: Bearer \(testKey)".utf8), Array("Authorization: Bearer \(testKey)".utf8)])
        }
        let one = try send([Array("Idempotency-Key: dupB".utf8)])
        XCTAssertEqual(one.status, 201, "one key: created, so the refused request made nothing under it: \(one.text)")
    }

    /// Content-Length beside Transfer-Encoding: chunked: read by the chunks, answered, and then the
    /// connection closed (RFC 9112 §6.1: MUST close after responding), where it stayed open for
    /// the next request; a request with either header alone keeps its connection.
    func testContentLengthWithTransferEncodingIsAnsweredThenClosed() throws {
        let json = "{\"name\":\"te\"}"
        let chunked = String(json.utf8.count, radix: 16) + "\r\n" + json + "\r\n0\r\n\r\n"
        let head = "POST /v1/push/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testKey)\r\nContent-Type: application/json\r\n"
        let both = try RawHTTP(port: port)
        try both.send(head + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
        let answer = try both.readResponse()
        XCTAssertEqual(answer.status, 201, answer.text)
        XCTAssertEqual(answer.headers["connection"]?.lowercased(), "close", answer.text)
        XCTAssertTrue(both.closes(within: 2), "the connection stayed open after Content-Length with Transfer-Encoding")
        for (label, framing, body) in [("chunked alone", "Transfer-Encoding: chunked\r\n", chunked),
                                       ("Content-Length alone", "Content-Length: \(json.utf8.count)\r\n", json)] {
            let c = try RawHTTP(port: port)
            try c.send(head + framing + "\r\n" + body)
            let r = try c.readResponse()
            XCTAssertEqual(r.status, 201, "\(label): \(r.text)")
            XCTAssertNil(r.headers["connection"], label)
            XCTAssertEqual(try c.request("GET", "/v1/push/apps/\(appID)", headers: [("Authorization", "Bearer \(testKey)")]).status, 200, label)
        }
    }

    /// A request libmicrohttpd refuses itself before the handler runs (a Content-Length that is not
    /// a number or too large, a header block over its buffer) is the client's fault: its access
    /// line carries the status libmicrohttpd answered and `"abort": "refused"`, and libmicrohttpd's
    /// own lines are info, not warnings (fresh-user trial: two warn lines and `"abort": "error"`
    /// with status 0 each).
    func testRequestsLibmicrohttpdRefusesAreLoggedWithTheirStatusAtInfo() throws {
        let server = try APIProcesses.startAPI(databaseURL: db.database.conninfo)
        defer { if server.process.isRunning { server.process.terminate() }; try? FileManager.default.removeItem(atPath: server.logPath) }
        for (length, status) in [("abc", 400), ("99999999999999999999999", 413)] {
            let c = try RawHTTP(port: server.port)
            try c.send("POST /v1/push/apps HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n\r\n{}")
            XCTAssertEqual(try c.readHead().status, status, length)
        }
        let big = try RawHTTP(port: server.port)
        try big.send("GET /v1/push/apps HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n")
        XCTAssertEqual(try big.readHead().status, 431)
        var lines: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(5)
        repeat {
            Thread.sleep(forTimeInterval: 0.1)
            let text = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        } while lines.filter({ $0["event"] as? String == "api.request" }).count < 3 && Date() < deadline
        // In the order the requests arrived (their ids count up): an access line is written when its
        // exchange ends, and the first two connections' exchanges end in either order.
        let requests = lines.filter { $0["event"] as? String == "api.request" }
            .sorted { ($0["request_id"] as? String ?? "") < ($1["request_id"] as? String ?? "") }
        XCTAssertEqual(requests.map { $0["status"] as? Int }, [400, 413, 431], "\(requests)")
        XCTAssertEqual(requests.map { $0["abort"] as? String }, ["refused", "refused", "refused"], "\(requests)")
        let mhd = lines.filter { $0["event"] as? String == "api.http" }
        XCTAssertFalse(mhd.isEmpty, "libmicrohttpd says why")
        XCTAssertEqual(Set(mhd.map { $0["level"] as? String }), ["info"], "\(mhd)")
    }

    func testHTTP11WithoutHostIsRefused() throws {
        try refused("HTTP/1.1 without Host", field: "Host") { try send([], host: false) }
        // HTTP/1.0 has no Host requirement.
        let old = try raw(Array("GET /v1/push/apps/\(appID) HTTP/1.0\r\nAuthorization: Bearer \(testKey)".utf8))
        XCTAssertEqual(old.status, 200, old.text)
    }

    /// HEAD answers as GET does, without the body (RFC 9110 §9.3.2): status, Content-Type and
    /// Content-Length of the GET, and no body bytes before the next answer on the connection.
    func testHeadAnswersLikeGetWithoutABody() throws {
        let get = try call("GET", "/v1/push/apps", key: testKey)
        XCTAssertEqual(get.status, 200, get.text)
        let c = try RawHTTP(port: port)
        try c.send(RawHTTP.requestBytes("HEAD", "/v1/push/apps", headers: [("Authorization", "Bearer \(testKey)")]))
        let head = try c.readHead()
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.headers["content-type"], "application/json")
        XCTAssertEqual(head.headers["content-length"], String(get.body.count))
        // The next answer on the same connection starts right after the head: no body was sent.
        let next = try c.request("GET", "/v1/push/apps/\(appID)", headers: [("Authorization", "Bearer \(testKey)")])
        XCTAssertEqual(next.status, 200, next.text)
        let unauthenticated = try RawHTTP(port: port)
        try unauthenticated.send(RawHTTP.requestBytes("HEAD", "/v1/push/apps/\(appID)"))
        XCTAssertEqual(try unauthenticated.readHead().status, 401, "HEAD needs the key GET needs")
    }

    /// libmicrohttpd decodes the path in place: `%00` used to cut it there, so erasing user
    /// `a%00b` erased user `a`, and `%FF` named user U+FFFD. Both are refused; nothing is written.
    func testAPathWithADecodedNULOrNotUTF8IsRefusedNotCut() throws {
        try register(token: "nul_path_a", user: "a")
        try register(token: "nul_path_fffd", user: "\u{FFFD}")
        for path in ["/v1/push/users/a%00b?app_id=\(appID)", "/v1/push/users/a%00?app_id=\(appID)",
                     "/v1/push/users/%FF?app_id=\(appID)", "/v1/push/users/%C3?app_id=\(appID)",
                     "/v1/push/apps/\(appID)%00junk"] {
            try refused(path, field: nil) { try call(path.hasPrefix("/v1/push/users") ? "DELETE" : "GET", path, key: testKey) }
        }
        XCTAssertEqual(try count("push_devices", "active AND user_id IN ('a', '\u{FFFD}')"), 2, "no user was erased")
        // Escapes that decode to UTF-8 (and a lone or broken % left as it is) still name their user.
        try register(token: "nul_path_e", user: "jos\u{E9}")
        let e = try call("DELETE", "/v1/push/users/jos%C3%A9?app_id=\(appID)", key: testKey)
        XCTAssertEqual(e.status, 200, e.text)
        XCTAssertEqual(e.json["devices_deactivated"] as? Int, 1, e.text)
        XCTAssertNil(HTTPFraming.check(target: Array("/v1/push/users/50%25?x=%00".utf8)), "the query is checked per argument")
        XCTAssertNil(HTTPFraming.check(target: Array("/v1/push/users/a%0".utf8)))
        XCTAssertNil(HTTPFraming.check(target: Array("/v1/push/users/a%zz".utf8)))
        XCTAssertNotNil(HTTPFraming.check(target: Array("/v1/push/users/%e2%82".utf8)))
    }

    /// A raw NUL byte (0x00, not `%00`) in the request target: libmicrohttpd hands the target as a
    /// C string, so `DELETE /v1/push/users/zed\0evil` erased user `zed` and a device id followed
    /// by a NUL and junk deactivated that device. Refused in the path and in the query; nothing
    /// is written. Every request of the suite without one (with and without a query, HTTP/1.0
    /// below) still passes, so the span check never refuses a whole target.
    func testARawNULInTheRequestTargetIsRefusedNotCut() throws {
        try register(token: "raw_nul_zed", user: "zed")
        let device = try register(token: "raw_nul_dev", user: "raw_nul_owner")
        func rawTarget(_ method: String, _ before: String, _ after: String, version: String = "HTTP/1.1") throws -> RawHTTP.Response {
            try raw(Array("\(method) \(before)".utf8) + [0] + Array("\(after) \(version)\r\nHost: x\r\nAuthorization: Bearer \(testKey)".utf8))
        }
        try refused("DELETE user zed NUL evil", field: nil) { try rawTarget("DELETE", "/v1/push/users/zed", "evil?app_id=\(appID)") }
        try refused("DELETE user zed NUL before the query", field: nil) { try rawTarget("DELETE", "/v1/push/users/zed", "?app_id=\(appID)") }
        try refused("DELETE device NUL zzz", field: nil) { try rawTarget("DELETE", "/v1/push/devices/\(device)", "zzz") }
        try refused("DELETE device NUL at the end", field: nil) { try rawTarget("DELETE", "/v1/push/devices/\(device)", "") }
        try refused("DELETE device NUL HTTP/1.0", field: nil) { try rawTarget("DELETE", "/v1/push/devices/\(device)", "", version: "HTTP/1.0") }
        try refused("GET app NUL", field: nil) { try rawTarget("GET", "/v1/push/apps/\(appID)", "") }
        try refused("NUL right after the method", field: nil) { try rawTarget("GET", "", "/v1/push/apps/\(appID)") }
        try refused("NUL in a query value", field: nil) { try rawTarget("DELETE", "/v1/push/users/zed?app_id=\(appID)", "x") }
        try refused("NUL in a query name", field: nil) { try rawTarget("GET", "/v1/push/devices?user_id=zed&", "limit=1") }
        XCTAssertEqual(try count("push_devices", "active AND user_id IN ('zed', 'raw_nul_owner')"), 2, "no device was deactivated")
        // The same requests without the NUL are served (HTTP/1.0 too: no Host needed there).
        let plain = try raw(Array("GET /v1/push/devices/\(device) HTTP/1.0\r\nAuthorization: Bearer \(testKey)".utf8))
        XCTAssertEqual(plain.status, 200, plain.text)
        let erased = try raw(Array("DELETE /v1/push/users/zed?app_id=\(appID) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testKey)".utf8))
        XCTAssertEqual(erased.status, 200, erased.text)
        XCTAssertEqual(erased.json["devices_deactivated"] as? Int, 1, erased.text)
    }

    /// Authorization is a singleton field (RFC 9110 §5.3): with two, which key applies would be
    /// the reader's choice (the last one was taken: a test key then a live one read as live).
    func testSeveralAuthorizationHeadersAreRefused() throws {
        try refused("two keys", field: "Authorization") {
            try call("GET", "/v1/push/apps/\(appID)", key: nil, headers: [("Authorization", "Bearer \(testKey)"), ("Authorization", "Bearer \(liveKey)")])
        }
        try refused("the same key twice", field: "Authorization") {
            try call("GET", "/v1/push/apps/\(appID)", key: nil, headers: [("Authorization", "Bearer \(testKey)"), ("Authorization", "Bearer \(testKey)")])
        }
    }
}
