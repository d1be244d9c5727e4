import Foundation
import XCTest
import PushCore
import PushStore

/// The kinds of push (issue 21) through the API's bodies: each field of R-KIND-1..3 on
/// `POST /v1/push/notifications` reaches the stored notification as the acceptance service takes
/// it, each refusal names its field with nothing written, and the placeholder loc keys are set,
/// shown and removed through `POST`/`PATCH /v1/push/apps`.
final class PushKindBodyTests: APITestCase {
    func send(_ members: String) throws -> RawHTTP.Response {
        try call("POST", "/v1/push/notifications", key: testKey,
                 json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"send_at":"\#(APITestCase.inADay)",\#(members)}"#)
    }

    func stored(_ r: RawHTTP.Response) throws -> PGResult {
        let id = try XCTUnwrap(PrefixedID.parse(try XCTUnwrap(r.json["id"] as? String), as: .notification), r.text)
        return try conn.exec("""
            SELECT push_type, interruption_level, relevance_score, category, target_content_id, critical_sound_name,
                   critical_sound_volume, title_loc_key, array_to_string(title_loc_args, '|') AS title_loc_args, body_loc_key,
                   array_to_string(body_loc_args, '|') AS body_loc_args, channel_id, title
              FROM push_notifications WHERE id = $1::uuid
            """, [.uuid(id)])
    }

    func testEveryKindFieldReachesTheStoredNotification() throws {
        try register(token: "kind_phone")
        let r = try send(#"""
            "title":"Alarm","interruption_level":"critical","relevance_score":0.25,"category":"ALARM",
            "target_content_id":"room-7","critical_sound":{"name":"alarm.caf","volume":0.5},
            "title_loc_key":"ALARM_TITLE","title_loc_args":["Bob","7"],"body_loc_key":"ALARM_BODY","body_loc_args":["now"],
            "channel_id":"alarms"
            """#)
        XCTAssertEqual(r.status, 201, r.text)
        let row = try stored(r)
        XCTAssertEqual(try row.string(0, "push_type"), "alert")
        XCTAssertEqual(try row.string(0, "interruption_level"), "critical")
        XCTAssertEqual(try row.decode(0, "relevance_score") as Double?, 0.25)
        XCTAssertEqual(try row.string(0, "category"), "ALARM")
        XCTAssertEqual(try row.string(0, "target_content_id"), "room-7")
        XCTAssertEqual(try row.string(0, "critical_sound_name"), "alarm.caf")
        XCTAssertEqual(try row.decode(0, "critical_sound_volume") as Double?, 0.5)
        XCTAssertEqual(try row.string(0, "title_loc_key"), "ALARM_TITLE")
        XCTAssertEqual(try row.string(0, "title_loc_args"), "Bob|7")
        XCTAssertEqual(try row.string(0, "body_loc_key"), "ALARM_BODY")
        XCTAssertEqual(try row.string(0, "body_loc_args"), "now")
        XCTAssertEqual(try row.string(0, "channel_id"), "alarms")

        let silent = try send(#""push_type":"background","data":{"sync":"1"},"collapse_key":"sync""#)
        XCTAssertEqual(silent.status, 201, silent.text)
        XCTAssertEqual(try stored(silent).string(0, "push_type"), "background")
        XCTAssertTrue(try stored(silent).decode(0, "title") as String? == nil)
    }

    func testKindRefusalsNameTheFieldAndWriteNothing() throws {
        try register(token: "kind_phone")
        let cases: [(String, Int, String)] = [
            (#""push_type":"silent""#, 422, "push_type"),
            (#""push_type":"background","title":"Hi""#, 422, "title"),
            (#""title":"x","interruption_level":"urgent""#, 422, "interruption_level"),
            (#""title":"x","relevance_score":1.5"#, 422, "relevance_score"),
            (#""title":"x","relevance_score":0.12345"#, 422, "relevance_score"),
            (#""title":"x","relevance_score":1e999"#, 422, "relevance_score"),
            (#""title":"x","relevance_score":"high""#, 400, "relevance_score"),
            (#""title":"x","category":"""#, 422, "category"),
            (#""title":"x","interruption_level":"critical","critical_sound":{"volume":0.5}"#, 422, "critical_sound.name"),
            (#""title":"x","interruption_level":"critical","critical_sound":{"name":"a","loud":true}"#, 422, "critical_sound.loud"),
            (#""title":"x","interruption_level":"critical","critical_sound":{"name":"a","volume":"max"}"#, 400, "critical_sound.volume"),
            (#""title":"x","interruption_level":"critical","critical_sound":"alarm.caf""#, 400, "critical_sound"),
            (#""title":"x","critical_sound":{"name":"a"}"#, 422, "critical_sound"),
            (#""title":"x","title_loc_args":["a"]"#, 422, "title_loc_args"),
            (#""title":"x","body_loc_key":"B","body_loc_args":[1]"#, 400, "body_loc_args"),
            (#""title":"x","channel_id":"""#, 422, "channel_id"),
        ]
        for (members, status, field) in cases {
            let before = try fingerprint()
            let r = try send(members)
            XCTAssertEqual(r.status, status, "\(members): \(r.text)")
            XCTAssertEqual(r.errorField, field, members)
            XCTAssertEqual(try fingerprint(), before, "\(members) wrote something")
        }
    }

    func testPlaceholderLocKeysAreSetShownAndRemoved() throws {
        let made = try call("POST", "/v1/push/apps", key: testKey,
                            json: #"{"name":"loc","require_encryption":true,"placeholder_title_loc_key":"PUSH_TITLE"}"#)
        XCTAssertEqual(made.status, 201, made.text)
        XCTAssertEqual(made.json["placeholder_title_loc_key"] as? String, "PUSH_TITLE")
        XCTAssertTrue(made.json["placeholder_body_loc_key"] is NSNull, made.text)
        let id = try XCTUnwrap(made.json["id"] as? String)
        let uuid = try XCTUnwrap(PrefixedID.parse(id, as: .app))
        XCTAssertEqual(try AppStore(connection: conn).appGet(id: uuid)?.placeholderTitleLocKey, "PUSH_TITLE")

        let both = try call("PATCH", "/v1/push/apps/\(id)", key: testKey, json: #"{"placeholder_body_loc_key":"PUSH_BODY"}"#)
        XCTAssertEqual(both.json["placeholder_title_loc_key"] as? String, "PUSH_TITLE", "kept when absent")
        XCTAssertEqual(both.json["placeholder_body_loc_key"] as? String, "PUSH_BODY", both.text)
        let shown = try call("GET", "/v1/push/apps/\(id)", key: testKey)
        XCTAssertEqual(shown.json["placeholder_body_loc_key"] as? String, "PUSH_BODY", shown.text)
        let listed = try call("GET", "/v1/push/apps", key: testKey)
        let row = (listed.json["data"] as? [[String: Any]])?.first { $0["id"] as? String == id }
        XCTAssertEqual(row?["placeholder_title_loc_key"] as? String, "PUSH_TITLE", listed.text)

        let removed = try call("PATCH", "/v1/push/apps/\(id)", key: testKey, json: #"{"placeholder_title_loc_key":""}"#)
        XCTAssertTrue(removed.json["placeholder_title_loc_key"] is NSNull, removed.text)
        XCTAssertNil(try AppStore(connection: conn).appGet(id: uuid)?.placeholderTitleLocKey)

        let before = try fingerprint()
        let long = String(repeating: "K", count: 97)
        let refused = try call("PATCH", "/v1/push/apps/\(id)", key: testKey, json: #"{"placeholder_body_loc_key":"\#(long)"}"#)
        XCTAssertEqual(refused.status, 422, refused.text)
        XCTAssertEqual(refused.errorField, "placeholder_body_loc_key")
        let typed = try call("POST", "/v1/push/apps", key: testKey, json: #"{"name":"n","placeholder_title_loc_key":7}"#)
        XCTAssertEqual(typed.status, 400, typed.text)
        XCTAssertEqual(typed.errorField, "placeholder_title_loc_key")
        XCTAssertEqual(try fingerprint(), before)
    }
}
