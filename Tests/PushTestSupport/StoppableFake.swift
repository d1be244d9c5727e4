/// A fake subprocess a test started and must stop (idempotent `stop()`), so a test case can keep
/// a list of what it started and stop them all in its tear-down.
public protocol StoppableFake: AnyObject {
    /// Stops the subprocess and waits for it (idempotent).
    func stop()
}

/// The fakes one test started, stopped together (`stopAll()`, e.g. from `tearDown`).
public final class StartedFakes {
    private var started: [StoppableFake] = []

    /// An empty list.
    public init() {}

    /// Records `fake` for `stopAll()` and returns it.
    @discardableResult
    public func keep<Fake: StoppableFake>(_ fake: Fake) -> Fake {
        started.append(fake)
        return fake
    }

    /// Stops every recorded fake, in start order, and forgets them.
    public func stopAll() {
        started.forEach { $0.stop() }
        started = []
    }
}
