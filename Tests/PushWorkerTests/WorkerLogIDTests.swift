import Foundation
import PushCore
@testable import PushWorker
import XCTest

/// The worker's log lines name notifications as the API and the CLI show them, `pnot_` + 32 hex
/// digits (R-API-4, `PrefixedID.format`), so an operator can paste an id from a log line into
/// `pushfleet notifications show` or the API (fresh-user trial: the lines printed the bare UUID).
final class WorkerLogIDTests: WorkerTestCase {
    func testWorkerLogLinesNameNotificationsByTheirPublicID() throws {
        let app = try createApp()
        try register(app, user: "log_user")
        let n = try enqueue(app, users: ["log_user"])
        let logs = CapturedLog()
        try drain(try makeWorker(log: logs.log(.debug)))
        let publicID = PrefixedID.format(.notification, n)
        for event in ["notification.start", "batch.record"] {
            let lines = logs.events(event)
            XCTAssertFalse(lines.isEmpty, event)
            for line in lines { XCTAssertEqual(line["notification_id"] as? String, publicID, "\(event): \(line)") }
        }
        XCTAssertTrue(logs.all().allSatisfy { !$0.contains(n.uuidString.lowercased()) }, "a bare UUID in \(logs.all())")
    }
}
