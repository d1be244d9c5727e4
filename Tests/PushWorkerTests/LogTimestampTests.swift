import Foundation
import XCTest
@testable import PushWorker

/// Log lines carry `ts` as RFC 3339 UTC with milliseconds. `Log.timestamp` writes it without ICU;
/// it must print what `ISO8601DateFormatter` (internet date-time, fractional seconds) prints.
final class LogTimestampTests: XCTestCase {
    func testTimestampMatchesFoundationsISO8601FormatterToTheMillisecond() {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 951_782_400),  // 2000-02-29
                     Date(timeIntervalSince1970: 1_798_761_599.999), Date(timeIntervalSince1970: 4_102_444_800)]
        for _ in 0..<2000 {
            // Whole milliseconds plus a little: the formatter and the writer must agree on the digits.
            let ms = Double(Int.random(in: 0...4_102_444_800_000))
            dates.append(Date(timeIntervalSince1970: ms / 1000 + 0.0001))
        }
        for d in dates {
            XCTAssertEqual(Log.timestamp(d), f.string(from: d), "\(d.timeIntervalSince1970)")
        }
        XCTAssertEqual(Log.timestamp(Date(timeIntervalSince1970: 1_796_000_003.6125)), "2026-11-30T00:53:23.612Z")
    }
}
