import PushProviders
@testable import PushWorker
import XCTest

/// The confirmation series' platform label comes from the process's provider table.
final class ConfirmationLabelTests: XCTestCase {
    func testPlatformLabelsAreTheServedTablesAndOtherwiseOther() {
        let m = ConfirmationMetrics.sent()
        m.add(app: "papp_a", mode: "live", platform: "web")
        m.add(app: "papp_a", mode: "live", platform: "pigeon")
        XCTAssertEqual(m.counts.value(["papp_a", "live", "web"]), 1)
        XCTAssertEqual(m.counts.value(["papp_a", "live", "other"]), 1, "not in the standard table")
        m.serve(ProviderTable.standard.platforms.union(["pigeon"]))
        m.add(app: "papp_a", mode: "live", platform: "pigeon")
        XCTAssertEqual(m.counts.value(["papp_a", "live", "pigeon"]), 1)
    }
}
