import Foundation
import XCTest
import PushCore

/// Content rules at acceptance, through the API: an alert with nothing to show or carry is refused
/// (it would be charged per device for `{"aps":{}}`), and a fraction is taken only when its number
/// is exactly a decimal of at most four places (`1e-400` does not pass as 0).
final class ContentRulesTests: APITestCase {
    private func send(_ members: String) throws -> RawHTTP.Response {
        let extra = members.isEmpty ? "" : "," + members
        return try call("POST", "/v1/push/notifications", key: testKey,
                        json: #"{"app_id":"\#(appID)","user_ids":["user_1042"]\#(extra)}"#)
    }

    private func refused(_ members: String, field: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try fingerprint()
        let r = try send(members)
        XCTAssertEqual(r.status, 422, "\(members): \(r.text)", file: file, line: line)
        XCTAssertEqual(r.errorCode, "VALIDATION_ERROR", "\(members): \(r.text)", file: file, line: line)
        XCTAssertEqual(r.errorField, field, "\(members): \(r.text)", file: file, line: line)
        XCTAssertEqual(try fingerprint(), before, "\(members) wrote something", file: file, line: line)
    }

    func testAnAlertWithNothingToShowOrCarryIsRefused() throws {
        try register(token: "empty_alert")
        for members in ["", #""title":null"#, #""title":"","body":"""#, #""data":{}"#, #""push_type":"alert""#,
                        #""thread_id":"t","category":"C","channel_id":"ch","interruption_level":"passive""#,
                        #""relevance_score":0.5,"collapse_key":"ck","priority":"normal""#] {
            try refused(members, field: "title")
        }
        // Each of these is something to show or carry.
        for members in [#""title":"t""#, #""body":"b""#, #""badge":0"#, #""sound":"default""#, #""data":{"k":"v"}"#,
                        #""title_loc_key":"T""#, #""body_loc_key":"B""#,
                        #""interruption_level":"critical","critical_sound":{"name":"alarm.caf"}"#,
                        #""push_type":"background","data":{"k":"v"}"#, #""push_type":"background""#] {
            let r = try send(members)
            XCTAssertEqual(r.status, 201, "\(members): \(r.text)")
        }
    }

    func testFractionsAreExactDecimalsOfAtMostFourPlaces() throws {
        try register(token: "fraction_phone")
        for number in ["1e-400", "-1e-400", "1e400"] {
            let before = try fingerprint()
            let r = try send(#""title":"t","relevance_score":\#(number)"#)
            XCTAssertEqual(r.status, 422, "\(number): \(r.text)")
            XCTAssertEqual(r.errorField, "relevance_score", number)
            XCTAssertEqual(try fingerprint(), before)
        }
        for number in ["1e-11", "0.00005", "0.12345"] {
            try refused(#""title":"t","relevance_score":\#(number)"#, field: "relevance_score")
            try refused(#""title":"t","interruption_level":"critical","critical_sound":{"name":"a.caf","volume":\#(number)}"#,
                        field: "critical_sound.volume")
        }
        for number in ["0", "0e-400", "2.5e-1", "0.0001", "1"] {
            let r = try send(#""title":"t","relevance_score":\#(number)"#)
            XCTAssertEqual(r.status, 201, "\(number): \(r.text)")
        }
    }
}
