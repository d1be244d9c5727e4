import Foundation
import PushCore
import PushStore

/// The worker loop: claim due jobs (leased), run each (a notification's send time, then device
/// batches), record what was sent in one lease-guarded transaction per chunk, and sleep until new
/// work is announced, the next scheduled run time or the poll interval. The queue is a
/// `QueueStore` session (PostgreSQL in production: `PGQueueStore`); a broken session is met with a
/// new one and backoff; a job that fails as a whole is retried (`JobRetryPolicy`) and, after its
/// attempts, set aside (discarded) with its last error. No transaction is open while a provider is
/// called. The claim's processing is in `Worker+Claim.swift`, failures in `Worker+Failure.swift`.
public final class Worker: @unchecked Sendable {
    public let config: WorkerConfig
    public let metrics: WorkerMetrics
    let sessions: QueueSessions
    let processor: BatchProcessor
    let log: Log
    let keeper: LeaseKeeper
    private var session: QueueStore?
    private let stopLock = NSLock()
    private var stopRequested = false
    private var stopRequestedAt: Date?
    /// Outcomes computed and sent but not recorded because the session broke: kept (their jobs stay
    /// held, so heartbeats keep the leases) and recorded through the same path once a session is
    /// back, never sent again. A job whose lease was lost meanwhile is dropped (its new owner sends it).
    var deferredRecords: [BatchOutcome] = []
    /// Apps with `confirm_deliveries` and when it was turned on, refreshed with the queue gauges:
    /// their pushes sent since then are counted by platform for the confirmation rate (R-IDS-4).
    var confirmingApps: [UUID: Date] = [:]
    /// Claimed jobs not sent, whose give-back could not be written (the session broke): given
    /// back first thing on the next session, or before exiting.
    var deferredReleases: [JobLease] = []
    private var lastRescue = Date.distantPast
    private var lastStats = Date.distantPast
    private var lastMaintenance = Date.distantPast
    /// The session's round-trip count at the last logged record: each record line reports the
    /// round trips since the previous one (the claim and start for the first chunk of a claim, then
    /// load and record per chunk), constant whatever the chunk's size.
    var claimStatements = 0
    /// The jobs of the current claim this worker started as their notification's sole batch, with
    /// no DEVICE_GONE row: their records are every delivery of the notification, so PushCore's final
    /// decision goes with the record (`BatchOutcome.final`, one step less per notification).
    var soleBatches: Set<Int64> = []
    /// Retention and cleanup, run by one worker of the fleet at a time; nil disables it.
    public var maintainer: Maintainer? = Maintainer(config: .fromEnvironment())
    /// SMS fallbacks (R-SMS-1), on their own thread and connection beside the job loop; nil: none.
    public var smsDispatcher: SMSDispatcher?
    /// Webhook delivery, on its own thread and connection beside the job loop; nil: none.
    public var webhookDispatcher: WebhookDispatcher?
    private let readiness: ReadinessGate
    /// The job ids this worker has processed (tests and the fleet test read it).
    public internal(set) var processedJobs = 0

    /// - Parameters:
    ///   - sessions: where queue sessions come from (`PGQueueSessions` in production).
    ///   - router: where pushes go (simulator in test mode; providers in live mode).
    public init(config: WorkerConfig, sessions: QueueSessions, router: ProviderRouter,
                metrics: WorkerMetrics = WorkerMetrics(), log: Log = .shared) throws {
        self.config = config
        self.sessions = sessions
        self.metrics = metrics
        self.log = log
        self.readiness = ReadinessGate(metrics: metrics, log: log, platforms: config.providers.servedPlatforms)
        metrics.pushesSent.serve(config.providers.platforms)
        let gate = ProviderGate(store: sessions.openPauseStore() ?? MemoryPauseStore(), owner: config.owner,
                                thresholds: config.outageThresholds, refreshInterval: config.pauseRefreshInterval,
                                metrics: metrics, log: log)
        self.processor = try BatchProcessor(router: router, retryPolicy: config.retryPolicy, providers: config.providers,
                                            metrics: metrics, gate: gate)
        self.keeper = LeaseKeeper(leaseSeconds: config.leaseSeconds, log: log) { try sessions.openHeartbeatSession() }
    }

