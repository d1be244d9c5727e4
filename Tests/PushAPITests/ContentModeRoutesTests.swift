import Foundation
import XCTest
import PushCore
import PushStore

/// R-IDS-1 through the apps API: `content_mode` on `POST`/`PATCH /v1/push/apps` (the acceptance
/// service checks its value), shown by `GET` and lists; changing it needs a live key (R-API-2, as
/// for `require_encryption`: a test key cannot turn a live app's pushes from ids_only to sealed),
/// and each change is in the audit log (`app.content_mode_changed`, from and to);
/// and an `ids_only` app accepts content no sealed payload could carry.
final class ContentModeRoutesTests: APITestCase {
    func testContentModeIsSetShownAndChangedOnlyWithALiveKey() throws {
        let made = try call("POST", "/v1/push/apps", key: testKey, json: #"{"name":"ids","content_mode":"ids_only"}"#)
        XCTAssertEqual(made.status, 201, made.text)
        XCTAssertEqual(made.json["content_mode"] as? String, "ids_only")
        let id = try XCTUnwrap(made.json["id"] as? String)
        let uuid = try XCTUnwrap(PrefixedID.parse(id, as: .app))
        XCTAssertEqual(try AppStore(connection: conn).appGet(id: uuid)?.contentMode, .idsOnly)
        let plain = try call("POST", "/v1/push/apps", key: testKey, json: #"{"name":"default"}"#)
        XCTAssertEqual(plain.json["content_mode"] as? String, "sealed", "the default")

        let before = try fingerprint()
        let forbidden = try call("PATCH", "/v1/push/apps/\(id)", key: testKey, json: #"{"content_mode":"sealed"}"#)
        XCTAssertEqual(forbidden.status, 403, forbidden.text)
        XCTAssertEqual(forbidden.errorField, "content_mode")
        let bad = try call("PATCH", "/v1/push/apps/\(id)", key: liveKey, json: #"{"content_mode":"plaintext"}"#)
        XCTAssertEqual(bad.status, 422, bad.text)
        XCTAssertEqual(bad.errorField, "content_mode")
        let typed = try call("PATCH", "/v1/push/apps/\(id)", key: liveKey, json: #"{"content_mode":1}"#)
        XCTAssertEqual(typed.status, 400, typed.text)
        XCTAssertEqual(try fingerprint(), before, "refusals write nothing")
        let same = try call("PATCH", "/v1/push/apps/\(id)", key: testKey, json: #"{"content_mode":"ids_only","name":"ids2"}"#)
        XCTAssertEqual(same.status, 200, "restating the current mode is no change: \(same.text)")

        let changed = try call("PATCH", "/v1/push/apps/\(id)", key: liveKey, json: #"{"content_mode":"sealed"}"#)
        XCTAssertEqual(changed.status, 200, changed.text)
        XCTAssertEqual(changed.json["content_mode"] as? String, "sealed")
        // Audited like require_encryption: one event for the change, none for the restated value.
        let audit = try conn.exec("SELECT action, details->>'from' AS f, details->>'to' AS t FROM push_audit_events WHERE app_id = $1::uuid",
                                  [.uuid(uuid)])
        XCTAssertEqual(audit.rowCount, 1)
        XCTAssertEqual(try audit.string(0, "action"), "app.content_mode_changed")
        XCTAssertEqual(try audit.string(0, "f"), "ids_only")
        XCTAssertEqual(try audit.string(0, "t"), "sealed")
        XCTAssertEqual(try call("GET", "/v1/push/apps/\(id)", key: testKey).json["content_mode"] as? String, "sealed")
        let listed = try call("GET", "/v1/push/apps", key: testKey)
        let row = (listed.json["data"] as? [[String: Any]])?.first { $0["id"] as? String == id }
        XCTAssertEqual(row?["content_mode"] as? String, "sealed", listed.text)
    }

    /// R-IDS-1 with R-SEND-7: 5,000 bytes of body fit no sealed payload (refused with the bytes to
    /// cut) but an ids_only app's iOS payload never carries them: accepted, its keyless device of an
    /// app requiring encryption charged at acceptance.
    func testAnIDsOnlyAppAcceptsContentNoSealedPayloadCouldCarry() throws {
        let device = try register(token: "ids_phone")
        let body = String(repeating: "b", count: 5000)
        let notification = #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"t","body":"\#(body)"}"#
        let sealed = try call("POST", "/v1/push/notifications", key: testKey, json: notification)
        XCTAssertEqual(sealed.status, 422, sealed.text)
        XCTAssertEqual(sealed.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: liveKey,
                                json: #"{"content_mode":"ids_only","require_encryption":true}"#).status, 200)
        let accepted = try call("POST", "/v1/push/notifications", key: testKey, json: notification)
        XCTAssertEqual(accepted.status, 201, accepted.text)
        let n = try XCTUnwrap(PrefixedID.parse(try XCTUnwrap(accepted.json["id"] as? String), as: .notification))
        let d = try XCTUnwrap(PrefixedID.parse(device, as: .device))
        let charges = try conn.exec("SELECT count(*) AS n FROM push_ledger WHERE notification_id = $1::uuid AND device_id = $2::uuid AND kind = 'charge'",
                                    [.uuid(n), .uuid(d)])
        XCTAssertEqual(try charges.int(0, "n"), 1, "R-IDS-1: the keyless device is charged at acceptance")
        let shown = try call("GET", "/v1/push/notifications/\(try XCTUnwrap(accepted.json["id"] as? String))", key: testKey)
        XCTAssertTrue(shown.json["content_mode"] is NSNull, "read at the send time, not yet: \(shown.text)")
    }
}
