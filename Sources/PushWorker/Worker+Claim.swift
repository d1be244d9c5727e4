import Foundation
import PushCore
import PushStore

/// One claim, start to record. Every claim takes the same path whatever its size (a single job is
/// a claim of one): one round trip starts every notification job, one loads every chunk's devices,
/// one processor pass seals and sends the chunk, one transaction records it; the outcomes held back
/// by a broken session are recorded later by the same `record`.
extension Worker {
    /// A started job of a claim: the job, whether it is sealed, and its devices.
    typealias GroupInput = (job: ClaimedJob, encrypted: Bool, deviceIDs: [UUID])

    /// One claim and the processing of what it returned. Returns the number of jobs claimed.
    /// - Throws: the store's error when the claim itself (or a chore before it) fails.
    @discardableResult
    public func runOnce(store: QueueStore, now: Date = Date()) throws -> Int {
        try recordDeferred(store)
        try chores(store, now: now)
        claimStatements = store.roundTrips
        let jobs = try store.jobClaim(ClaimRequest(owner: config.owner, limit: config.claimLimit,
                                                   leaseSeconds: config.leaseSeconds, deviceBudget: config.groupDeviceLimit,
                                                   appDeviceBudget: config.appDeviceBudget,
                                                   retryPolicy: config.jobRetryPolicy))
        metrics.jobsClaimed.increment(by: Double(jobs.count))
        if !jobs.isEmpty { log.debug("queue.claim", ["jobs": jobs.count, "job_ids": jobs.map { String($0.id) }.joined(separator: ",")]) }
        for job in jobs { keeper.hold(job.id, token: job.leaseToken) }
        if isStopping {
            // Graceful shutdown: give back what was claimed but not started.
            giveBack(jobs.map(\.lease), store: store)
            return jobs.count
        }
        let runnable = jobs.filter { job in
            guard let problem = job.kind.malformation(notification: job.notification.status) else { return true }
            setAside(job, "MALFORMED_JOB: \(problem)", store: store)
            return false
        }
        process(runnable, store: store)
        // A job still held here was neither recorded nor failed (its writes could not reach the
        // database, or a heartbeat saw it lost): give it back now, guarded by its lease token, rather
        // than leave it running until its lease expires.
        let deferred = Set(deferredRecords.map(\.job.id))
        let leftover = jobs.filter { !deferred.contains($0.id) && keeper.isHeld($0.id) }
        giveBack(leftover.map(\.lease), store: store)
        processedJobs += jobs.count
        return jobs.count
    }

    /// Gives `leases` back (lease-token guarded, no attempt spent); when the session is broken,
    /// keeps them for the next session.
    private func giveBack(_ leases: [JobLease], store: QueueStore) {
        if leases.isEmpty { return }
        do {
            try store.jobRelease(leases)
        } catch QueueStoreError.connectionLost {
            deferredReleases += leases.filter { lease in !deferredReleases.contains(lease) }
            return
        } catch {
            log.warn("job.release_failed", ["jobs": leases.count, "error": String(describing: error).prefix(200)])
        }
        for lease in leases { keeper.release(lease.id) }
    }