    /// A worker on PostgreSQL at `databaseURL` (libpq URI or conninfo), with the config's timeouts.
    public convenience init(config: WorkerConfig, databaseURL: String, router: ProviderRouter,
                            metrics: WorkerMetrics = WorkerMetrics(), log: Log = .shared) throws {
        try self.init(config: config,
                      sessions: PGQueueSessions(url: databaseURL, statementTimeoutMillis: config.statementTimeoutMillis,
                                                lockTimeoutMillis: config.lockTimeoutMillis),
                      router: router, metrics: metrics, log: log)
    }

    /// Asks the loop to stop claiming; in-flight work finishes (graceful shutdown).
    public func requestStop() {
        stopLock.withLock {
            if !stopRequested { stopRequestedAt = Date() }
            stopRequested = true
        }
        smsDispatcher?.requestStop(drainSeconds: max(0, config.drainSeconds - 2))
        webhookDispatcher?.requestStop(drainSeconds: max(0, config.drainSeconds - 2))
    }

    /// Outcomes waiting to be recorded after a broken session (see `deferredRecords`); read it
    /// from the thread that runs the worker.
    public var deferredRecordCount: Int { deferredRecords.count }

    /// Jobs waiting to be given back after a broken session (see `deferredReleases`).
    public var deferredReleaseCount: Int { deferredReleases.count }

    /// True once `requestStop()` was called.
    public var isStopping: Bool { stopLock.withLock { stopRequested } }

    // MARK: - Loop

    /// Runs until `requestStop()`; returns after in-flight work is recorded or released.
    public func run() {
        keeper.start()
        defer { keeper.stop() }
        smsDispatcher?.start()
        webhookDispatcher?.start()
        var backoff = 0.2
        log.info("worker.start", ["owner": config.owner, "claim_limit": config.claimLimit, "batch_size": config.batchSize,
                                  "lease_seconds": config.leaseSeconds, "poll_interval_s": config.pollInterval,
                                  "drain_seconds": config.drainSeconds])
        while !isStopping {
            do {
                let store = try ensureSession()
                guard try readiness.admit(store) else {  // schema too old or read-only: claim nothing
                    session = nil  // a fresh session picks up changed server settings
                    pause(backoff)
                    backoff = min(backoff * 2, 5)
                    continue
                }
                let n = try runOnce(store: store)
                backoff = 0.2
                if n < config.claimLimit && !isStopping {
                    try sleepUntilWork(store)
                }
            } catch {
                metrics.dbErrors.increment()
                readiness.markUnreachable()
                log.warn("worker.db_error", ["error": String(describing: error).prefix(300), "retry_in_s": backoff])
                session = nil
                pause(backoff)
                backoff = min(backoff * 2, 10)
            }
        }
        finishDeferredRecords()
        let drainLeft = (stopLock.withLock { stopRequestedAt } ?? Date()).addingTimeInterval(config.drainSeconds - 1).timeIntervalSinceNow
        webhookDispatcher?.stop(timeout: max(0, drainLeft))
        smsDispatcher?.stop(timeout: max(0, drainLeft))
        log.info("worker.stop", ["owner": config.owner, "processed_jobs": processedJobs])
    }

    /// On the way out: outcomes already sent but not yet recorded (the session broke) are recorded
    /// now, retrying a lost session with backoff until 2 s before the drain deadline; what still
    /// cannot be written stays running under this worker's lease and is rescued when the lease
    /// expires (its pushes are then sent again: at least once, R-SEND-8's row stays one).
    private func finishDeferredRecords() {
        guard !deferredRecords.isEmpty || !deferredReleases.isEmpty else { return }
        let deadline = (stopLock.withLock { stopRequestedAt } ?? Date()).addingTimeInterval(max(0, config.drainSeconds - 2))
        var backoff = 0.1
        while (!deferredRecords.isEmpty || !deferredReleases.isEmpty) && Date() < deadline {
            do {
                try recordDeferred(try ensureSession())
            } catch {
                session = nil
                pause(min(backoff, max(0, deadline.timeIntervalSinceNow)))
                backoff = min(backoff * 2, 2)
            }
        }
        if !deferredRecords.isEmpty || !deferredReleases.isEmpty {
            log.error("worker.records_unwritten", ["sent_jobs": deferredRecords.count, "unsent_jobs": deferredReleases.count,
                                                   "effect": "rescued when their leases expire, the sent ones sent again"])
        }
    }

