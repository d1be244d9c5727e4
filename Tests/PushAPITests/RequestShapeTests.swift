import Foundation
@testable import PushAPI
import XCTest
import PushCore

/// A body on a route that takes none, and a query argument on a route that takes none, are
/// refused on every route the same way (`RequestShape`), before any lookup: the GET-by-id routes
/// used to answer 200 to `{"x":1}`, `?bogus=1` or `?token=...`. On the preview fetch the refusal
/// is the same whatever the token and the notification (R-IDS-3: it tells nothing about either).
final class RequestShapeTests: APITestCase {
    private func notificationID() throws -> String {
        try register(token: "shape_dev", user: "shape_user")
        let r = try call("POST", "/v1/push/notifications", key: testKey,
                         json: "{\"app_id\":\"\(appID)\",\"user_ids\":[\"shape_user\"],\"title\":\"t\"}")
        XCTAssertTrue([200, 201, 202].contains(r.status), r.text)
        return try XCTUnwrap(r.json["id"] as? String)
    }

    func testEveryRouteRefusesABodyOrAQueryItDoesNotTake() throws {
        let notification = try notificationID()
        let device = try register(token: "shape_dev2", user: "shape_user2")
        let byID = ["/v1/push/notifications/\(notification)", "/v1/push/apps/\(appID)", "/v1/push/devices/\(device)"]
        for path in byID {
            XCTAssertEqual(try call("GET", path, key: testKey).status, 200, path)
            let body = try call("GET", path, key: testKey, json: "{\"x\":1}")
            XCTAssertEqual(body.status, 400, "\(path) with a body: \(body.text)")
            XCTAssertEqual(body.errorCode, "INVALID_REQUEST", body.text)
            XCTAssertTrue(body.text.contains("takes no body"), body.text)
            for query in ["bogus=1", "token=abc"] {
                let r = try call("GET", "\(path)?\(query)", key: testKey)
                XCTAssertEqual(r.status, 422, "\(path)?\(query): \(r.text)")
                XCTAssertEqual(r.errorField, String(query.prefix { $0 != "=" }), r.text)
            }
        }
        // A DELETE with a body or an unknown argument does nothing.
        let before = try fingerprint()
        XCTAssertEqual(try call("DELETE", "/v1/push/devices/\(device)", key: testKey, json: "{}").status, 400)
        XCTAssertEqual(try call("DELETE", "/v1/push/devices/\(device)?bogus=1", key: testKey).status, 422)
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(notification)/cancel?bogus=1", key: testKey).status, 422)
        XCTAssertEqual(try fingerprint(), before, "a refused request wrote something")
        // The list routes keep their own arguments, and refuse a body the same way.
        XCTAssertEqual(try call("GET", "/v1/push/devices?limit=1", key: testKey).status, 200)
        XCTAssertEqual(try call("GET", "/v1/push/devices", key: testKey, json: "{}").status, 400)
        XCTAssertEqual(try call("GET", "/v1/push/devices?bogus=1", key: testKey).errorField, "bogus")
        // Before any credential: the same answer with no key or a wrong one.
        XCTAssertEqual(try call("GET", "\(byID[0])?bogus=1", key: nil).status, 422)
    }

    /// The preview fetch: the same refusal for any token and any notification id, so it says
    /// nothing of either; without the extra parts, the same 404 as every refusal of a fetch.
    func testThePreviewFetchRefusesABodyOrAQueryBeforeAnyLookup() throws {
        let notification = try notificationID()
        var answers: [String] = []
        for (id, token) in [(notification, "ptok_wrong"), ("pnot_junk", ""), (notification, "x")] {
            let path = "/v1/push/previews/\(id)"
            let plain = try call("GET", path, key: nil, headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(plain.status, 404, plain.text)
            let query = try call("GET", "\(path)?token=\(token)", key: nil, headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(query.status, 422, query.text)
            let body = try call("GET", path, key: nil, json: "{\"token\":\"\(token)\"}", headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(body.status, 400, body.text)
            answers.append(query.text + body.text)
        }
        XCTAssertEqual(Set(answers).count, 1, "the refusals depend on neither token nor notification: \(answers)")
    }

    /// The four places that refuse an unknown query argument (`RequestShape` for the routes that take
    /// none, the lists' reader, usage, user erasure) give one answer, `APIError.unknownQueryArgument`:
    /// 422 `VALIDATION_ERROR` "unknown query argument NAME" with the field NAME, a long name cut to
    /// its first 64 characters in both.
    func testAnUnknownQueryArgumentIsOneRefusalOnEveryRoute() throws {
        let long = String(repeating: "q", count: 70)
        let expected = APIError.unknownQueryArgument(long)
        XCTAssertEqual(expected.status, 422)
        XCTAssertEqual(expected.code, "VALIDATION_ERROR")
        XCTAssertEqual(expected.message, "unknown query argument " + String(repeating: "q", count: 64))
        XCTAssertEqual(expected.field, String(repeating: "q", count: 64))
        let routes = [("GET", "/v1/push/apps/\(appID)?\(long)=1"), ("GET", "/v1/push/devices?\(long)=1"),
                      ("GET", "/v1/push/usage?\(long)=1"), ("DELETE", "/v1/push/users/u1?\(long)=1&app_id=\(appID)")]
        for (method, path) in routes {
            let r = try call(method, path, key: testKey)
            XCTAssertEqual(r.status, expected.status, "\(method) \(path): \(r.text)")
            XCTAssertEqual(r.errorCode, expected.code, r.text)
            XCTAssertEqual((r.json["error"] as? [String: Any])?["message"] as? String, expected.message, r.text)
            XCTAssertEqual(r.errorField, expected.field, r.text)
        }
    }
}
