import Foundation
import XCTest
@testable import PushAPI
import PushTestSupport
import PushWorker

/// The API's readiness probe on a role lacking INSERT, UPDATE on `push_platforms` (sql/0024): the
/// database answers, so the reason is `PLATFORMS_NOT_SERVED` (not `DATABASE_UNREACHABLE`), said
/// once with the database's SQLSTATE and message while the probe keeps retrying each second; once
/// granted, the probe writes the platforms and turns ready.
final class ReadinessPlatformsPrivilegeTests: XCTestCase {
    func testMissingPrivilegeIsNamedOnceThenGrantMakesReady() throws {
        let db = try MigratedTestDatabase.create()
        defer { try? db.database.drop() }
        let role = try PlatformsRestrictedRole(database: db.database, admin: db.connection)
        defer { try? role.drop() }
        let lines = LockedLines()
        let metrics = APIMetrics()
        let probe = ReadinessProbe(databaseURL: role.conninfo, metrics: metrics, log: Log(level: .info) { lines.append($0) })
        probe.start()
        defer { probe.stop() }
        func events(_ name: String) -> [[String: Any]] {
            lines.all.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
                .filter { $0["event"] as? String == name }
        }
        let deadline = Date().addingTimeInterval(10)
        while events("api.not_ready").isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 2.5)  // two or three more probes
        XCTAssertEqual(metrics.ready.current, 0)
        let notReady = events("api.not_ready")
        XCTAssertEqual(notReady.count, 1, "one line per change of state: \(notReady)")
        XCTAssertEqual(notReady.first?["reason"] as? String, "PLATFORMS_NOT_SERVED")
        XCTAssertEqual(notReady.first?["sqlstate"] as? String, "42501")
        XCTAssertTrue((notReady.first?["message"] as? String ?? "").contains("push_platforms"))
        XCTAssertTrue(events("api.ready").isEmpty)

        try role.grantPlatforms()
        let ready = Date().addingTimeInterval(10)
        while metrics.ready.current != 1 && Date() < ready { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(metrics.ready.current, 1, "ready once granted")
        XCTAssertEqual(events("api.ready").count, 1)
    }
}