    /// Gives back the deferred releases, then records the deferred outcomes through the claim's
    /// record path (`record`): a lost lease drops that outcome, any other job-level error goes
    /// through `handleFailure`. - Throws: `QueueStoreError.connectionLost` when the session breaks
    /// again (what is left stays deferred).
    func recordDeferred(_ store: QueueStore) throws {
        if !deferredReleases.isEmpty {
            try store.jobRelease(deferredReleases)
            for job in deferredReleases { keeper.release(job.id) }
            log.info("claim.released_deferred", ["jobs": deferredReleases.count])
            deferredReleases.removeAll()
        }
        if deferredRecords.isEmpty { return }
        let outcomes = deferredRecords
        deferredRecords.removeAll()
        if !record(outcomes, store: store, started: Date(), deferred: true) {
            throw QueueStoreError.connectionLost("the session broke again while recording deferred outcomes")
        }
    }

    /// One claim and the processing of what it returned, on `connection` (tests; the loop uses
    /// `runOnce(store:)`). Returns the number of jobs claimed.
    @discardableResult
    public func runOnce(connection: PGConnection, now: Date = Date()) throws -> Int {
        try runOnce(store: PGQueueStore(connection: connection), now: now)
    }

    // MARK: - Sessions

    private func ensureSession() throws -> QueueStore {
        if let s = session, s.isHealthy { return s }
        let s = try sessions.openWorkerSession()
        session = s
        return s
    }

    /// Sleeps `seconds`, waking early when a stop is requested.
    func pause(_ seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while !isStopping && Date() < end { Thread.sleep(forTimeInterval: min(0.05, max(0, end.timeIntervalSinceNow))) }
    }

    private func sleepUntilWork(_ store: QueueStore) throws {
        var timeout = config.pollInterval
        if let next = try store.jobNextRunAt() {
            timeout = min(timeout, max(0, next.timeIntervalSinceNow))
        }
        if timeout > 0 { try store.waitForWork(timeout: timeout) }
    }

    /// Runs the periodic chores due at `now` on `store`: rescue of expired leases, queue gauges,
    /// maintenance (one worker of the fleet at a time).
    func chores(_ store: QueueStore, now: Date) throws {
        if now.timeIntervalSince(lastRescue) >= config.rescueInterval {
            let r = try store.jobRescueExpired(now: nil)
            if r.rescued + r.discarded > 0 { log.warn("queue.rescue", ["rescued": r.rescued, "discarded": r.discarded]) }
            lastRescue = now
        }
        if now.timeIntervalSince(lastStats) >= config.statsInterval {
            refreshQueueGauges(store)
            lastStats = now
        }
        if let maintainer, let maintenance = store.maintenance, now.timeIntervalSince(lastMaintenance) >= maintainer.config.interval {
            lastMaintenance = now
            let r = try maintainer.runOnce(store: maintenance, now: now)
            if r.ranLeader && r.jobs + r.smsOutbox + r.deliveries + r.events + r.devices + r.erased + r.smsErased > 0 {
                log.info("maintenance.run", ["jobs": r.jobs, "sms_outbox": r.smsOutbox, "deliveries": r.deliveries,
                                             "events": r.events, "devices": r.devices, "erased": r.erased,
                                             "sms_erased": r.smsErased])
            }
        }
    }

    private func refreshQueueGauges(_ store: QueueStore) {
        if let apps = try? store.confirmingApps(limit: ConfirmationMetrics.maxApps) { confirmingApps = apps }
        guard let s = try? store.queueStats() else { return }
        metrics.queueJobs.set("available", Double(s.available))
        metrics.queueJobs.set("running", Double(s.running))
        metrics.queueJobs.set("completed", Double(s.completed))
        metrics.queueJobs.set("discarded", Double(s.discarded))
        metrics.queueJobs.set("cancelled", Double(s.cancelled))
        metrics.queueDue.set(Double(s.due))
        metrics.queueOldestDueAge.set(s.oldestDueAgeSeconds)
    }
}
