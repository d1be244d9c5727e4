import Foundation
import XCTest
@testable import PushWorker

/// A line's fields are built only when the line is written (`Log`'s autoclosure): a debug line on
/// the claim-to-record path costs nothing at info level, and a written line still has its fields.
final class LogFieldsTests: XCTestCase {
    private final class Lines: @unchecked Sendable {
        let lock = NSLock()
        var all: [String] = []
        func add(_ s: String) { lock.withLock { all.append(s) } }
    }

    func testFieldsOfALevelBelowTheMinimumAreNeverBuilt() {
        let lines = Lines()
        let log = Log(level: .info, sink: { lines.add($0) })
        var built = 0
        func fields() -> [String: Any] { built += 1; return ["job_id": 7] }
        log.debug("batch.record", fields())
        XCTAssertEqual(built, 0, "a debug line at info level builds nothing")
        XCTAssertTrue(lines.all.isEmpty)
        log.info("batch.record", fields())
        log.warn("batch.record", fields())
        XCTAssertEqual(built, 2, "written lines build their fields once each")
        XCTAssertEqual(lines.all.count, 2)
        XCTAssertTrue(lines.all.allSatisfy { $0.contains("\"job_id\":7") }, "\(lines.all)")
        log.minimum = .debug
        log.debug("batch.record", fields())
        XCTAssertEqual(built, 3)
        XCTAssertEqual(lines.all.count, 3)
    }
}
