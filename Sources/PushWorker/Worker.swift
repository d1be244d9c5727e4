import Foundation
import PushCore
import PushStore

/// The worker loop: claim due jobs (`FOR UPDATE SKIP LOCKED`, leased), run each (a notification's
/// send time, then device batches), record each batch in one lease-guarded transaction, and sleep
/// until NOTIFY, the next scheduled run time or the poll interval. Database failures are met with
/// reconnection and backoff; a job that fails as a whole is retried and, after its attempts, set
/// aside (discarded) with its last error. No transaction is open while a provider is called.
public final class Worker: @unchecked Sendable {
    public let config: WorkerConfig
    public let metrics: WorkerMetrics
    private let databaseURL: String
    private let processor: BatchProcessor
    private let log: Log
    private let keeper: LeaseKeeper
    private var connection: PGConnection?
    private let stopLock = NSLock()
    private var stopRequested = false
    private var lastRescue = Date.distantPast
    private var lastStats = Date.distantPast
    /// The job ids this worker has processed (tests and the fleet test read it).
    public private(set) var processedJobs = 0

    /// - Parameters:
    ///   - databaseURL: libpq URI or conninfo.
    ///   - router: where pushes go (simulator in test mode; providers in live mode).
    public init(config: WorkerConfig, databaseURL: String, router: ProviderRouter,
                metrics: WorkerMetrics = WorkerMetrics(), log: Log = .shared) throws {
        self.config = config
        self.databaseURL = databaseURL
        self.metrics = metrics
        self.log = log
        self.processor = try BatchProcessor(router: router, retryPolicy: config.retryPolicy, metrics: metrics)
        let url = databaseURL
        let timeouts = (config.statementTimeoutMillis, config.lockTimeoutMillis)
        self.keeper = LeaseKeeper(leaseSeconds: config.leaseSeconds, log: log) {
            try Worker.open(url, statementTimeout: timeouts.0, lockTimeout: timeouts.1)
        }
    }

    /// Asks the loop to stop claiming; in-flight work finishes (graceful shutdown).
    public func requestStop() { stopLock.withLock { stopRequested = true } }

    /// True once `requestStop()` was called.
    public var isStopping: Bool { stopLock.withLock { stopRequested } }

    // MARK: - Loop

