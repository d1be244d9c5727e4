import Foundation

/// The lifecycle the outbox dispatchers share (`WebhookDispatcher`, `SMSDispatcher`): their loop on
/// a thread of its own, a stop request with a drain deadline, and a bounded wait for the loop to
/// return. Thread-safe.
final class DispatcherThread: @unchecked Sendable {
    private let lock = NSLock()
    private var stopRequested = false
    private var deadline: Date?
    private let finished = DispatchSemaphore(value: 0)
    private var started = false

    /// Runs `loop` on a new thread named `name`.
    func start(name: String, _ loop: @escaping @Sendable () -> Void) {
        lock.withLock { started = true }
        let t = Thread { [finished] in
            loop()
            finished.signal()
        }
        t.name = name
        t.start()
    }

    /// Asks the loop to stop; the first request sets the drain deadline, `drainSeconds` from now.
    func requestStop(drainSeconds: Double) {
        lock.withLock {
            if !stopRequested { deadline = Date().addingTimeInterval(drainSeconds) }
            stopRequested = true
        }
    }

    /// `requestStop` (draining until a second before `timeout`), then waits for the thread started
    /// by `start`, at most `timeout` seconds. True when it ended (or was never started).
    func stop(timeout: Double) -> Bool {
        requestStop(drainSeconds: max(0, timeout - 1))
        guard lock.withLock({ started }) else { return true }
        return finished.wait(timeout: .now() + timeout) == .success
    }

    /// A stop was requested.
    var isStopping: Bool { lock.withLock { stopRequested } }

    /// A stop was requested and its drain deadline has passed.
    var drainExpired: Bool { lock.withLock { stopRequested && (deadline.map { Date() > $0 } ?? false) } }
}
