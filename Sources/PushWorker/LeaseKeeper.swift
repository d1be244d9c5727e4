import Foundation
import PushStore

/// Extends the leases of the jobs this worker holds, from its own thread and connection, every
/// `leaseSeconds / 3` (a live worker's lease never lapses; a dead one's does, and another worker
/// claims the job again). A job that two heartbeats in a row find gone while this worker still
/// holds it is reported lost (one miss may be the worker's own record committing just before it
/// lets go of the job); a lost job's outcome is refused anyway by the lease-guarded record
/// (`RecordOutcome.leaseLost`), never written over the new owner's work.
public final class LeaseKeeper: @unchecked Sendable {
    private let lock = NSLock()
    private var held: [Int64: UUID] = [:]
    private var lost: Set<Int64> = []
    private var missed: Set<Int64> = []
    private let leaseSeconds: Double
    private let open: () throws -> QueueStore
    private var thread: Thread?
    private var stopped = false
    private let log: Log

    /// - Parameter open: opens the keeper's own session (again after a failure).
    public init(leaseSeconds: Double, log: Log = .shared, open: @escaping () throws -> QueueStore) {
        self.leaseSeconds = leaseSeconds
        self.open = open
        self.log = log
    }

    /// Starts the heartbeat thread.
    public func start() {
        let t = Thread { [weak self] in self?.loop() }
        t.name = "pushfleet-lease-keeper"
        thread = t
        t.start()
    }

    /// Stops the heartbeat thread (it ends within one interval).
    public func stop() { lock.withLock { stopped = true } }

    /// Adds a claimed job.
    public func hold(_ id: Int64, token: UUID) { lock.withLock { held[id] = token } }

    /// Removes a job once recorded, failed or released.
    public func release(_ id: Int64) { lock.withLock { held[id] = nil; lost.remove(id); missed.remove(id) } }

    /// True while the job is held (claimed, not yet recorded, failed or released).
    public func isHeld(_ id: Int64) -> Bool { lock.withLock { held[id] != nil } }

    /// True when a heartbeat found the job no longer held by this lease.
    public func isLost(_ id: Int64) -> Bool { lock.withLock { lost.contains(id) } }

    private func loop() {
        var session: QueueStore?
        let interval = max(0.05, leaseSeconds / 3)
        while !lock.withLock({ stopped }) {
            Thread.sleep(forTimeInterval: interval)
            let jobs = lock.withLock { held.map { JobLease(id: $0.key, token: $0.value) } }
            if jobs.isEmpty { continue }
            do {
                let store = try session ?? open()
                session = store
                let kept = try store.jobHeartbeat(jobs, leaseSeconds: leaseSeconds)
                let gone = Set(jobs.map(\.id).filter { !kept.contains($0) })
                let newlyLost: [Int64] = lock.withLock {
                    let stillHeld = gone.filter { held[$0] != nil }
                    let confirmed = stillHeld.filter { missed.contains($0) && !lost.contains($0) }
                    missed = stillHeld
                    lost.formUnion(confirmed)
                    return Array(confirmed)
                }
                if !newlyLost.isEmpty {
                    log.warn("lease.lost", ["jobs": newlyLost.count, "job_ids": newlyLost.sorted().map(String.init).joined(separator: ",")])
                }
            } catch {
                log.warn("lease.heartbeat_failed", ["error": String(describing: error).prefix(200)])
                session = nil
            }
        }
    }
}