    /// Starts the claim's notification jobs, then loads, sends and records its batches in chunks.
    func process(_ jobs: [ClaimedJob], store: QueueStore) {
        let started = Date()
        soleBatches = []
        for job in jobs where job.kind == .split { split(job, store: store) }
        let starts = start(jobs.filter { $0.kind == .notification }, store: store)
        var inputs: [GroupInput] = []
        for var job in jobs where job.kind != .split {
            if job.kind == .batch {
                inputs.append((job, job.notification.encrypted ?? job.app.requireEncryption, job.deviceIDs ?? []))
                continue
            }
            switch starts[job.id] {
            case nil:
                continue   // its start failed: handled there (retried, or left for the next session)
            case .leaseLost?:
                keeper.release(job.id)
                log.warn("batch.lease_lost", ["job_id": job.id])
            case .orphaned?:
                setAside(job, "ORPHANED_JOB: job \(job.id) has no notification row", store: store)
            case .notPending(let state)?:
                setAside(job, "NOT_PENDING: notification \(job.notification.id.uuidString.lowercased()) is \(state.rawValue)",
                         store: store)
            case .started(let s)?:
                log.debug("notification.start", ["notification_id": PrefixedID.format(.notification, job.notification.id), "batches": s.batchJobs,
                                                "gone": s.gone, "encrypted": s.encrypted])
                guard let inline = s.inlineDeviceIDs else {  // split into batch jobs, this job completed
                    keeper.release(job.id)
                    continue
                }
                // The job is now the notification's single batch (the start turned it into one).
                job.kind = .batch
                job.deviceIDs = inline
                job.notification.encrypted = s.encrypted
                job.notification.contentMode = s.contentMode
                job.notification.status = .sending
                if s.gone == 0 && s.batchJobs <= 1 { soleBatches.insert(job.id) }
                inputs.append((job, s.encrypted, inline))
            }
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
                guard processChunk(chunk, store: store, started: started) else { return }
                chunk = []
                devicesInChunk = 0
            }
            chunk.append(input)
            devicesInChunk += input.deviceIDs.count
            if !large { chunkHasSmall = true }
        }
        if !chunk.isEmpty { _ = processChunk(chunk, store: store, started: started) }
    }

    /// One step of a whole-app audience's split (issue 22): one transaction that streams the next
    /// chunk of the device index into batch jobs and gives the job back to the queue (or makes it
    /// the last batch), so other apps' jobs are claimed between two steps. A failure retries the
    /// job after `jobRetryPolicy`'s delay; the cursor it left is durable, so nothing is split twice.
    private func split(_ job: ClaimedJob, store: QueueStore) {
        do {
            let outcome = try store.audienceSplit(job.lease, batchSize: config.batchSize, request: config.split, now: nil)
            keeper.release(job.id)
            switch outcome {
            case .split(let jobs, let devices, let charged):
                log.debug("audience.split", ["notification_id": PrefixedID.format(.notification, job.notification.id), "batch_jobs": jobs, "devices": devices,
                                            "charged": charged])
            case .done(let jobs, let devices, let charged):
                log.info("audience.split_done", ["notification_id": PrefixedID.format(.notification, job.notification.id), "batch_jobs": jobs,
                                                 "devices": devices, "charged": charged])
            case .throttled:
                log.debug("audience.split_throttled", ["notification_id": PrefixedID.format(.notification, job.notification.id)])
            case .notSending:
                log.info("audience.split_stopped", ["notification_id": PrefixedID.format(.notification, job.notification.id)])
            case .leaseLost:
                log.warn("batch.lease_lost", ["job_id": job.id])
            case .orphaned:
                setAside(job, "ORPHANED_JOB: job \(job.id) has no notification row", store: store)
            }
        } catch QueueStoreError.connectionLost {
            return   // still held: given back at the end of the claim, or on the next session
        } catch {
            handleFailure(job, error, store: store)
        }
    }

    /// The send-time step of `jobs`, one answer per job. A failure of the whole call isolates the
    /// job at fault by starting them one at a time; a broken session leaves them held (given back
    /// at the end of the claim, or on the next session).
    private func start(_ jobs: [ClaimedJob], store: QueueStore) -> [Int64: StartOutcome] {
        if jobs.isEmpty { return [:] }
        do {
            return try store.notificationStart(jobs.map(\.lease), batchSize: config.batchSize,
                                               goneLedger: LedgerRule.action(for: .failed(.deviceGone), chargedAtAcceptance: true),
                                               now: nil)
        } catch QueueStoreError.connectionLost {
            return [:]
        } catch {
            guard jobs.count > 1 else {
                handleFailure(jobs[0], error, store: store)
                return [:]
            }
            log.debug("group.start_fallback", ["jobs": jobs.count, "error": String(describing: error).prefix(200)])
            var out: [Int64: StartOutcome] = [:]
            for job in jobs { out.merge(start([job], store: store)) { a, _ in a } }
            return out
        }
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
            try store.jobRelease(over.map(\.lease))
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

    /// Loads, processes and records one chunk of a claim. Returns false when the session broke
    /// (the rest of the claim is left for the next session).
    private func processChunk(_ inputs: [GroupInput], store: QueueStore, started: Date) -> Bool {
        let loaded: [[BatchDeviceRow]]
        do {
            loaded = try store.batchLoadDevices(inputs.map { DeviceBatch(notificationID: $0.job.notification.id,
                                                                         deviceIDs: $0.deviceIDs) })
        } catch QueueStoreError.connectionLost {
            return false
        } catch {
            guard inputs.count > 1 else {
                handleFailure(inputs[0].job, error, store: store)
                return true
            }
            // Isolate the job at fault: each one loaded (and sent, and recorded) on its own.
            for input in inputs where !processChunk([input], store: store, started: started) { return false }
            return true
        }
        let outputs = processor.processMany(
            zip(inputs, loaded).map { BatchProcessor.Input(job: $0.0.job, encrypted: $0.0.encrypted, devices: $0.1) },
            now: Date())
        var outcomes: [BatchOutcome] = []
        let sentAt = Date()
        for (i, input) in inputs.enumerated() {
            if let since = confirmingApps[input.job.notification.appID], since <= sentAt {
                countSent(input.job.notification, outputs[i].records, loaded[i])
            }
        }
        for (input, output) in zip(inputs, outputs) {
            if keeper.isLost(input.job.id) {
                keeper.release(input.job.id)
                log.warn("batch.lease_lost", ["job_id": input.job.id])
                continue
            }
            let final = soleBatches.contains(input.job.id)
                ? BatchOutcome.soleBatchFinal(output.records, hasSMSFallback: input.job.notification.hasSMSFallback,
                                              decide: Self.decideFinal)
                : nil
            outcomes.append(BatchOutcome(job: input.job, records: output.records, credentials: output.credentials,
                                         final: final))
        }
        return record(outcomes, store: store, started: started, deferred: false)
    }

    /// Counts the pushes providers accepted for an app with `confirm_deliveries`, by platform
    /// (`pushfleet_pushes_sent_total`, R-IDS-4): at send, once per provider acceptance, when the
    /// app's `confirm_deliveries_since` is at or before the send (`PreviewQueries.counted`'s rule,
    /// as of the worker's last refresh of the apps, every `statsInterval`).
    private func countSent(_ n: NotificationRow, _ records: [DeliveryRecord], _ devices: [BatchDeviceRow]) {
        var platforms: [UUID: String] = [:]
        for d in devices { platforms[d.deviceID] = d.platform }
        var sent: [String: Int] = [:]
        for r in records where r.status == .sent { sent[platforms[r.deviceID] ?? ConfirmationMetrics.other, default: 0] += 1 }
        let app = PrefixedID.format(.app, n.appID)
        for (platform, count) in sent { metrics.pushesSent.add(app: app, mode: n.mode.rawValue, platform: platform, Double(count)) }
    }

    /// Times a record runs when the server aborts it with a deadlock or a serialization failure:
    /// the transaction was rolled back whole, so running it again writes the same outcome once.
    static let recordAttempts = 3

    /// The one record path: records `outcomes` (already sent) in one transaction and lets go of
    /// their jobs. A lost lease drops that job's outcome to its new owner; a broken session keeps
    /// the outcomes for the next one (`deferredRecords`: never sent again) and returns false; any
    /// other failure of a call of several jobs records each alone, so only the job at fault fails.
    @discardableResult
    func record(_ outcomes: [BatchOutcome], store: QueueStore, started: Date, deferred: Bool) -> Bool {
        if outcomes.isEmpty { return true }
        let results: [Int64: RecordOutcome]
        do {
            var attempt = 1
            while true {
                do {
                    results = try store.batchRecord(outcomes, now: nil, decideFinal: Self.decideFinal)
                    break
                } catch QueueStoreError.conflict(let why) where attempt < Self.recordAttempts {
                    log.warn("batch.record_retry", ["jobs": outcomes.count, "error": why.prefix(200), "attempt": attempt])
                    attempt += 1
                    Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.05))
                }
            }
        } catch QueueStoreError.connectionLost(let why) {
            // Sent, not recorded: keep the outcomes and the leases; record them when a session is back.
            deferredRecords += outcomes
            log.warn("batch.record_deferred", ["jobs": outcomes.count, "devices": outcomes.reduce(0) { $0 + $1.records.count },
                                               "error": why.prefix(200)])
            return false
        } catch {
            guard outcomes.count > 1 else {
                handleFailure(outcomes[0].job, error, store: store)
                return true
            }
            log.debug("group.record_fallback", ["jobs": outcomes.count, "error": String(describing: error).prefix(200)])
            for (i, o) in outcomes.enumerated() where !record([o], store: store, started: started, deferred: deferred) {
                deferredRecords += outcomes[(i + 1)...]
                return false
            }
            return true
        }
        var devices = 0, finished = 0, recorded = 0
        for o in outcomes {
            guard case .recorded(let r)? = results[o.job.id] else {
                if results[o.job.id] == .orphaned {
                    setAside(o.job, "ORPHANED_JOB: job \(o.job.id) has no notification row", store: store)
                } else {
                    log.warn("batch.lease_lost", ["job_id": o.job.id, "deferred": deferred])
                }
                keeper.release(o.job.id)
                continue
            }
            keeper.release(o.job.id)
            recorded += 1
            count(o.records, credentials: o.credentials)
            devices += o.records.count
            if r.remainingBatches == 0 { finished += 1 }
            log.debug("batch.record", ["job_id": o.job.id, "notification_id": PrefixedID.format(.notification, o.job.notification.id),
                                      "devices": o.records.count, "remaining_batches": r.remainingBatches,
                                      "deactivated": r.deactivated])
        }
        // One line per record call at info; the per-job lines above are debug.
        log.info("claim.record", ["jobs": recorded, "devices": devices, "notifications_finished": finished,
                                  "round_trips": roundTrips(store), "deferred": deferred,
                                  "ms": Int(Date().timeIntervalSince(started) * 1000)])
        return true
    }

    /// Round trips since the previous record line.
    private func roundTrips(_ store: QueueStore) -> Int {
        let n = store.roundTrips - claimStatements
        claimStatements = store.roundTrips
        return n
    }

    /// PushCore's R-SEND-6 decision for a notification whose last batch was recorded.
    static let decideFinal: FinalDecision = { NotificationOutcome.final(endings: $0, hasSMSFallback: $1) }
}
