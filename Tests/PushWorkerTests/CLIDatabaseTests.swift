import Foundation
import XCTest

/// The command line against a real database: an unknown notification is NOT_FOUND (not a
/// validation error), named as it was typed (lower case).
final class CLIDatabaseTests: PGWorkerTestCase {
    func testCancellingAnUnknownNotificationIsNotFound() throws {
        let id = UUID()
        let r = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["notifications", "cancel", id.uuidString.lowercased()],
                                       environment: ["DATABASE_URL": database.conninfo])
        XCTAssertEqual(r.status, 1, r.output)
        XCTAssertTrue(r.output.contains("NOT_FOUND: no notification \(id.uuidString.lowercased())"), r.output)
    }
}
