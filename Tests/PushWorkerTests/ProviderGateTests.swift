import Foundation
import XCTest
import PushCore
import PushStore
@testable import PushWorker

/// R-KIND-4 in one worker's gate, with a fake clock and two gates (two workers) sharing one
/// store: a pause one of them detects holds the other's deliveries, exactly one of them probes
/// when a probe is due, a probe's success resumes both, a quota pause ends by time.
final class ProviderGateTests: XCTestCase {
    let host = PauseScope.host("https://apns.example")
    let project = PauseScope.fcmProject("p1")
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ s: Double) -> Date { t0.addingTimeInterval(s) }

    func gates(_ store: PauseStore = MemoryPauseStore()) -> (ProviderGate, ProviderGate, WorkerMetrics) {
        let metrics = WorkerMetrics()
        return (ProviderGate(store: store, owner: "w1", refreshInterval: 0, metrics: metrics, log: Log(level: .error)),
                ProviderGate(store: store, owner: "w2", refreshInterval: 0, log: Log(level: .error)), metrics)
    }

    func fail(_ g: ProviderGate, _ n: Int, at now: Date) {
        for _ in 0..<n { g.report(scopes: [host], signal: .connectionFailure, decision: .send, detail: "notSent", now: now) }
    }

    /// The detail a pause (and a delivery's `error_detail`) carries says the transport outcome in
    /// words, not the Swift case name (`notSent` was shown to operators).
    func testTheDetailSaysTheOutcomeInWords() {
        XCTAssertEqual(BatchProcessor.detail(ProviderAnswer(transport: .notSent, rawDetail: "connection refused")),
                       "not sent connection refused")
        XCTAssertEqual(BatchProcessor.detail(ProviderAnswer(transport: .connectionError)), "connection error")
        XCTAssertEqual(BatchProcessor.detail(ProviderAnswer(transport: .timeout)), "timeout")
        XCTAssertEqual(BatchProcessor.detail(ProviderAnswer(transport: .response, httpStatus: 429, reason: "QUOTA_EXCEEDED")),
                       "response 429 QUOTA_EXCEEDED")
    }

    func testAPauseDetectedByOneWorkerHoldsTheOtherAndOnlyOneProbesR_KIND_4() throws {
        let (a, b, metrics) = gates()
        XCTAssertEqual(b.admit([[host]], now: at(0)), [.send])
        fail(a, 3, at: at(0))
        XCTAssertEqual(a.knownPauses.map(\.cause), [.connectionFailures])
        XCTAssertEqual(metrics.providerPauses.value([host, "connection_failures"]), 1)
        XCTAssertEqual(metrics.providerPaused.snapshot, [host: 1])
        // Before the first probe (1 s): both hold, until the probe time plus the slack.
        XCTAssertEqual(b.admit([[host], [host]], now: at(0.5)), [.hold(until: at(1.5)), .hold(until: at(1.5))])
        XCTAssertEqual(a.holdAfterFailure(scopes: [host], now: at(0.5)), at(1.5))
        // At 1 s, of four pushes to the host across the two workers exactly one is the probe.
        let first = b.admit([[host], [host]], now: at(1))
        let second = a.admit([[host], [host]], now: at(1))
        let all = first + second
        XCTAssertEqual(all.filter { $0 == .probe(scope: host) }.count, 1, "\(all)")
        XCTAssertEqual(first.first, .probe(scope: host))
        XCTAssertEqual(all.filter { if case .hold = $0 { return true } else { return false } }.count, 3)
        // The probe fails: the next is 2 s later, and only then.
        b.report(scopes: [host], signal: .connectionFailure, decision: .probe(scope: host), detail: "notSent", now: at(1.01))
        XCTAssertEqual(a.admit([[host]], now: at(2.9)), [.hold(until: at(3.01 + 0.5))])
        XCTAssertEqual(a.admit([[host]], now: at(3.02)), [.probe(scope: host)])
        XCTAssertEqual(b.admit([[host]], now: at(3.03)), [.hold(until: at(3.03 + 2 + 0.5))])
        // It succeeds: the host resumes for both.
        a.report(scopes: [host], signal: .answered, decision: .probe(scope: host), detail: "200", now: at(3.05))
        XCTAssertEqual(a.admit([[host]], now: at(3.06)), [.send])
        XCTAssertEqual(b.admit([[host]], now: at(3.06)), [.send])
        XCTAssertEqual(metrics.providerResumes.value([host, "connection_failures"]), 1)
        XCTAssertEqual(metrics.providerProbes.value([host, "resumed"]), 1)
        XCTAssertEqual(metrics.providerPaused.snapshot, [host: 0], "a resumed scope reads 0: the series stays")
    }

    func testTwoWorkersRacingForOneProbeWithStaleViewsGetOneR_KIND_4() {
        // Both workers read the pause before either takes the probe (neither reads it again for
        // 100 s): the compare-and-set on the version gives the probe to one of them only.
        let store = MemoryPauseStore()
        let a = ProviderGate(store: store, owner: "w1", refreshInterval: 100, log: Log(level: .error))
        let b = ProviderGate(store: store, owner: "w2", refreshInterval: 100, log: Log(level: .error))
        fail(a, 3, at: at(0))
        XCTAssertEqual(b.admit([[host]], now: at(0.5)), [.hold(until: at(1.5))])
        XCTAssertEqual(a.admit([[host]], now: at(1)), [.probe(scope: host)])
        guard case .hold = b.admit([[host]], now: at(1)).first else { return XCTFail("the second worker must not probe too") }
        XCTAssertEqual(try store.pauses().first?.probeOwner, "w1")
    }

    func testTwoWorkersDetectingAtOnceMakeOnePauseR_KIND_4() {
        let store = MemoryPauseStore()
        let (a, b, metrics) = gates(store)
        fail(a, 3, at: at(0))
        fail(b, 3, at: at(0.001))
        XCTAssertEqual(try store.pauses().count, 1)
        XCTAssertEqual(try store.pauses().first?.pausedAt, at(0))
        XCTAssertEqual(metrics.providerPauses.value([host, "connection_failures"]), 1)
    }

    func testQuotaPausesTheProjectNotTheHostAndEndsByTimeR_KIND_4() {
        let (a, b, _) = gates()
        for d in ["d1", "d2", "d3"] {
            a.report(scopes: [host, project], signal: .quotaExceeded(device: d, retryAfter: 5), decision: .send, detail: "429", now: at(0))
        }
        XCTAssertEqual(a.knownPauses.map(\.scope), [project])
        XCTAssertEqual(b.admit([[host, project], [host]], now: at(1)), [.hold(until: at(5)), .send])
        // A quota pause is not an outage: a host failure is not held because of it.
        XCTAssertNil(b.holdAfterFailure(scopes: [host, project], now: at(1)))
        XCTAssertEqual(b.admit([[host, project]], now: at(5)), [.send])
        XCTAssertEqual(a.admit([[host, project]], now: at(5)), [.send])
        XCTAssertTrue(a.knownPauses.isEmpty)
    }

    func testAPausedScopeDoesNotHoldOtherScopesR_KIND_4() {
        let (a, _, _) = gates()
        fail(a, 3, at: at(0))
        let other = PauseScope.host("https://sandbox.example")
        XCTAssertEqual(a.admit([[other], []], now: at(0.5)), [.send, .send])
    }

    func testNoScopesNeverReadsTheStoreR_KIND_4() {
        final class Failing: PauseStore {
            var reads = 0
            func pauses() throws -> [ProviderPause] { reads += 1; throw PGError(code: .connection, message: "down") }
            func insert(_ pause: ProviderPause) throws -> (pause: ProviderPause, inserted: Bool) { throw PGError(code: .connection, message: "down") }
            func update(_ pause: ProviderPause, expected: Int64) throws -> ProviderPause? { nil }
            func delete(scope: String, expected: Int64) throws -> Bool { false }
        }
        let store = Failing()
        let g = ProviderGate(store: store, owner: "w", refreshInterval: 0, log: Log(level: .error))
        XCTAssertEqual(g.admit([[], []], now: at(0)), [.send, .send])
        XCTAssertEqual(store.reads, 0)
        // A store that cannot be reached: the worker's own pause still holds its deliveries.
        fail(g, 3, at: at(0))
        XCTAssertEqual(g.admit([[host]], now: at(0.1)), [.hold(until: at(1.5))])
    }
}