    /// Runs until `requestStop()`; returns after in-flight work is recorded or released.
    public func run() {
        keeper.start()
        defer { keeper.stop() }
        var backoff = 0.2
        log.info("worker.start", ["owner": config.owner, "claim_limit": config.claimLimit, "batch_size": config.batchSize])
        while !isStopping {
            do {
                let conn = try ensureConnection()
                metrics.ready.set(1)
                let n = try runOnce(connection: conn)
                backoff = 0.2
                if n < config.claimLimit && !isStopping {
                    try sleepUntilWork(conn)
                }
            } catch {
                metrics.dbErrors.increment()
                metrics.ready.set(0)
                log.warn("worker.db_error", ["error": String(describing: error).prefix(300), "retry_in_s": backoff])
                connection = nil
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 10)
            }
        }
        log.info("worker.stop", ["owner": config.owner, "processed_jobs": processedJobs])
    }

    /// One claim and the processing of what it returned. Returns the number of jobs claimed.
    /// Throws `PGError` when the database fails outside a job (the claim itself).
    @discardableResult
    public func runOnce(connection conn: PGConnection, now: Date = Date()) throws -> Int {
        let store = QueueStore(connection: conn)
        if now.timeIntervalSince(lastRescue) >= config.rescueInterval {
            let r = try store.jobRescueExpired()
            if r.rescued + r.discarded > 0 { log.warn("queue.rescue", ["rescued": r.rescued, "discarded": r.discarded]) }
            lastRescue = now
        }
        if now.timeIntervalSince(lastStats) >= config.statsInterval {
            refreshQueueGauges(store)
            lastStats = now
        }
        let jobs = try store.jobClaimBatch(owner: config.owner, limit: config.claimLimit, leaseSeconds: config.leaseSeconds)
        metrics.jobsClaimed.increment(by: Double(jobs.count))
        if !jobs.isEmpty { log.debug("queue.claim", ["jobs": jobs.count]) }
        for job in jobs { keeper.hold(job.id, token: job.leaseToken) }
        for (i, job) in jobs.enumerated() {
            if isStopping {
                // Graceful shutdown: give back what was claimed but not started.
                for rest in jobs[i...] {
                    try? store.jobRelease(id: rest.id, leaseToken: rest.leaseToken)
                    keeper.release(rest.id)
                }
                break
            }
            process(job, store: store)
            keeper.release(job.id)
            processedJobs += 1
        }
        return jobs.count
    }

    /// Processes one claimed job; never throws: a failure is recorded on the job (retry / discard).
    func process(_ job: ClaimedJob, store: QueueStore) {
        let started = Date()
        let statementsBefore = store.connection.statementCount
        do {
            var encrypted = job.notification.encrypted ?? job.app.requireEncryption
            var deviceIDs = job.deviceIDs ?? []
            if job.kind == "notification" {
                let start = try store.notificationStart(job: job, batchSize: config.batchSize)
                encrypted = start.encrypted
                log.info("notification.start", ["notification_id": job.notification.id, "batches": start.batchJobs,
                                                "gone": start.gone, "encrypted": start.encrypted])
                guard let inline = start.inlineDeviceIDs else { return }  // split into batch jobs
                deviceIDs = inline
            }
            let devices = try store.batchLoadDevices(notificationID: job.notification.id, deviceIDs: deviceIDs)
            let (records, credentials) = processor.process(job: job, encrypted: encrypted, devices: devices, now: Date())
            if keeper.isLost(job.id) {
                log.warn("batch.lease_lost", ["job_id": job.id])
                return
            }
            let result = try store.batchRecord(job: job, records: records, credentials: credentials) { endings, hasSMS in
                let outcome = NotificationOutcome.final(endings: endings.map(Self.ending), hasSMSFallback: hasSMS)
                return NotificationFinal(status: outcome.status.rawValue, errorCode: outcome.errorCode?.rawValue)
            }
            count(records, credentials: credentials)
            log.info("batch.record", ["job_id": job.id, "notification_id": job.notification.id, "devices": records.count,
                                      "remaining_batches": result.remainingBatches, "deactivated": result.deactivated,
                                      "round_trips": store.connection.statementCount - statementsBefore,
                                      "ms": Int(Date().timeIntervalSince(started) * 1000)])
        } catch let e as PGError where e.message.hasPrefix("LEASE_LOST") || e.message.contains("LEASE_LOST") {
            log.warn("batch.lease_lost", ["job_id": job.id])
        } catch {
            metrics.dbErrors.increment()
            let attempt = Double(max(1, job.attempt))
            let retryAt = Date().addingTimeInterval(min(300, pow(2, attempt)))
            let state = try? store.jobFail(id: job.id, leaseToken: job.leaseToken,
                                           error: String(describing: error), retryAt: retryAt)
            log.error("job.failed", ["job_id": job.id, "attempt": job.attempt, "state": state ?? "lease_lost",
                                     "error": String(describing: error).prefix(300)])
        }
    }

    // MARK: - Helpers

    private func count(_ records: [DeliveryRecord], credentials: CredentialChanges) {
        for r in records {
            metrics.deliveries.increment([r.provider ?? "none", r.status, r.errorCode ?? ""])
            if r.netsCharge == false { metrics.refunds.increment() }
        }
        for c in credentials.invalid { metrics.credentialsInvalid.increment([c.kind]) }
    }

    private func refreshQueueGauges(_ store: QueueStore) {
        guard let s = try? store.queueStats() else { return }
        metrics.queueJobs.set("available", Double(s.available))
        metrics.queueJobs.set("running", Double(s.running))
        metrics.queueJobs.set("completed", Double(s.completed))
        metrics.queueJobs.set("discarded", Double(s.discarded))
        metrics.queueJobs.set("cancelled", Double(s.cancelled))
        metrics.queueDue.set(Double(s.due))
        metrics.queueOldestDueAge.set(s.oldestDueAgeSeconds)
    }

    private func sleepUntilWork(_ conn: PGConnection) throws {
        var timeout = config.pollInterval
        if let next = try QueueStore(connection: conn).jobNextRunAt() {
            timeout = min(timeout, max(0, next.timeIntervalSinceNow))
        }
        if timeout > 0 { _ = try conn.waitForNotifications(timeout: timeout) }
    }

    private func ensureConnection() throws -> PGConnection {
        if let c = connection, c.isHealthy { return c }
        let c = try Self.open(databaseURL, statementTimeout: config.statementTimeoutMillis,
                              lockTimeout: config.lockTimeoutMillis)
        try c.listen("pushfleet_jobs")
        connection = c
        return c
    }

    static func open(_ url: String, statementTimeout: Int, lockTimeout: Int) throws -> PGConnection {
        let c = try PGConnection.connect(url)
        try c.setStatementTimeout(milliseconds: statementTimeout)
        try c.setLockTimeout(milliseconds: lockTimeout)
        return c
    }

    /// Maps a recorded ending (`sent` or an error code) to PushCore's `DeliveryEnding`.
    static func ending(_ text: String) -> DeliveryEnding {
        if text == "sent" { return .sent }
        if text == ErrorCode.appMismatch.rawValue { return .appMismatch(.device) }
        return .failed(ErrorCode(rawValue: text) ?? .providerError)
    }
}
