import Foundation
import XCTest
import PushCore
@testable import PushStore

/// `/v1/push/webhook_endpoints` (issue 19 over the API of issue 14): create (the secret answered
/// once, and it is the one stored sealed), list, get, update, delete, rotate; the key's mode is the
/// endpoint's (R-MODE-1); bad input is refused naming the field, with nothing written.
final class WebhookEndpointRoutesTests: APITestCase {
    static let path = "/v1/push/webhook_endpoints"

    func create(_ json: String? = nil, key: String? = nil) throws -> [String: Any] {
        let r = try call("POST", Self.path, key: key ?? testKey,
                         json: json ?? #"{"app_id":"\#(appID)","url":"https://hooks.example.com/acme"}"#)
        XCTAssertEqual(r.status, 201, r.text)
        return r.json
    }

    /// The stored secret of an endpoint, opened with the server's operator key.
    func storedSecret(_ id: UUID) throws -> [UInt8] {
        let sealed = try conn.exec("SELECT secret_sealed FROM push_webhook_endpoints WHERE id = $1::uuid", [.uuid(id)]).bytes(0, 0)
        return try WebhookEndpointStore.open(sealed, endpointID: id, keys: webhookKeys)
    }

    func testCreateAnswersTheSecretOnceAndTheOtherRoutesManageTheEndpoint() throws {
        let made = try create(#"{"app_id":"\#(appID)","url":"https://hooks.example.com/acme","event_types":["push_notification.finished","push_device.deactivated"]}"#)
        let id = try XCTUnwrap(made["id"] as? String)
        let uuid = try XCTUnwrap(PrefixedID.parse(id, as: .webhookEndpoint), id)
        XCTAssertEqual(made["object"] as? String, "push_webhook_endpoint")
        XCTAssertEqual(made["app_id"] as? String, appID)
        XCTAssertEqual(made["mode"] as? String, "test", "the key's mode (R-MODE-1)")
        XCTAssertEqual(made["event_types"] as? [String], ["push_device.deactivated", "push_notification.finished"])
        XCTAssertEqual(made["enabled"] as? Bool, true)
        XCTAssertEqual(made["pending"] as? Int, 0)
        let secret = try WebhookSecret(text: try XCTUnwrap(made["secret"] as? String))
        XCTAssertEqual(try storedSecret(uuid), secret.key, "the secret answered is the one that signs")
        let sealed = try conn.exec("SELECT secret_sealed FROM push_webhook_endpoints WHERE id = $1::uuid", [.uuid(uuid)]).bytes(0, 0)
        XCTAssertFalse((0...(sealed.count - secret.key.count)).contains { Array(sealed[$0..<($0 + secret.key.count)]) == secret.key },
                       "stored sealed, not as is")

        let shown = try call("GET", "\(Self.path)/\(id)", key: testKey)
        XCTAssertEqual(shown.status, 200, shown.text)
        XCTAssertNil(shown.json["secret"], "shown once")
        XCTAssertEqual(shown.json["url"] as? String, "https://hooks.example.com/acme")
        XCTAssertEqual(shown.json["id"] as? String, id)

        let listed = try call("GET", "\(Self.path)?app_id=\(appID)", key: testKey)
        XCTAssertEqual(listed.status, 200, listed.text)
        let rows = try XCTUnwrap(listed.json["data"] as? [[String: Any]])
        XCTAssertEqual(rows.first?["id"] as? String, id, "newest first")
        XCTAssertTrue(rows.allSatisfy { $0["mode"] as? String == "test" && $0["secret"] == nil }, listed.text)
        let live = try call("GET", "\(Self.path)?app_id=\(appID)", key: liveKey)
        XCTAssertFalse(((live.json["data"] as? [[String: Any]]) ?? []).contains { $0["id"] as? String == id },
                       "a live key sees live endpoints only")
        XCTAssertEqual(try call("GET", "\(Self.path)/\(id)", key: liveKey).status, 404)

        let disabled = try call("PATCH", "\(Self.path)/\(id)", key: testKey, json: #"{"enabled":false}"#)
        XCTAssertEqual(disabled.json["enabled"] as? Bool, false, disabled.text)
        XCTAssertEqual(disabled.json["disabled_reason"] as? String, "MANUAL")
        let changed = try call("PATCH", "\(Self.path)/\(id)", key: testKey,
                               json: #"{"url":"https://hooks.example.com/v2","event_types":[],"enabled":true}"#)
        XCTAssertEqual(changed.status, 200, changed.text)
        XCTAssertEqual(changed.json["url"] as? String, "https://hooks.example.com/v2")
        XCTAssertEqual(changed.json["event_types"] as? [String], WebhookEventType.defaultSubscription.map(\.rawValue),
                       "an empty list is the default set")
        XCTAssertEqual(changed.json["enabled"] as? Bool, true)
        XCTAssertTrue(changed.json["disabled_reason"] is NSNull, changed.text)

        let rotated = try call("POST", "\(Self.path)/\(id)/rotate_secret", key: testKey)
        XCTAssertEqual(rotated.status, 200, rotated.text)
        let next = try WebhookSecret(text: try XCTUnwrap(rotated.json["secret"] as? String))
        XCTAssertNotEqual(next, secret)
        XCTAssertEqual(try storedSecret(uuid), next.key)
        XCTAssertNotNil(rotated.json["previous_secret_expires_at"] as? String, "the previous one signs for 24 h")
        XCTAssertEqual(try call("POST", "\(Self.path)/\(id)/rotate_secret", key: testKey, json: #"{"x":1}"#).errorField, "x",
                       "rotate takes no members")

        let deleted = try call("DELETE", "\(Self.path)/\(id)", key: testKey)
        XCTAssertEqual(deleted.status, 200, deleted.text)
        XCTAssertEqual(deleted.json["deleted"] as? Bool, true)
        XCTAssertEqual(try call("GET", "\(Self.path)/\(id)", key: testKey).status, 404)
        XCTAssertEqual(try count("push_webhook_endpoints", "id = '\(uuid.uuidString)'"), 0)
    }

    func testTheListIsNewestFirstInPages() throws {
        let ids = try (1...3).map { n in
            try XCTUnwrap(try create(#"{"app_id":"\#(appID)","url":"https://hooks.example.com/\#(n)"}"#)["id"] as? String)
        }
        let first = try call("GET", "\(Self.path)?app_id=\(appID)&limit=2", key: testKey)
        XCTAssertEqual((first.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [ids[2], ids[1]], first.text)
        XCTAssertEqual(first.json["has_more"] as? Bool, true)
        let rest = try call("GET", "\(Self.path)?app_id=\(appID)&limit=2&starting_after=\(ids[1])", key: testKey)
        let restIDs = (rest.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
        XCTAssertEqual(restIDs.first, ids[0], rest.text)
        XCTAssertEqual(restIDs.count, 2, "and the fixture's test endpoint, made first")
        XCTAssertEqual(rest.json["has_more"] as? Bool, false)
        let unknown = try call("GET", "\(Self.path)?app_id=\(appID)&starting_after=\(PrefixedID.format(.webhookEndpoint, UUID()))",
                               key: testKey)
        XCTAssertEqual(unknown.status, 404)
        XCTAssertEqual(unknown.errorField, "starting_after")
    }

    func testBadInputIsRefusedNamingTheFieldAndNothingIsWritten() throws {
        let id = try XCTUnwrap(try create()["id"] as? String)
        let cases: [(String, String, String?, Int, String?)] = [
            ("POST", Self.path, #"{"app_id":"\#(appID)","url":"http://hooks.example.com/x"}"#, 422, "url"),
            ("POST", Self.path, #"{"app_id":"\#(appID)","url":"https://127.0.0.1/x"}"#, 422, "url"),
            ("POST", Self.path, #"{"app_id":"\#(appID)","url":"https://hooks.example.com/x","event_types":["nope"]}"#, 422, "event_types"),
            ("POST", Self.path, #"{"app_id":"\#(appID)","url":"https://hooks.example.com/x","event_types":"push_device.deactivated"}"#, 400, "event_types"),
            ("POST", Self.path, #"{"app_id":"\#(appID)"}"#, 422, "url"),
            ("POST", Self.path, #"{"url":"https://hooks.example.com/x"}"#, 422, "app_id"),
            ("POST", Self.path, #"{"app_id":"\#(appID)","url":"https://hooks.example.com/x","mode":"live"}"#, 422, "mode"),
            ("POST", Self.path, #"{"app_id":"\#(appID)","url":"https://hooks.example.com/x","enabled":false}"#, 422, "enabled"),
            ("POST", Self.path, #"{"app_id":"papp_nothex","url":"https://hooks.example.com/x"}"#, 404, "app_id"),
            ("PATCH", "\(Self.path)/\(id)", #"{"app_id":"\#(appID)"}"#, 422, "app_id"),
            ("PATCH", "\(Self.path)/\(id)", #"{"url":"ftp://hooks.example.com/x"}"#, 422, "url"),
            ("PATCH", "\(Self.path)/\(id)", #"{"enabled":"no"}"#, 400, "enabled"),
            ("GET", Self.path, nil, 422, "app_id"),
            ("GET", "\(Self.path)/pwh_0", nil, 404, nil),
            ("GET", "\(Self.path)/\(PrefixedID.format(.app, app))", nil, 404, nil),
        ]
        for (method, path, body, status, field) in cases {
            let before = try fingerprint()
            let r = try call(method, path, key: testKey, json: body)
            XCTAssertEqual(r.status, status, "\(method) \(path) \(body ?? ""): \(r.text)")
            XCTAssertEqual(r.errorField, field, "\(method) \(path) \(body ?? "")")
            XCTAssertEqual(try fingerprint(), before, "\(method) \(path) \(body ?? "") wrote something")
        }
        let unknownType = try call("POST", Self.path, key: testKey,
                                   json: #"{"app_id":"\#(appID)","url":"https://hooks.example.com/x","event_types":["nope"]}"#)
        XCTAssertTrue((unknownType.json["error"] as? [String: Any])?["message"].map { "\($0)" }?.hasPrefix("event_types:") ?? false,
                      unknownType.text)
    }

    func testWithoutAnOperatorKeyCreatingAndRotatingAre503AndTheRestServes() throws {
        let id = try XCTUnwrap(try create()["id"] as? String)
        let keyless = try startServer { $0.webhooks.keys = nil }
        extraServers.append(keyless)
        let before = try fingerprint()
        let made = try call("POST", Self.path, key: testKey, json: #"{"app_id":"\#(appID)","url":"https://hooks.example.com/x"}"#,
                            on: keyless.api.port)
        XCTAssertEqual(made.status, 503, made.text)
        XCTAssertEqual(made.errorCode, "SERVICE_UNAVAILABLE")
        XCTAssertNil(made.headers["retry-after"], "a missing operator key is permanent until the operator sets it: no Retry-After")
        // The body is judged first: a bad URL or event type is the caller's 422 on any server.
        for (body, field) in [(#"{"app_id":"\#(appID)","url":"https://10.0.0.1/x"}"#, "url"),
                              (#"{"app_id":"\#(appID)","url":"https://hooks.example.com/x","event_types":["nope"]}"#, "event_types")] {
            let bad = try call("POST", Self.path, key: testKey, json: body, on: keyless.api.port)
            XCTAssertEqual(bad.status, 422, bad.text)
            XCTAssertEqual(bad.errorField, field, bad.text)
        }
        let rotated = try call("POST", "\(Self.path)/\(id)/rotate_secret", key: testKey, on: keyless.api.port)
        XCTAssertEqual(rotated.status, 503, rotated.text)
        XCTAssertNil(rotated.headers["retry-after"])
        XCTAssertEqual(try fingerprint(), before)
        XCTAssertEqual(try call("GET", "\(Self.path)/\(id)", key: testKey, on: keyless.api.port).status, 200)
    }
}
