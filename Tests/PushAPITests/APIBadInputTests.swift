import Foundation
import XCTest
import PushCore
import PushCrypto

/// Each class of bad input (issue 14): the documented status and code, the field named where
/// there is one, nothing written, and the server still serving the next request.
final class APIBadInputTests: APITestCase {
    private func expect(_ label: String, status: Int, code: String, field: String? = nil,
                        _ send: () throws -> RawHTTP.Response) throws {
        let before = try fingerprint()
        let r = try send()
        XCTAssertEqual(r.status, status, "\(label): \(r.text)")
        XCTAssertEqual(r.errorCode, code, "\(label): \(r.text)")
        if let field { XCTAssertEqual(r.errorField, field, "\(label): \(r.text)") }
        XCTAssertEqual(r.headers["content-type"], "application/json", label)
        XCTAssertEqual(try fingerprint(), before, "\(label) wrote something")
        let next = try call("GET", "/v1/push/apps/\(appID)", key: testKey)
        XCTAssertEqual(next.status, 200, "after \(label) the server must still serve")
    }

    private func put(_ json: String) throws -> RawHTTP.Response { try call("PUT", "/v1/push/devices", key: testKey, json: json) }

    private func device(_ replace: [String: String?]) -> String {
        var fields: [(String, String?)] = [("app_id", "\"\(appID)\""), ("token", "\"bad_input\""), ("platform", "\"ios\""),
                                           ("user_id", "\"u\""), ("apns_environment", "\"sandbox\"")]
        for (k, v) in replace {
            if let i = fields.firstIndex(where: { $0.0 == k }) { fields[i].1 = v } else { fields.append((k, v)) }
        }
        let body = fields.compactMap { k, v in v.map { "\"\(k)\":\($0)" } }.joined(separator: ",")
        return "{\(body)}"
    }

