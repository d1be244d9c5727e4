import Foundation
import XCTest
@testable import PushAPI
import PushWorker

/// The API's readiness probe thread stops before the process exits (issue 14, SIGTERM drain):
/// `stop()` returns only once the probe has left its loop and closed its PostgreSQL session, so
/// `exit` never tears libpq and OpenSSL down under a probe still using them.
final class ReadinessProbeTests: XCTestCase {
    /// A conninfo nothing listens on: each probe fails fast with DATABASE_UNREACHABLE.
    private let unreachable = "host=127.0.0.1 port=1 connect_timeout=1"

    func testStopWaitsForTheProbeThreadToFinish() {
        let metrics = APIMetrics()
        let probe = ReadinessProbe(databaseURL: unreachable, metrics: metrics, log: Log(level: .error))
        probe.start()
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertTrue(probe.stop(seconds: 5), "the probe thread never signalled that it finished")
        XCTAssertEqual(metrics.ready.current, 0)
    }

    func testStopIsIdempotentAndHarmlessWithoutStart() {
        let neverStarted = ReadinessProbe(databaseURL: unreachable, metrics: APIMetrics(), log: Log(level: .error))
        XCTAssertTrue(neverStarted.stop(seconds: 0.5))
        let probe = ReadinessProbe(databaseURL: unreachable, metrics: APIMetrics(), log: Log(level: .error))
        probe.start()
        XCTAssertTrue(probe.stop(seconds: 5))
        XCTAssertTrue(probe.stop(seconds: 0.5), "a second stop must not wait for a signal already taken")
    }
}
