import Foundation
import PushCore
import PushStore

/// One session on an `InMemoryQueue`: the `QueueStore` the worker and its lease keeper hold. Each
/// call runs under the queue's lock, so it is all or nothing, as a PostgreSQL transaction is. A
/// broken session (`InMemoryQueue.breakSessions`) answers every call `connectionLost`, as a
/// PostgreSQL session whose server process was ended does; a new session works.
public final class InMemoryQueueSession: QueueStore, @unchecked Sendable {
    /// The queue the session reads and writes.
    public let queue: InMemoryQueue
    private let lock = NSLock()
    private var broken = false
    private var calls = 0

    init(queue: InMemoryQueue) { self.queue = queue }

    /// Makes every later call fail `connectionLost`.
    public func breakSession() { lock.withLock { broken = true } }

    public var roundTrips: Int { lock.withLock { calls } }
    public var isHealthy: Bool { lock.withLock { !broken } }
    public var maintenance: MaintenanceStore? { nil }

    /// Runs one call: the queue's fault hook first (outside the lock), then `body` under the lock.
    private func call<T>(_ operation: InMemoryQueue.Operation, _ body: (InMemoryQueue, Date) throws -> T) throws -> T {
        queue.beforeOperation?(operation, self)
        try lock.withLock {
            calls += 1
            if broken { throw QueueStoreError.connectionLost("in-memory session broken") }
        }
        return try queue.locked { q in try body(q, q.clock()) }
    }

    public func healthProbe(required: [Int]) throws -> DatabaseHealth {
        try call(.health) { _, _ in DatabaseHealth(schemaVersion: Int.max, readOnly: false) }
    }

    public func waitForWork(timeout: Double) throws {
        try call(.wait) { _, _ in () }
        Thread.sleep(forTimeInterval: min(timeout, 0.01))
    }

    public func jobClaim(_ request: ClaimRequest) throws -> [ClaimedJob] {
        try call(.claim) { q, now in q.claim(request, now: request.now ?? now) }
    }

    public func jobHeartbeat(_ leases: [JobLease], leaseSeconds: Double) throws -> Set<Int64> {
        try call(.heartbeat) { q, now in q.heartbeat(leases, leaseSeconds: leaseSeconds, now: now) }
    }

    public func jobRescueExpired(now: Date?) throws -> RescueCounts {
        try call(.rescue) { q, clock in q.rescue(now: now ?? clock) }
    }

    public func jobFail(_ lease: JobLease, error: String, retryAt: Date) throws -> JobState? {
        try call(.fail) { q, now in q.fail(lease, error: error, retryAt: retryAt, now: now) }
    }

    public func jobDiscard(_ lease: JobLease, error: String) throws -> Bool {
        try call(.discard) { q, now in q.discard(lease, error: error, now: now) }
    }

    public func jobRelease(_ leases: [JobLease]) throws {
        try call(.release) { q, now in q.release(leases, now: now) }
    }

    public func jobNextRunAt() throws -> Date? {
        try call(.nextRunAt) { q, _ in q.jobs.values.filter { $0.state == .available }.map(\.runAt).min() }
    }

    public func queueStats() throws -> QueueStats {
        try call(.stats) { q, now in q.stats(now: now) }
    }

    public func notificationStart(_ jobs: [JobLease], batchSize: Int, goneLedger: LedgerAction,
                                  now: Date?) throws -> [Int64: StartOutcome] {
        try call(.start) { q, clock in try q.start(jobs, batchSize: batchSize, goneLedger: goneLedger, now: now ?? clock) }
    }

    /// Whole-app audiences (issue 22) are not modelled in memory: the in-memory queue never makes a
    /// split job (its enqueue takes user lists only), so a call here is a test's mistake. They are
    /// tested on PostgreSQL (`WholeAppAudienceTests`).
    public func audienceSplit(_ job: JobLease, batchSize: Int, request: SplitRequest, now: Date?) throws -> SplitOutcome {
        throw QueueStoreError.failed("IN_MEMORY_UNSUPPORTED: the in-memory queue has no whole-app audiences")
    }

    public func batchLoadDevices(_ batches: [DeviceBatch]) throws -> [[BatchDeviceRow]] {
        try call(.load) { q, _ in q.load(batches) }
    }

    public func batchRecord(_ outcomes: [BatchOutcome], now: Date?, decideFinal: FinalDecision) throws -> [Int64: RecordOutcome] {
        try call(.record) { q, clock in q.record(outcomes, now: now ?? clock, decideFinal: decideFinal) }
    }
}

extension InMemoryQueue {
    /// A queue call, as the fault hook sees it.
    public enum Operation: Sendable, Hashable {
        case health, wait, claim, heartbeat, rescue, fail, discard, release, nextRunAt, stats, start, load, record
    }

    /// A new session on this queue.
    public func session() -> InMemoryQueueSession {
        let s = InMemoryQueueSession(queue: self)
        lock.withLock {
            sessions.removeAll { $0.session == nil }
            sessions.append(WeakSession(session: s))
        }
        return s
    }

    /// Breaks every session opened so far (the server ended them): their next call fails
    /// `connectionLost`; sessions opened later work.
    public func breakSessions() {
        let open = lock.withLock { sessions.compactMap(\.session) }
        for s in open { s.breakSession() }
    }

    /// Sessions for a worker (its loop and its lease keeper), each a new session on this queue.
    public var workerSessions: QueueSessions { InMemoryQueueSessions(queue: self) }
}

/// `QueueSessions` on an in-memory queue.
public struct InMemoryQueueSessions: QueueSessions {
    public let queue: InMemoryQueue

    public func openWorkerSession() throws -> QueueStore { queue.session() }
    public func openHeartbeatSession() throws -> QueueStore { queue.session() }
}
