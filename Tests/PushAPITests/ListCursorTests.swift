import Foundation
import XCTest
import PushCore
import PushStore

/// `starting_after` must name a row of the list it continues: a device or notification of another
/// app of the same account (with `app_id` filtering on this one), or of the other mode, answers
/// the same 404 as an unknown id, not an empty page that reads as "end of list".
final class ListCursorTests: APITestCase {
    func testCursorOfAnotherAppOrModeIsNotFound() throws {
        let second = PrefixedID.format(.app, try AppStore(connection: conn).appCreate(name: "second app", accountID: account.id).id)
        let here = try register(token: "cursor_a")
        let there = try call("PUT", "/v1/push/devices", key: testKey, json: deviceJSON(token: "cursor_b", app: second))
        XCTAssertEqual(there.status, 200, there.text)
        let live = try call("PUT", "/v1/push/devices", key: liveKey, json: deviceJSON(token: "cursor_live"))
        XCTAssertEqual(live.status, 200, live.text)
        let unknown = try call("GET", "/v1/push/devices?app_id=\(second)&starting_after=\(PrefixedID.format(.device, UUID()))", key: testKey)
        XCTAssertEqual(unknown.status, 404, unknown.text)
        for (label, cursor) in [("device of another app", here), ("device of the other mode", try XCTUnwrap(live.json["id"] as? String))] {
            let r = try call("GET", "/v1/push/devices?app_id=\(second)&starting_after=\(cursor)", key: testKey)
            XCTAssertEqual(r.status, 404, "\(label): \(r.text)")
            XCTAssertEqual(r.errorField, "starting_after", label)
            XCTAssertEqual(r.text, unknown.text, "\(label): the same answer as an unknown id")
        }
        // Without the app filter the list spans the account's apps: the cursor is a row of it.
        let all = try call("GET", "/v1/push/devices?starting_after=\(try XCTUnwrap(there.json["id"] as? String))", key: testKey)
        XCTAssertEqual(all.status, 200, all.text)
        XCTAssertEqual((all.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [here])

        let sent = try call("POST", "/v1/push/notifications", key: testKey, json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"t"}"#)
        XCTAssertEqual(sent.status, 201, sent.text)
        let nid = try XCTUnwrap(sent.json["id"] as? String)
        let unknownN = try call("GET", "/v1/push/notifications?app_id=\(second)&starting_after=\(PrefixedID.format(.notification, UUID()))", key: testKey)
        XCTAssertEqual(unknownN.status, 404, unknownN.text)
        let otherApp = try call("GET", "/v1/push/notifications?app_id=\(second)&starting_after=\(nid)", key: testKey)
        XCTAssertEqual(otherApp.status, 404, otherApp.text)
        XCTAssertEqual(otherApp.text, unknownN.text)
        XCTAssertEqual(try call("GET", "/v1/push/notifications?app_id=\(appID)&starting_after=\(nid)", key: testKey).status, 200)
    }
}
