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
    private var stopRequestedAt: Date?
    /// Outcomes computed and sent but not recorded because the database connection broke: kept
    /// (their jobs stay held, so heartbeats keep the leases) and recorded once a connection is
    /// back, never sent again. A job whose lease was lost meanwhile is dropped (its new owner
    /// sends it). See `recordDeferred`.
    private var deferredRecords: [BatchOutcome] = []
    /// Claimed jobs not sent, whose give-back could not be written (the connection broke): given
    /// back first thing on the next connection, or before exiting.
    private var deferredReleases: [(id: Int64, leaseToken: UUID)] = []
    private var lastRescue = Date.distantPast
    private var lastStats = Date.distantPast
    private var lastMaintenance = Date.distantPast
    /// The connection's statement count at the last logged record: each record line reports the
    /// round trips since the previous one (the claim and start for the first chunk of a claim, then
    /// load and record per chunk), constant whatever the chunk's size.
    private var claimStatements = 0

    /// Round trips since the previous record line.
    private func roundTrips(_ store: QueueStore) -> Int {
        let n = store.connection.statementCount - claimStatements
        claimStatements = store.connection.statementCount
        return n
    }
    /// Retention and cleanup, run by one worker of the fleet at a time; nil disables it.
    public var maintainer: Maintainer? = Maintainer(config: .fromEnvironment())
    /// SMS fallbacks (R-SMS-1), on their own thread and connection beside the job loop; nil: none.
    public var smsDispatcher: SMSDispatcher?
    /// Webhook delivery, on its own thread and connection beside the job loop; nil: none.
    public var webhookDispatcher: WebhookDispatcher?
    private let readiness: ReadinessGate
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
        self.readiness = ReadinessGate(metrics: metrics, log: log)
        self.processor = try BatchProcessor(router: router, retryPolicy: config.retryPolicy, metrics: metrics)
        let url = databaseURL
        let timeouts = (config.statementTimeoutMillis, config.lockTimeoutMillis)
        self.keeper = LeaseKeeper(leaseSeconds: config.leaseSeconds, log: log) {
            try Worker.open(url, statementTimeout: timeouts.0, lockTimeout: timeouts.1)
        }
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

    /// Outcomes waiting to be recorded after a broken connection (see `deferredRecords`); read it
    /// from the thread that runs the worker.
    public var deferredRecordCount: Int { deferredRecords.count }

    /// Jobs waiting to be given back after a broken connection (see `deferredReleases`).
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
                let conn = try ensureConnection()
                guard try readiness.admit(conn) else {  // schema too old or read-only: claim nothing
                    connection = nil  // a fresh session picks up changed server settings
                    pause(backoff)
                    backoff = min(backoff * 2, 5)
                    continue
                }
                let n = try runOnce(connection: conn)
                backoff = 0.2
                if n < config.claimLimit && !isStopping {
                    try sleepUntilWork(conn)
                }
            } catch {
                metrics.dbErrors.increment()
                readiness.markUnreachable()
                log.warn("worker.db_error", ["error": String(describing: error).prefix(300), "retry_in_s": backoff])
                connection = nil
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

    /// On the way out: outcomes already sent but not yet recorded (the connection broke) are
    /// recorded now, retrying a lost connection with backoff until 2 s before the drain deadline;
    /// what still cannot be written stays running under this worker's lease and is rescued when the
    /// lease expires (its pushes are then sent again: at least once, R-SEND-8's row stays one).
    private func finishDeferredRecords() {
        guard !deferredRecords.isEmpty || !deferredReleases.isEmpty else { return }
        let deadline = (stopLock.withLock { stopRequestedAt } ?? Date()).addingTimeInterval(max(0, config.drainSeconds - 2))
        var backoff = 0.1
        while (!deferredRecords.isEmpty || !deferredReleases.isEmpty) && Date() < deadline {
            do {
                try recordDeferred(QueueStore(connection: try ensureConnection()))
            } catch {
                connection = nil
                pause(min(backoff, max(0, deadline.timeIntervalSinceNow)))
                backoff = min(backoff * 2, 2)
            }
        }
        if !deferredRecords.isEmpty || !deferredReleases.isEmpty {
            log.error("worker.records_unwritten", ["sent_jobs": deferredRecords.count, "unsent_jobs": deferredReleases.count,
                                                   "effect": "rescued when their leases expire, the sent ones sent again"])
        }
    }

    /// Records the deferred outcomes on `store`, oldest first. A lost lease drops that outcome (its
    /// job's new owner delivers it); any other job-level error goes through `handleFailure`.
    /// - Throws: `PGError` when the connection fails again (the rest stay deferred).
    func recordDeferred(_ store: QueueStore) throws {
        if !deferredReleases.isEmpty {
            try store.jobReleaseMany(deferredReleases)
            for job in deferredReleases { keeper.release(job.id) }
            log.info("claim.released_deferred", ["jobs": deferredReleases.count])
            deferredReleases.removeAll()
        }
        while let o = deferredRecords.first {
            do {
                let result = try store.batchRecord(job: o.job, records: o.records, credentials: o.credentials,
                                                   decideFinal: Self.decideFinal)
                deferredRecords.removeFirst()
                keeper.release(o.job.id)
                count(o.records, credentials: o.credentials)
                log.info("batch.record", ["job_id": o.job.id, "notification_id": o.job.notification.id,
                                          "devices": o.records.count, "remaining_batches": result.remainingBatches,
                                          "deferred": true])
            } catch let e as PGError where Self.isConnectionFailure(e) {
                throw e
            } catch {
                deferredRecords.removeFirst()
                handleFailure(o.job, error, store: store)
            }
        }
    }

    /// True for an error that says nothing about the job: the connection to the server broke.
    static func isConnectionFailure(_ error: Error) -> Bool {
        guard let e = error as? PGError else { return false }
        return e.code == .connection || e.connectionBroken
    }

    /// One claim and the processing of what it returned. Returns the number of jobs claimed.
    /// Throws `PGError` when the database fails outside a job (the claim itself).
    @discardableResult
    public func runOnce(connection conn: PGConnection, now: Date = Date()) throws -> Int {
        let store = QueueStore(connection: conn)
        try recordDeferred(store)
        if now.timeIntervalSince(lastRescue) >= config.rescueInterval {
            let r = try store.jobRescueExpired()
            if r.rescued + r.discarded > 0 { log.warn("queue.rescue", ["rescued": r.rescued, "discarded": r.discarded]) }
            lastRescue = now
        }
        if now.timeIntervalSince(lastStats) >= config.statsInterval {
            refreshQueueGauges(store)
            lastStats = now
        }
        if let maintainer, now.timeIntervalSince(lastMaintenance) >= maintainer.config.interval {
            lastMaintenance = now
            let r = try maintainer.runOnce(connection: conn, now: now)
            if r.ranLeader && r.jobs + r.smsOutbox + r.deliveries + r.events + r.devices + r.erased + r.smsErased > 0 {
                log.info("maintenance.run", ["jobs": r.jobs, "sms_outbox": r.smsOutbox, "deliveries": r.deliveries,
                                             "events": r.events, "devices": r.devices, "erased": r.erased,
                                             "sms_erased": r.smsErased])
            }
        }
        claimStatements = store.connection.statementCount
        let jobs = try store.jobClaimBatch(owner: config.owner, limit: config.claimLimit, leaseSeconds: config.leaseSeconds,
                                           deviceBudget: config.groupDeviceLimit,
                                           appDeviceBudget: config.appDeviceBudget)
        metrics.jobsClaimed.increment(by: Double(jobs.count))
        if !jobs.isEmpty { log.debug("queue.claim", ["jobs": jobs.count, "job_ids": jobs.map { String($0.id) }.joined(separator: ",")]) }
        for job in jobs { keeper.hold(job.id, token: job.leaseToken) }
        if isStopping {
            // Graceful shutdown: give back what was claimed but not started.
            do {
                try store.jobReleaseMany(jobs.map { ($0.id, $0.leaseToken) })
                for job in jobs { keeper.release(job.id) }
            } catch {
                deferredReleases += jobs.map { ($0.id, $0.leaseToken) }   // retried before exiting
            }
            return jobs.count
        }
        let runnable = jobs.filter { job in
            guard let problem = Self.malformed(job) else { return true }
            setAside(job, "MALFORMED_JOB: \(problem)", store: store)
            return false
        }
        if runnable.count == 1 {
            process(runnable[0], store: store)
        } else if !runnable.isEmpty {
            processGroup(runnable, store: store)
        }
        // A job still held here was neither recorded nor failed (its writes could not reach the
        // database, or a heartbeat saw it lost): give it back now, guarded by its lease token, rather
        // than leave it running until its lease expires.
        let deferred = Set(deferredRecords.map(\.job.id))
        for job in jobs where !deferred.contains(job.id) {
            if keeper.isHeld(job.id) {
                do {
                    try store.jobRelease(id: job.id, leaseToken: job.leaseToken)
                } catch where Self.isConnectionFailure(error) {
                    deferredReleases.append((job.id, job.leaseToken))   // given back on the next connection
                    continue
                } catch {
                    log.warn("job.release_failed", ["job_id": job.id, "error": String(describing: error).prefix(200)])
                }
            }
            keeper.release(job.id)
        }
        processedJobs += jobs.count
        return jobs.count
    }

    /// A started job of a claim: the job, whether it is sealed, and its devices.
    typealias GroupInput = (job: ClaimedJob, encrypted: Bool, deviceIDs: [UUID])

    /// Processes a claim's jobs together: one round trip starts every notification job, one loads
    /// every batch's devices, one processor pass seals and sends them all, one transaction records
    /// them all. On an error before anything was sent, each job is processed alone; after sending,
    /// each job's already computed outcome is recorded alone (never sent again).
    func processGroup(_ jobs: [ClaimedJob], store: QueueStore) {
        let started = Date()
        let starts: [Int64: NotificationStart]
        do {
            starts = try store.notificationStartMany(jobs.filter { $0.kind == "notification" }, batchSize: config.batchSize)
        } catch {
            log.debug("group.start_fallback", ["jobs": jobs.count, "error": String(describing: error).prefix(200)])
            for job in jobs { process(job, store: store) }
            return
        }
        var inputs: [GroupInput] = []
        for var job in jobs {
            var encrypted = job.notification.encrypted ?? job.app.requireEncryption
            var deviceIDs = job.deviceIDs ?? []
            if job.kind == "notification", let start = starts[job.id] {
                log.debug("notification.start", ["notification_id": job.notification.id, "batches": start.batchJobs,
                                                "gone": start.gone, "encrypted": start.encrypted])
                guard let inline = start.inlineDeviceIDs else {  // split into batch jobs, this job completed
                    keeper.release(job.id)
                    continue
                }
                // The job is now the notification's single batch (push_start_notification turned it).
                job.kind = "batch"
                job.deviceIDs = inline
                job.notification.encrypted = start.encrypted
                encrypted = start.encrypted
                deviceIDs = inline
            }
            inputs.append((job, encrypted, deviceIDs))
        }
        inputs = giveBackOverBudget(Self.smallFirst(inputs, smallJobDevices: config.smallJobDevices), store: store)
        // Load, seal, send and record in chunks of at most `groupDeviceLimit` devices (a claim of
        // large batches must not become one huge transaction; a chunk's cost stays bounded). Small
        // jobs go first, in a chunk of their own: a notification claimed beside another app's
        // broadcast batch is sent and recorded before that batch is sealed (issue 4, fairness).
        var chunk: [GroupInput] = []
        var devicesInChunk = 0
        var chunkHasSmall = false
        for input in inputs {
            let large = input.deviceIDs.count > config.smallJobDevices
            if !chunk.isEmpty && (devicesInChunk + input.deviceIDs.count > config.groupDeviceLimit || (large && chunkHasSmall)) {
                chunkHasSmall = false
                processChunk(chunk, store: store, started: started)
                chunk = []
                devicesInChunk = 0
            }
            chunk.append(input)
            devicesInChunk += input.deviceIDs.count
            if !large { chunkHasSmall = true }
        }
        if !chunk.isEmpty { processChunk(chunk, store: store, started: started) }
    }

    /// Keeps the claim's jobs, in order, while their devices fit `groupDeviceLimit` (at least one),
    /// and gives the others back at once (lease-token guarded, no attempt spent): a notification job
    /// weighs one device in the claim, and once started it may hold up to a batch of devices, so
    /// a claim of many started audiences would otherwise hold the worker (and the other apps' work
    /// behind it) for many chunks. A job given back is a batch job now, weighed by its devices by
    /// the next claim. Returns the jobs kept.
    private func giveBackOverBudget(_ inputs: [GroupInput], store: QueueStore) -> [GroupInput] {
        var kept: [GroupInput] = []
        var over: [ClaimedJob] = []
        var devices = 0
        for input in inputs {
            if kept.isEmpty || devices + input.deviceIDs.count <= config.groupDeviceLimit {
                kept.append(input)
                devices += input.deviceIDs.count
            } else {
                over.append(input.job)
            }
        }
        if over.isEmpty { return kept }
        do {
            try store.jobReleaseMany(over.map { ($0.id, $0.leaseToken) })
            for job in over { keeper.release(job.id) }
            log.debug("claim.give_back", ["jobs": over.count, "devices_kept": devices])
            return kept
        } catch {
            // Could not give them back (the database failed): process them in this claim instead.
            return inputs
        }
    }

    /// The claim's jobs with those of at most `smallJobDevices` devices first, each part in claim order.
    static func smallFirst(_ inputs: [GroupInput], smallJobDevices: Int) -> [GroupInput] {
        inputs.filter { $0.deviceIDs.count <= smallJobDevices } + inputs.filter { $0.deviceIDs.count > smallJobDevices }
    }

    /// Load, process and record one chunk of a claim (see `processGroup`).
    private func processChunk(_ inputs: [GroupInput], store: QueueStore, started: Date) {
        if inputs.count == 1 {
            processStarted(inputs[0].job, encrypted: inputs[0].encrypted, deviceIDs: inputs[0].deviceIDs,
                           store: store, started: started)
            return
        }
        let loaded: [[BatchDeviceRow]]
        do {
            loaded = try store.batchLoadDevicesMany(inputs.map { ($0.job.notification.id, $0.deviceIDs) })
        } catch {
            for input in inputs {
                processStarted(input.job, encrypted: input.encrypted, deviceIDs: input.deviceIDs, store: store, started: started)
            }
            return
        }
        let outputs = processor.processMany(
            zip(inputs, loaded).map { BatchProcessor.Input(job: $0.0.job, encrypted: $0.0.encrypted, devices: $0.1) },
            now: Date())
        var outcomes: [BatchOutcome] = []
        for (input, output) in zip(inputs, outputs) {
            if keeper.isLost(input.job.id) {
                log.warn("batch.lease_lost", ["job_id": input.job.id])
                continue
            }
            outcomes.append(BatchOutcome(job: input.job, records: output.records, credentials: output.credentials))
        }
        do {
            let results = try store.batchRecordMany(outcomes, decideFinal: Self.decideFinal)
            var devices = 0, finished = 0
            for o in outcomes {
                keeper.release(o.job.id)
                count(o.records, credentials: o.credentials)
                let r = results[o.job.id]
                devices += o.records.count
                if r?.remainingBatches == 0 { finished += 1 }
                log.debug("batch.record", ["job_id": o.job.id, "notification_id": o.job.notification.id,
                                          "devices": o.records.count, "remaining_batches": r?.remainingBatches ?? -1,
                                          "deactivated": r?.deactivated ?? 0, "grouped": outcomes.count,
                                          "round_trips": store.connection.statementCount - claimStatements,
                                          "ms": Int(Date().timeIntervalSince(started) * 1000)])
            }
            // One line per claim cycle at info; the per-job lines above are debug.
            log.info("claim.record", ["jobs": outcomes.count, "devices": devices, "notifications_finished": finished,
                                      "round_trips": roundTrips(store),
                                      "ms": Int(Date().timeIntervalSince(started) * 1000)])
        } catch {
            // Nothing of the grouped record was written (one lost lease fails it all): record each
            // job's computed outcome on its own, without sending anything again.
            log.debug("group.record_fallback", ["jobs": outcomes.count, "error": String(describing: error).prefix(200)])
            for o in outcomes { record(o, store: store, started: started) }
        }
    }

    /// Processes one claimed job; never throws: a failure is recorded on the job (retry / discard).
    func process(_ job: ClaimedJob, store: QueueStore) {
        let started = Date()
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
            processStarted(job, encrypted: encrypted, deviceIDs: deviceIDs, store: store, started: started)
        } catch {
            handleFailure(job, error, store: store)
        }
    }

    /// Processes one batch whose send-time step is done: load, plan, seal, send, record; never throws.
    private func processStarted(_ job: ClaimedJob, encrypted: Bool, deviceIDs: [UUID], store: QueueStore, started: Date) {
        do {
            let devices = try store.batchLoadDevices(notificationID: job.notification.id, deviceIDs: deviceIDs)
            let (records, credentials) = processor.process(job: job, encrypted: encrypted, devices: devices, now: Date())
            if keeper.isLost(job.id) {
                log.warn("batch.lease_lost", ["job_id": job.id])
                return
            }
            record(BatchOutcome(job: job, records: records, credentials: credentials), store: store, started: started)
        } catch {
            handleFailure(job, error, store: store)
        }
    }

    /// Times a record is run when the server aborts it with a deadlock (`40P01`) or a serialization
    /// failure (`40001`): the transaction was rolled back whole, so running it again writes the same
    /// outcome once (the registry's one lock-order exception can still meet a record, sql/LOCK_ORDER.md).
    static let recordAttempts = 3

    /// Records one batch's computed outcome in its own lease-guarded transaction; never throws.
    private func record(_ o: BatchOutcome, store: QueueStore, started: Date) {
        do {
            var attempt = 1
            let result: BatchRecordResult
            while true {
                do {
                    result = try store.batchRecord(job: o.job, records: o.records, credentials: o.credentials,
                                                   decideFinal: Self.decideFinal)
                    break
                } catch let e as PGError where (e.sqlState == "40P01" || e.sqlState == "40001") && attempt < Self.recordAttempts {
                    log.warn("batch.record_retry", ["job_id": o.job.id, "sqlstate": e.sqlState ?? "", "attempt": attempt])
                    attempt += 1
                    Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.05))
                }
            }
            keeper.release(o.job.id)
            count(o.records, credentials: o.credentials)
            log.info("batch.record", ["job_id": o.job.id, "notification_id": o.job.notification.id,
                                      "devices": o.records.count, "remaining_batches": result.remainingBatches,
                                      "deactivated": result.deactivated,
                                      "round_trips": roundTrips(store),
                                      "ms": Int(Date().timeIntervalSince(started) * 1000)])
        } catch where Self.isConnectionFailure(error) {
            // Sent, not recorded: keep the outcome and the lease; record it when the connection is back.
            deferredRecords.append(o)
            log.warn("batch.record_deferred", ["job_id": o.job.id, "devices": o.records.count,
                                               "error": String(describing: error).prefix(200)])
        } catch {
            handleFailure(o.job, error, store: store)
        }
    }

    /// Why a claimed job can never run, or nil. The queue only makes batch jobs when a notification
    /// starts (status `sending`), and ends a notification when its last batch is recorded: a batch
    /// job of a pending or final notification is a malformed row (written by hand, or by a bug), and
    /// running it would send a scheduled notification early, or again.
    static func malformed(_ job: ClaimedJob) -> String? {
        switch (job.kind, job.notification.status) {
        case ("batch", "sending"), ("notification", "pending"): return nil
        case ("batch", let status): return "a batch job of a notification that is \(status), not sending"
        case ("notification", let status): return "a notification job of a notification that is \(status), not pending"
        default: return "unknown job kind \(job.kind.prefix(40))"
        }
    }

    /// Sets a job that can never succeed aside at once (discarded with `reason`), never sending it.
    private func setAside(_ job: ClaimedJob, _ reason: String, store: QueueStore) {
        metrics.dbErrors.increment()
        let state: String
        do {
            state = try store.jobDiscard(id: job.id, leaseToken: job.leaseToken, error: reason) ? "discarded" : "lease_lost"
            keeper.release(job.id)
        } catch {
            state = "unwritten"
        }
        log.error("job.set_aside", ["job_id": job.id, "notification_id": job.notification.id, "state": state,
                                    "error": reason.prefix(300)])
    }

    /// A job whose processing failed: a lost lease is left to its new owner; a job that can never
    /// succeed (its notification is no longer pending: NOT_PENDING; or gone: ORPHANED_JOB) is set
    /// aside at once; anything
    /// else is retried later with backoff, and set aside (discarded) once out of attempts.
    private func handleFailure(_ job: ClaimedJob, _ error: Error, store: QueueStore) {
        if let e = error as? PGError, e.message.contains("LEASE_LOST") {
            keeper.release(job.id)
            log.warn("batch.lease_lost", ["job_id": job.id])
            return
        }
        if let e = error as? PGError, e.message.contains("NOT_PENDING") || e.message.contains("ORPHANED_JOB") {
            setAside(job, String(describing: e), store: store)
            return
        }
        metrics.dbErrors.increment()
        let attempt = Double(max(1, job.attempt))
        let retryAt = Date().addingTimeInterval(min(300, pow(2, attempt)))
        let state: String
        do {
            // nil: the lease token no longer matches (another worker holds the job now).
            state = try store.jobFail(id: job.id, leaseToken: job.leaseToken, error: String(describing: error),
                                      retryAt: retryAt) ?? "lease_lost"
            keeper.release(job.id)
        } catch {
            // The failure could not be written either (no connection): the job stays running under this
            // lease and is given back at the end of the claim, or rescued when the lease expires.
            state = "unwritten"
        }
        log.error("job.failed", ["job_id": job.id, "attempt": job.attempt, "state": state,
                                 "error": String(describing: error).prefix(300)])
    }

    /// PushCore's R-SEND-6 decision for a notification whose last batch was recorded.
    static func decideFinal(_ endings: [String], _ hasSMS: Bool) -> NotificationFinal {
        let outcome = NotificationOutcome.final(endings: endings.map(Self.ending), hasSMSFallback: hasSMS)
        return NotificationFinal(status: outcome.status.rawValue, errorCode: outcome.errorCode?.rawValue)
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

    /// Sleeps `seconds`, waking early when a stop is requested.
    private func pause(_ seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while !isStopping && Date() < end { Thread.sleep(forTimeInterval: min(0.05, max(0, end.timeIntervalSinceNow))) }
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
