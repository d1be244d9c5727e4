import Foundation
import PushCore
import PushStore
@testable import PushWorker

/// A router that records every live send (when, how many pushes, for which app) and passes it to
/// the router it wraps: the outage tests read from it what went out while a scope was paused.
final class SendLogRouter: ProviderRouter, @unchecked Sendable {
    struct Send {
        var worker: String
        var appID: UUID
        var pushes: Int
        var start: Date
        var end: Date
    }

    /// One log shared by the routers of several workers.
    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [Send] = []
        func append(_ s: Send) { lock.withLock { all.append(s) } }
        var sends: [Send] { lock.withLock { all.sorted { $0.start < $1.start } } }
    }

    let inner: ProviderRouter
    let worker: String
    let log: Log

    init(_ inner: ProviderRouter, worker: String, log: Log) {
        self.inner = inner
        self.worker = worker
        self.log = log
    }

    func credentialStates(appID: UUID) throws -> CredentialStates { try inner.credentialStates(appID: appID) }

    func pauseScopes(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [[String]] {
        inner.pauseScopes(appID: appID, mode: mode, pushes: pushes)
    }

    func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)] {
        let start = Date()
        let answers = inner.send(appID: appID, mode: mode, pushes: pushes)
        log.append(Send(worker: worker, appID: appID, pushes: pushes.count, start: start, end: Date()))
        return answers
    }
}

/// Log lines captured from the workers of a test (`Log(sink:)`), as JSON objects.
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func log(_ level: PushWorker.Log.Level) -> PushWorker.Log {
        PushWorker.Log(level: level) { [self] line in lock.withLock { lines.append(line) } }
    }

    /// Every captured line, as written.
    func all() -> [String] { lock.withLock { lines } }

    /// The captured lines whose `event` is `event`.
    func events(_ event: String) -> [[String: Any]] {
        lock.withLock { lines }.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == event }
    }
}

/// Workers running their loop (`Worker.run`) on threads of their own, stopped together.
final class RunningWorkers {
    let workers: [Worker]
    private let group = DispatchGroup()

    init(_ workers: [Worker]) {
        self.workers = workers
        for w in workers {
            group.enter()
            let t = Thread { [group] in
                w.run()
                group.leave()
            }
            t.start()
        }
    }

    /// Asks every worker to stop and waits (at most `timeout` seconds) for their loops to return.
    @discardableResult
    func stop(timeout: TimeInterval = 30) -> Bool {
        for w in workers { w.requestStop() }
        return group.wait(timeout: .now() + timeout) == .success
    }
}

/// Polls `condition` every `interval` seconds until it holds or `timeout` seconds passed; true when it held.
func eventually(timeout: TimeInterval, interval: TimeInterval = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: interval)
    }
    return try condition()
}
