import Foundation
import XCTest
import PushTestSupport
@testable import PushAPI
import PushCore
@testable import PushStore

/// What the API's answers and its OpenAPI document promise, beside the routes: times written by
/// PushCore's one RFC 3339 writer, and the SMS phone's pattern equal to the acceptance rule.
final class APIShapeTests: XCTestCase {
    /// Answers write times with `RFC3339.utcMilliseconds` (rounded to PostgreSQL's microsecond
    /// first): 1764547200.123 is the double just below .123, which a plain truncation to
    /// milliseconds (the log's writer) gives as .122.
    func testAnswerTimesAreRFC3339MillisecondsOfTheStoredMicrosecond() {
        let stored = Date(timeIntervalSince1970: 1_764_547_200.123)
        XCTAssertEqual(ResponseBodies.time(stored), .string("2025-12-01T00:00:00.123Z"))
        XCTAssertEqual(ResponseBodies.time(nil), .null)
        let event = AuditEvent(id: UUID(), accountID: UUID(), appID: nil, actor: "cli:x", action: "api_key.created", target: nil,
                               details: "{}", createdAt: stored)
        guard case .object(let members) = APIBodies.auditEvent(event) else { return XCTFail("an object") }
        XCTAssertEqual(members["created_at"], JSONValue.string("2025-12-01T00:00:00.123Z"))
        XCTAssertEqual(RFC3339.parse("2025-12-01T01:00:00.123+01:00"), stored, "send_at is read back to the same instant")
    }

    /// docs/openapi.yaml's `sms_fallback.phone` pattern accepts exactly what acceptance does
    /// (`SMSText.isE164`, R-SMS-1), so a client validating against the document is never refused.
    func testTheOpenAPIPhonePatternIsTheAcceptanceRule() throws {
        let text = try String(contentsOf: RepoPaths.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        let start = try XCTUnwrap(lines.firstIndex { $0.hasSuffix("sms_fallback:") && $0.hasPrefix("        ") })
        let line = try XCTUnwrap(lines[start...].first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("phone:") })
        let quoted = try XCTUnwrap(line.range(of: #"pattern: "([^"]*)""#, options: .regularExpression), "phone has a pattern: \(line)")
        let pattern = String(line[quoted].dropFirst("pattern: \"".count).dropLast()).replacingOccurrences(of: "\\\\", with: "\\")
        let regex = try NSRegularExpression(pattern: pattern)
        let samples = ["+33612345678", "+12345678", "+1234567", "+123456789012345", "+1234567890123456", "+0123456789",
                       "33612345678", "+3361234567a", "+", "", "+33 612345678", "+\u{663}\u{663}\u{666}\u{661}\u{662}\u{663}\u{664}\u{665}\u{666}"]
        for phone in samples {
            let matched = regex.firstMatch(in: phone, range: NSRange(phone.startIndex..., in: phone)) != nil
            XCTAssertEqual(matched, SMSText.isE164(phone), "\(phone.debugDescription): pattern \(pattern)")
        }
    }
}
