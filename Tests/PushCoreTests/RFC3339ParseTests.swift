import Foundation
import PushCore
import XCTest

/// `RFC3339.parse` (RFC 3339 section 5.6, for `send_at` and `--send-at`): every field checked
/// against the calendar and the clock. Foundation's ISO8601DateFormatter, used before, carried
/// invalid fields over (`2027-02-30` became March 2, `+25:00` became `+01:00`), so a notification
/// was scheduled for a time its sender never wrote.
final class RFC3339ParseTests: XCTestCase {
    private func instant(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

    func testValidInstants() {
        XCTAssertEqual(RFC3339.parse("1970-01-01T00:00:00Z"), instant(0))
        XCTAssertEqual(RFC3339.parse("2000-02-29T00:00:00.500Z"), instant(951_782_400.5), "leap day of a year divisible by 400")
        XCTAssertEqual(RFC3339.parse("2028-02-29T12:00:00Z"), instant(1_835_438_400), "leap day")
        XCTAssertEqual(RFC3339.parse("2025-12-01T01:00:00.123+01:00"), instant(1_764_547_200.123))
        XCTAssertEqual(RFC3339.parse("2025-12-01T00:00:00-05:30"), instant(1_764_547_200 + 19_800))
        XCTAssertEqual(RFC3339.parse("2026-12-31T23:59:59.999999Z"), instant(1_798_761_599.999999))
        XCTAssertEqual(RFC3339.parse("1969-12-31T23:59:59Z"), instant(-1), "before the epoch")
        XCTAssertEqual(RFC3339.parse("2025-11-29T12:00:00.1234567890Z"), instant(1_764_417_600.123456), "fraction cut to the microsecond")
        XCTAssertEqual(RFC3339.parse("2025-11-29T12:00:00+23:59"), instant(1_764_417_600 - 86_340), "the largest offset")
    }

    /// What the writer writes, the reader reads back to the same instant (to the millisecond).
    func testRoundTripWithTheWriter() {
        for seconds in [0.0, 951_782_400.5, 1_764_417_600.123, -86_400.25, 4_102_444_799.999] {
            let text = RFC3339.utcMilliseconds(instant(seconds))
            XCTAssertEqual(RFC3339.parse(text)?.timeIntervalSince1970 ?? .nan, seconds, accuracy: 0.0005, text)
        }
    }

    /// Fields the calendar or the clock does not have, each refused rather than carried over.
    func testInvalidFieldsAreRefused() {
        for text in ["2027-02-29T00:00:00Z", "2027-02-30T00:00:00Z", "2100-02-29T00:00:00Z", "2027-04-31T10:00:00Z",
                     "2027-06-31T10:00:00Z", "2027-09-31T10:00:00Z", "2027-11-31T10:00:00Z", "2027-01-32T00:00:00Z",
                     "2027-01-00T00:00:00Z", "2027-00-10T00:00:00Z", "2027-13-10T00:00:00Z",
                     "2027-01-10T24:00:00Z", "2027-01-10T23:60:00Z", "2027-01-10T23:59:60Z",
                     "2027-01-10T10:00:00+24:00", "2027-01-10T10:00:00+25:00", "2027-01-10T10:00:00+23:60",
                     "2027-01-10T10:00:00+99:99", "2027-01-10T10:00:00-24:00"] {
            XCTAssertNil(RFC3339.parse(text), text)
        }
    }

    /// Shapes that are not an RFC 3339 date-time.
    func testMalformedTextIsRefused() {
        for text in ["", "2027-01-10", "2027-01-10T10:00:00", "2027-01-10t10:00:00Z", "2027-01-10T10:00:00z",
                     "2027-01-10 10:00:00Z", "2027-01-10T10:00Z", "2027-1-10T10:00:00Z", "27-01-10T10:00:00Z",
                     "2027-01-10T10:00:00.Z", "2027-01-10T10:00:00+0100", "2027-01-10T10:00:00+01", "2027-01-10T10:00:00ZZ",
                     "2027-01-10T10:00:00+01:00 ", " 2027-01-10T10:00:00Z", "+2027-01-10T10:00:00Z", "２０２７-01-10T10:00:00Z",
                     "2027-01-10T10:00:00.\(String(repeating: "1", count: 30))Z", "2027-01-10T10:00:00\u{0}Z"] {
            XCTAssertNil(RFC3339.parse(text), text.debugDescription)
        }
    }
}