    func testMalformedBodiesAre400() throws {
        try expect("malformed JSON", status: 400, code: "INVALID_REQUEST") { try put(#"{"app_id": "#) }
        try expect("not an object", status: 400, code: "INVALID_REQUEST") { try put(#"["a"]"#) }
        try expect("duplicate member", status: 400, code: "INVALID_REQUEST") { try put(#"{"user_id":"a","user_id":"b"}"#) }
        try expect("empty body", status: 400, code: "INVALID_REQUEST") { try put("") }
        try expect("wrong type", status: 400, code: "INVALID_REQUEST", field: "user_id") { try put(device(["user_id": "42"])) }
        try expect("wrong type in a nested object", status: 400, code: "INVALID_REQUEST", field: "subscription") {
            try put(device(["platform": "\"web\"", "token": nil, "apns_environment": nil, "subscription": "[]"]))
        }
        try expect("invalid UTF-8", status: 400, code: "INVALID_REQUEST") {
            // ... "apns_environment":"sandbox"} with 0xC3 0x28 (not UTF-8) inside the last string.
            let r = try RawHTTP.call(port: port, "PUT", "/v1/push/devices",
                                     headers: [("Authorization", "Bearer \(testKey)"), ("Content-Type", "application/json")],
                                     body: Array(device([:]).utf8.dropLast(2)) + [0xc3, 0x28, 0x22, 0x7d])
            XCTAssertTrue(r.text.contains("not valid UTF-8"), r.text)
            return r
        }
    }

    func testFieldRulesAre422NamingTheField() throws {
        let vector = try XCTUnwrap(Base64URL.decode(Self.vectorPublicKey))
        let offCurve = Base64URL.encode([0x04] + [UInt8](repeating: 1, count: 64))
        let compressed = Base64URL.encode([0x02] + Array(vector[1..<33]))
        try expect("unknown field", status: 422, code: "VALIDATION_ERROR", field: "tokn") { try put(device(["tokn": "\"x\""])) }
        try expect("key off the curve", status: 422, code: "VALIDATION_ERROR", field: "encryption_public_key") {
            try put(device(["encryption_public_key": "\"\(offCurve)\""]))
        }
        try expect("padded key", status: 422, code: "VALIDATION_ERROR", field: "encryption_public_key") {
            try put(device(["encryption_public_key": "\"\(Self.vectorPublicKey)=\""]))
        }
        try expect("compressed key", status: 422, code: "VALIDATION_ERROR", field: "encryption_public_key") {
            try put(device(["encryption_public_key": "\"\(compressed)\""]))
        }
        try expect("513-character token", status: 422, code: "VALIDATION_ERROR", field: "token") {
            try put(device(["token": "\"\(String(repeating: "a", count: 513))\""]))
        }
        try expect("token with a space", status: 422, code: "VALIDATION_ERROR", field: "token") { try put(device(["token": "\"a b\""])) }
        try expect("256-character user id", status: 422, code: "VALIDATION_ERROR", field: "user_id") {
            try put(device(["user_id": "\"\(String(repeating: "u", count: 256))\""]))
        }
        try expect("unknown platform", status: 422, code: "VALIDATION_ERROR", field: "platform") { try put(device(["platform": "\"tv\""])) }
        try expect("malformed app id", status: 404, code: "NOT_FOUND", field: "app_id") { try put(device(["app_id": "\"papp_x\""])) }
        // The boundaries pass: 512 characters of the alphabet, a 255-character user id.
        let edge = try put(device(["token": "\"\(String(repeating: "a", count: 512))\"", "user_id": "\"\(String(repeating: "u", count: 255))\""]))
        XCTAssertEqual(edge.status, 200, edge.text)
    }

    func testTransportLimitsAnswerInTheErrorShape() throws {
        try expect("wrong content type", status: 415, code: "UNSUPPORTED_MEDIA_TYPE") {
            try call("PUT", "/v1/push/devices", key: testKey, json: device([:]), headers: [("Content-Type", "text/plain")])
        }
        try expect("other charset", status: 415, code: "UNSUPPORTED_MEDIA_TYPE") {
            try call("PUT", "/v1/push/devices", key: testKey, json: device([:]),
                     headers: [("Content-Type", "application/json; charset=latin-1")])
        }
        try expect("body over the limit", status: 413, code: "REQUEST_TOO_LARGE") {
            try call("PUT", "/v1/push/devices", key: testKey, json: "{\"a\":\"" + String(repeating: "x", count: 70_000) + "\"}")
        }
        try expect("chunked body over the limit", status: 413, code: "REQUEST_TOO_LARGE") {
            let c = try RawHTTP(port: port)
            try c.send("PUT /v1/push/devices HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testKey)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in 0..<9 { try c.send(String(8000, radix: 16) + "\r\n" + String(repeating: "y", count: 8000) + "\r\n") }
            try c.send("0\r\n\r\n")
            return try c.readResponse()
        }
        try expect("too many headers", status: 431, code: "REQUEST_HEADER_FIELDS_TOO_LARGE") {
            try call("GET", "/v1/push/apps", key: testKey, headers: (1...70).map { ("X-H\($0)", "v") })
        }
        try expect("header block too large", status: 431, code: "REQUEST_HEADER_FIELDS_TOO_LARGE") {
            try call("GET", "/v1/push/apps", key: testKey, headers: [("X-Big", String(repeating: "y", count: 20_000))])
        }
        try expect("unknown path", status: 404, code: "NOT_FOUND") { try call("GET", "/v1/push/nothing", key: testKey) }
        try expect("wrong method", status: 405, code: "METHOD_NOT_ALLOWED") { try call("DELETE", "/v1/push/apps", key: testKey) }
        try expect("malformed id", status: 404, code: "NOT_FOUND") { try call("GET", "/v1/push/devices/pdev_XYZ", key: testKey) }
        try expect("unknown query argument", status: 422, code: "VALIDATION_ERROR", field: "colour") {
            try call("GET", "/v1/push/apps?colour=red", key: testKey)
        }
        let r = try call("DELETE", "/v1/push/apps", key: testKey)
        XCTAssertEqual(r.headers["allow"], "POST, GET, HEAD")
    }

    func testNotificationInputIsRefusedBeforeAnythingIsWritten() throws {
        try register(token: "bad_notification")
        func send(_ extra: String, headers: [(String, String)] = []) throws -> RawHTTP.Response {
            try call("POST", "/v1/push/notifications", key: testKey,
                     json: "{\"app_id\":\"\(appID)\",\"user_ids\":[\"user_1042\"]\(extra)}", headers: headers)
        }
        try expect("data not an object", status: 400, code: "INVALID_REQUEST", field: "data") { try send(",\"data\":[1]") }
        try expect("priority", status: 422, code: "VALIDATION_ERROR", field: "priority") { try send(",\"priority\":\"urgent\"") }
        try expect("send_at without offset", status: 422, code: "VALIDATION_ERROR", field: "send_at") {
            try send(",\"send_at\":\"2026-01-01T00:00:00\"")
        }
        for text in ["2027-02-30T00:00:00Z", "2027-01-10T24:00:00Z", "2027-01-10T10:00:00+25:00"] {
            try expect("send_at \(text), a time the calendar does not have", status: 422, code: "VALIDATION_ERROR", field: "send_at") {
                try send(",\"send_at\":\"\(text)\"")
            }
        }
        try expect("device id", status: 422, code: "VALIDATION_ERROR", field: "device_ids") { try send(",\"device_ids\":[\"x\"]") }
        try expect("device_ids without user_ids", status: 422, code: "VALIDATION_ERROR", field: "user_ids") {
            try call("POST", "/v1/push/notifications", key: testKey,
                     json: "{\"app_id\":\"\(appID)\",\"device_ids\":[\"pdev_00000000000040008000000000000002\"],\"title\":\"t\"}")
        }
        try expect("no user", status: 422, code: "VALIDATION_ERROR", field: "user_ids") {
            try call("POST", "/v1/push/notifications", key: testKey, json: "{\"app_id\":\"\(appID)\",\"user_ids\":[]}")
        }
        // Length is the acceptance rule (1 to 255, 422, the CLI's too); the character set is the
        // header's (400, below); both name the header.
        try expect("idempotency key too long", status: 422, code: "VALIDATION_ERROR", field: "Idempotency-Key") {
            try send("", headers: [("Idempotency-Key", String(repeating: "k", count: 256))])
        }
        try expect("empty idempotency key", status: 422, code: "VALIDATION_ERROR", field: "Idempotency-Key") {
            try send("", headers: [("Idempotency-Key", "")])
        }
        // An Idempotency-Key that is not UTF-8 would be read with U+FFFD in place of its bytes, so
        // two different keys (FF FE, FE FF) would name one notification: refused, naming the header.
        for bytes: [UInt8] in [[0xff, 0xfe], [0xfe, 0xff]] {
            try expect("Idempotency-Key \(bytes) not UTF-8", status: 400, code: "INVALID_REQUEST", field: "Idempotency-Key") {
                let body = Array("{\"app_id\":\"\(appID)\",\"user_ids\":[\"user_1042\"]}".utf8)
                let head = Array("POST /v1/push/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testKey)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nIdempotency-Key: k".utf8)
                let c = try RawHTTP(port: port)
                try c.send(head + bytes + Array("\r\n\r\n".utf8) + body)
                return try c.readResponse()
            }
        }
        for key in ["a b", "a\tb", "été"] {
            try expect("Idempotency-Key \(key) not visible ASCII", status: 400, code: "INVALID_REQUEST", field: "Idempotency-Key") {
                try send("", headers: [("Idempotency-Key", key)])
            }
        }
        try expect("query value not UTF-8", status: 400, code: "INVALID_REQUEST", field: "user_id") {
            try call("GET", "/v1/push/devices?user_id=%ff%fe", key: testKey)
        }
        // R-SEND-7 at acceptance: the exact rule, with bytes_to_cut in the error object (R-API-5).
        let before = try fingerprint()
        let big = try send(",\"title\":\"t\",\"body\":\"\(String(repeating: "z", count: 4_090))\"")
        XCTAssertEqual(big.status, 422, big.text)
        XCTAssertEqual(big.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        let cut = try XCTUnwrap((big.json["error"] as? [String: Any])?["bytes_to_cut"] as? Int, big.text)
        XCTAssertGreaterThan(cut, 0)
        XCTAssertEqual(try fingerprint(), before)
        // Cutting exactly that many bytes fits.
        let fits = try send(",\"title\":\"t\",\"body\":\"\(String(repeating: "z", count: 4_090 - cut))\"")
        XCTAssertEqual(fits.status, 201, fits.text)
    }

    /// Refusals read as sentences (fresh-user trial): indexes count from 1 with the total
    /// ("element 2 of 2", not "element 1 (from 0)"), the idempotency key is named in words rather
    /// than as `idempotency_key:` beside the header's name, and `device_ids` without `user_ids`
    /// says that it narrows the users of `user_ids` (R-SEND-1) instead of only "user_ids is required".
    func testRefusalMessagesNameIndexesFromOneAndSayWhatDeviceIDsNeeds() throws {
        func message(_ json: String, headers: [(String, String)] = []) throws -> String {
            let r = try call("POST", "/v1/push/notifications", key: testKey, json: "{\"app_id\":\"\(appID)\",\(json)}", headers: headers)
            XCTAssertEqual(r.status, 422, r.text)
            return ((r.json["error"] as? [String: Any])?["message"] as? String) ?? r.text
        }
        XCTAssertEqual(try message("\"user_ids\":[\"u\",\"\"],\"title\":\"t\""),
                       "user_ids: element 2 of 2 is not a user id of 1 to 255 characters without NUL")
        XCTAssertEqual(try message("\"user_ids\":[\"u\"],\"title_loc_key\":\"k\",\"title_loc_args\":[\"\(String(repeating: "a", count: 1025))\"]"),
                       "title_loc_args: element 1 of 1 is not a string of at most 1024 bytes without NUL")
        XCTAssertEqual(try message("\"user_ids\":[\"u\"],\"data\":{\"a\":\"1\",\"gcm.x\":\"2\"}"),
                       "data: key 2 of 2 is reserved (hk, from, message_type, google.*, gcm.*)")
        XCTAssertEqual(try message("\"user_ids\":[\"u\"],\"title\":\"t\"", headers: [("Idempotency-Key", String(repeating: "k", count: 256))]),
                       "the idempotency key must be 1 to 255 characters, without NUL")
        for body in ["\"device_ids\":[\"pdev_00000000000040008000000000000002\"],\"title\":\"t\"",
                     "\"user_ids\":[],\"device_ids\":[\"pdev_00000000000040008000000000000002\"],\"title\":\"t\""] {
            XCTAssertEqual(try message(body), "user_ids: required with device_ids, which narrows the users of user_ids to some of their devices (it addresses no device alone)", body)
        }
    }
}
