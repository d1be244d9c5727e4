import Foundation

/// The queue's executor: one method per database operation, noun first, over one connection
/// (not thread-safe: one `QueueStore` per thread). Every method is a constant number of round
/// trips whatever the batch size. SQL lives in `JobQueries`.
public final class QueueStore {
    /// The connection this store runs on.
    public let connection: PGConnection

    /// Wraps an open connection.
    public init(connection: PGConnection) {
        self.connection = connection
    }

    // MARK: - Claim and lease

    /// Claims up to `limit` due jobs for `owner`, leased for `leaseSeconds` (round-robin across
    /// apps within a window of `window` due jobs), no more than fit `deviceBudget` devices in all and
    /// `appDeviceBudget` (default: `deviceBudget`) per app, at least one job either way; within a
    /// turn smaller jobs first. Commits at once (no transaction stays open).
    /// A claimed row that cannot be decoded (a malformed row in the queue) is failed at once with
    /// `UNDECODABLE_ROW` and its reason as the job's last error (retried in a minute, set aside once
    /// out of attempts), and left out of the answer: the rest of the claim goes on. A job that can
    /// never run (its notification or app row missing: `ORPHANED_JOB`; a stored text over 65,536
    /// bytes: `OVERSIZED_ROW`) is set aside at once (discarded, the problem as its last error) and
    /// left out too. Throws `PGError` on database failure.
    public func jobClaimBatch(owner: String, limit: Int, leaseSeconds: Double, window: Int = 1000,
                              deviceBudget: Int = 2_000, appDeviceBudget: Int? = nil,
                              now: Date? = nil) throws -> [ClaimedJob] {
        let r = try connection.execPrepared(name: "job_claim_batch", sql: JobQueries.claimBatch, params: [
            now.map(PGValue.date), .int(limit), .text(owner), .double(leaseSeconds), .int(max(window, limit)),
            .int(max(1, deviceBudget)), .int(max(1, appDeviceBudget ?? deviceBudget)),
        ])
        let columns = try ClaimColumns(r)
        return try r.rows.compactMap { i in
            if let problem: String = try r.decode(i, columns.problem) {
                try jobDiscard(id: try r.int64(i, columns.id), leaseToken: try r.uuid(i, columns.leaseToken), error: problem)
                return nil
            }
            do {
                return try Self.claimedJob(r, i, columns)
            } catch let error as PGError where error.code == .decode {
                _ = try jobFail(id: try r.int64(i, "id"), leaseToken: try r.uuid(i, "lease_token"),
                                error: "UNDECODABLE_ROW: \(error.message)", retryAt: Date().addingTimeInterval(60))
                return nil
            }
        }
    }

    /// One row of the claim statement.
    private static func claimedJob(_ r: PGResult, _ i: Int, _ k: ClaimColumns) throws -> ClaimedJob {
        let kind = try r.string(i, k.kind)
        let ids: [UUID]? = try r.isNull(i, k.deviceIds) ? nil : try Self.uuidArray(r.string(i, k.deviceIds))
        let notification = NotificationRow(
            id: try r.uuid(i, k.notificationId), appID: try r.uuid(i, k.appId),
            mode: try r.string(i, k.mode), status: try r.string(i, k.status),
            title: try r.decode(i, k.title), body: try r.decode(i, k.body), data: try r.decode(i, k.data),
            badge: try r.decode(i, k.badge), sound: try r.decode(i, k.sound),
            threadID: try r.decode(i, k.threadId), collapseKey: try r.decode(i, k.collapseKey),
            priority: try r.string(i, k.priority), ttlSeconds: try r.int(i, k.ttlSeconds),
            acceptedAt: try r.date(i, k.acceptedAt), sendAt: try r.decode(i, k.sendAt),
            expiresAt: try r.date(i, k.expiresAt), encrypted: try r.decode(i, k.encrypted),
            hasSMSFallback: try r.bool(i, k.hasSms), kindFields: try k.kinds.fields(r, i))
        let app = AppPolicyRow(requireEncryption: try r.bool(i, k.requireEncryption),
                               placeholderTitle: try r.string(i, k.placeholderTitle),
                               placeholderBody: try r.string(i, k.placeholderBody),
                               placeholderTitleLocKey: try r.decode(i, k.kinds.placeholderTitleLocKey),
                               placeholderBodyLocKey: try r.decode(i, k.kinds.placeholderBodyLocKey),
                               deleted: try r.bool(i, k.appDeleted))
        return ClaimedJob(id: try r.int64(i, k.id), kind: kind, deviceIDs: ids,
                          leaseToken: try r.uuid(i, k.leaseToken), attempt: try r.int(i, k.attempt),
                          maxAttempts: try r.int(i, k.maxAttempts), notification: notification, app: app)
    }

    /// Extends the leases of `jobs` (id, lease token) by `leaseSeconds` from now. Returns the ids
    /// still held; a job missing from the answer was lost (rescued and claimed by another worker).
    public func jobHeartbeat(_ jobs: [(id: Int64, leaseToken: UUID)], leaseSeconds: Double) throws -> Set<Int64> {
        if jobs.isEmpty { return [] }
        let r = try connection.execPrepared(name: "job_heartbeat", sql: JobQueries.heartbeat, params: [
            .int64Array(jobs.map { $0.id }), .uuidArray(jobs.map { $0.leaseToken }), .double(leaseSeconds),
        ])
        return Set(try r.rows.map { try r.int64($0, "id") })
    }

    /// Puts back running jobs whose lease expired; discards those out of attempts. Returns
    /// (rescued, discarded) counts.
    public func jobRescueExpired(now: Date? = nil) throws -> (rescued: Int, discarded: Int) {
        let r = try connection.execPrepared(name: "job_rescue", sql: JobQueries.rescueExpired,
                                            params: [now.map(PGValue.date)])
        var rescued = 0, discarded = 0
        for i in r.rows { if try r.string(i, "state") == "discarded" { discarded += 1 } else { rescued += 1 } }
        return (rescued, discarded)
    }

    /// Records that processing job `id` failed as a whole (`error` is kept for operators): retried
    /// at `retryAt`, or discarded when out of attempts. Returns the new state, nil if the lease was lost.
    @discardableResult
    public func jobFail(id: Int64, leaseToken: UUID, error: String, retryAt: Date) throws -> String? {
        let r = try connection.execPrepared(name: "job_fail", sql: JobQueries.failJob, params: [
            .int64(id), .uuid(leaseToken), .text(error), .date(retryAt),
        ])
        return r.rowCount == 0 ? nil : try r.string(0, "state")
    }

    /// Gives job `id` back untouched (graceful shutdown), without spending an attempt.
    public func jobRelease(id: Int64, leaseToken: UUID) throws {
        _ = try connection.execPrepared(name: "job_release", sql: JobQueries.releaseJob,
                                        params: [.int64(id), .uuid(leaseToken)])
    }

    /// Sets job `id` aside at once (`discarded`, `error` as its last error) whatever its attempts
    /// left: for a job that can never succeed (`jobs list --state discarded` shows it, `jobs retry`
    /// puts it back). Returns false when the lease token no longer matches. Throws `PGError`.
    @discardableResult
    public func jobDiscard(id: Int64, leaseToken: UUID, error: String) throws -> Bool {
        try connection.execPrepared(name: "job_discard", sql: JobQueries.discardJob,
                                    params: [.int64(id), .uuid(leaseToken), .text(error)]).rowCount == 1
    }

    /// Gives several jobs back untouched in one round trip (see `jobRelease`); a job whose lease
    /// token no longer matches is left alone.
    public func jobReleaseMany(_ jobs: [(id: Int64, leaseToken: UUID)]) throws {
        if jobs.isEmpty { return }
        _ = try connection.execPrepared(name: "job_release_many", sql: JobQueries.releaseJobs,
                                        params: [.int64Array(jobs.map { $0.id }), .uuidArray(jobs.map { $0.leaseToken })])
    }

    /// The earliest `run_at` among available jobs (due or scheduled), nil when the queue is empty.
    public func jobNextRunAt() throws -> Date? {
        let r = try connection.execPrepared(name: "job_next_run_at", sql: JobQueries.nextRunAt, params: [])
        return try r.decode(0, "next")
    }

    /// Jobs in `state`, newest first, at most `limit`.
    public func jobList(state: String, limit: Int = 100) throws -> [JobSummary] {
        let r = try connection.exec(JobQueries.listJobs, [.text(state), .int(limit)])
        return try r.rows.map { i in
            JobSummary(id: try r.int64(i, "id"), kind: try r.string(i, "kind"),
                       notificationID: try r.uuid(i, "notification_id"), state: try r.string(i, "state"),
                       attempt: try r.int(i, "attempt"), maxAttempts: try r.int(i, "max_attempts"),
                       runAt: try r.date(i, "run_at"), lastError: try r.decode(i, "last_error"),
                       devices: try r.int(i, "devices"))
        }
    }

    /// Puts a discarded job back with fresh attempts. Returns false when no discarded job has that id.
    public func jobRetry(id: Int64) throws -> Bool {
        try connection.exec(JobQueries.retryJob, [.int64(id)]).rowCount == 1
    }

    /// Queue depth by state, due now, age of the oldest due job.
    public func queueStats() throws -> QueueStats {
        let r = try connection.exec(JobQueries.stats)
        return QueueStats(available: try r.int64(0, "available"), due: try r.int64(0, "due"),
                          running: try r.int64(0, "running"), discarded: try r.int64(0, "discarded"),
                          completed: try r.int64(0, "completed"), cancelled: try r.int64(0, "cancelled"),
                          oldestDueAgeSeconds: try r.double(0, "oldest_due_age_seconds"))
    }

    // MARK: - Send time and batches

    /// The send-time step of notification job `job` (R-SEND-2): policy read once, audience resolved,
    /// DEVICE_GONE refunds, split into batches of at most `batchSize`. Throws `PGError` whose message
    /// starts with `LEASE_LOST` when the lease was lost.
    public func notificationStart(job: ClaimedJob, batchSize: Int, now: Date? = nil) throws -> NotificationStart {
        let r = try connection.execPrepared(name: "notification_start", sql: JobQueries.startNotification, params: [
            .int64(job.id), .uuid(job.leaseToken), .int(batchSize), now.map(PGValue.date),
        ])
        let inline: [UUID]? = try r.isNull(0, "inline_device_ids") ? nil : try Self.uuidArray(r.string(0, "inline_device_ids"))
        return NotificationStart(inlineDeviceIDs: inline, batchJobs: try r.int(0, "batch_jobs"),
                                 gone: try r.int(0, "gone"), encrypted: try r.bool(0, "encrypted"))
    }

    /// The send-time step of several notification jobs in one round trip, keyed by job id. Throws
    /// when any of them fails (a lost lease, a notification no longer pending): nothing of that
    /// statement is kept, and the caller starts the jobs one by one with `notificationStart`.
    public func notificationStartMany(_ jobs: [ClaimedJob], batchSize: Int, now: Date? = nil) throws -> [Int64: NotificationStart] {
        if jobs.isEmpty { return [:] }
        let r = try connection.execPrepared(name: "notification_start_many", sql: JobQueries.startNotifications, params: [
            .int64Array(jobs.map { $0.id }), .uuidArray(jobs.map { $0.leaseToken }), .int(batchSize), now.map(PGValue.date),
        ])
        var out: [Int64: NotificationStart] = [:]
        for i in r.rows {
            let inline: [UUID]? = try r.isNull(i, "inline_device_ids") ? nil : try Self.uuidArray(r.string(i, "inline_device_ids"))
            out[try r.int64(i, "job_id")] = NotificationStart(inlineDeviceIDs: inline, batchJobs: try r.int(i, "batch_jobs"),
                                                              gone: try r.int(i, "gone"), encrypted: try r.bool(i, "encrypted"))
        }
        return out
    }

    /// Loads a batch's devices (keys, targeting at send time, delivery progress, charge) in one round trip.
    public func batchLoadDevices(notificationID: UUID, deviceIDs: [UUID]) throws -> [BatchDeviceRow] {
        try batchLoadDevicesMany([(notificationID, deviceIDs)])[0]
    }

    /// Loads the devices of several batches in one round trip; one array per batch, in order.
    public func batchLoadDevicesMany(_ batches: [(notificationID: UUID, deviceIDs: [UUID])]) throws -> [[BatchDeviceRow]] {
        var index: [Int64] = [], notifications: [UUID?] = [], devices: [UUID?] = []
        for (i, b) in batches.enumerated() {
            for d in b.deviceIDs {
                index.append(Int64(i + 1))
                notifications.append(b.notificationID)
                devices.append(d)
            }
        }
        var out = [[BatchDeviceRow]](repeating: [], count: batches.count)
        if devices.isEmpty { return out }
        let r = try connection.execPrepared(name: "batch_load_devices", sql: JobQueries.loadBatchDevices,
                                            params: [.int64Array(index), .uuidArray(notifications), .uuidArray(devices)])
        let k = try DeviceColumns(r)
        for i in r.rows {
            let row = BatchDeviceRow(
                deviceID: try r.uuid(i, k.deviceId), found: try r.bool(i, k.found),
                targeted: try r.bool(i, k.targeted), platform: try r.decode(i, k.platform),
                token: try r.decode(i, k.token), endpoint: try r.decode(i, k.endpoint),
                p256dh: try r.decode(i, k.p256dh), authSecret: try r.decode(i, k.authSecret),
                apnsEnvironment: try r.decode(i, k.apnsEnvironment),
                publicKey: try r.decode(i, k.publicKey), kid: try r.decode(i, k.kid),
                lastRegisteredAt: try r.decode(i, k.lastRegisteredAt),
                deliveryStatus: try r.decode(i, k.deliveryStatus), attempts: try r.int(i, k.attempts),
                failures: try r.int(i, k.failures),
                nextAttemptAt: try r.decode(i, k.nextAttemptAt), charged: try r.bool(i, k.charged),
                apnsID: try r.uuid(i, k.apnsId))
            out[try r.int(i, k.batch) - 1].append(row)
        }
        return out
    }

    /// Records a batch in one transaction guarded by the lease: deliveries, ledger, deactivations
    /// and their events, credential states, the successor retry job, the job's completion; and,
    /// when it was the notification's last batch, its final state as `decideFinal` (PushCore's
    /// R-SEND-6 rule) says. Throws `PGError` (message `LEASE_LOST...`) when the lease was lost:
    /// nothing is written then.
    public func batchRecord(job: ClaimedJob, records: [DeliveryRecord], credentials: CredentialChanges = .init(),
                            now: Date? = nil,
                            decideFinal: (_ endings: [String], _ hasSMS: Bool) -> NotificationFinal) throws -> BatchRecordResult {
        let results = try batchRecordMany([BatchOutcome(job: job, records: records, credentials: credentials)],
                                          now: now, decideFinal: decideFinal)
        guard let result = results[job.id] else {
            throw PGError(code: .decode, message: "push_record_batches returned no row for job \(job.id)")
        }
        return result
    }

    /// Records several batches in one transaction and two round trips at most (the records, then
    /// the final states of the notifications whose last batch this was). All or nothing: when one
    /// job's lease was lost the whole call throws and nothing is written, so the caller can record
    /// the others one by one with `batchRecord`.
    public func batchRecordMany(_ outcomes: [BatchOutcome], now: Date? = nil,
                                decideFinal: (_ endings: [String], _ hasSMS: Bool) -> NotificationFinal) throws -> [Int64: BatchRecordResult] {
        if outcomes.isEmpty { return [:] }
        var jobCounts: [Int64] = []
        var records: [DeliveryRecord] = []
        var invalidIndex: [Int64] = [], invalidKinds: [String?] = [], invalidReasons: [String?] = []
        var acceptedIndex: [Int64] = [], acceptedKinds: [String?] = []
        for (i, o) in outcomes.enumerated() {
            jobCounts.append(Int64(o.records.count))
            records.append(contentsOf: o.records)
            for c in o.credentials.invalid { invalidIndex.append(Int64(i + 1)); invalidKinds.append(c.kind); invalidReasons.append(c.reason) }
            for k in o.credentials.accepted { acceptedIndex.append(Int64(i + 1)); acceptedKinds.append(k) }
        }
        return try connection.transaction { conn in
            let r = try conn.execPrepared(name: "batch_record_many", sql: JobQueries.recordBatches, params: [
                .int64Array(outcomes.map { $0.job.id }), .uuidArray(outcomes.map { $0.job.leaseToken }),
                .int64Array(jobCounts),
                .uuidArray(records.map { $0.deviceID }),
                .textArray(records.map { $0.status }),
                .textArray(records.map { $0.errorCode }),
                .textArray(records.map { $0.errorDetail }),
                .boolArray(records.map { $0.encrypted }),
                .textArray(records.map { $0.provider }),
                .textArray(records.map { $0.providerMessageID }),
                .int64Array(records.map { Int64($0.attempts) }),
                .int64Array(records.map { Int64($0.failures) }),
                .dateArray(records.map { $0.nextAttemptAt }),
                .byteaArray(records.map { $0.payload }),
                .boolArray(records.map { $0.netsCharge }),
                .textArray(records.map { $0.deactivateReason }),
                .dateArray(records.map { $0.verdictAt }),
                .int64Array(invalidIndex), .textArray(invalidKinds), .textArray(invalidReasons),
                .int64Array(acceptedIndex), .textArray(acceptedKinds),
                now.map(PGValue.date),
            ])
            var results: [Int64: BatchRecordResult] = [:]
            var finals: [(UUID, NotificationFinal)] = []
            let notificationOf = Dictionary(outcomes.map { ($0.job.id, $0.job.notification.id) }, uniquingKeysWith: { a, _ in a })
            for i in r.rows {
                let jobID = try r.int64(i, "job_id")
                let remaining = try r.int(i, "remaining_batches")
                let hasSMS = try r.bool(i, "has_sms")
                var endings: [String]? = nil
                if remaining == 0, let notification = notificationOf[jobID] {
                    let list = try r.isNull(i, "endings") ? [] : Self.textArray(try r.string(i, "endings"))
                    endings = list
                    // Two batches of one notification in one claim: only the last one finalizes.
                    finals.removeAll { $0.0 == notification }
                    finals.append((notification, decideFinal(list, hasSMS)))
                }
                results[jobID] = BatchRecordResult(remainingBatches: remaining, deactivated: try r.int(i, "deactivated"),
                                                   endings: endings, hasSMSFallback: hasSMS)
            }
            if !finals.isEmpty {
                _ = try conn.execPrepared(name: "notification_finalize_many", sql: JobQueries.finalizeNotifications, params: [
                    .uuidArray(finals.map { $0.0 }), .textArray(finals.map { $0.1.status }),
                    .textArray(finals.map { $0.1.errorCode }), now.map(PGValue.date),
                ])
            }
            return results
        }
    }

    // MARK: - Array text decoding (PostgreSQL array output of uuid[] and text[] of codes)

    /// Parses `{a,b,c}` of uuids.
    static func uuidArray(_ text: String) throws -> [UUID] {
        var text = text
        if let ids = text.withUTF8({ PGUUIDText.parseArray(bytes: $0) }) { return ids }
        // Not the plain `{uuid,uuid,...}` PostgreSQL prints: the general parser, for its error.
        return try textArray(text).map { s in
            guard let u = PGUUIDText.parse(s) else {
                throw PGError(code: .decode, message: "not a uuid in array: \(s.prefix(40))")
            }
            return u
        }
    }

    /// Parses a one-dimensional PostgreSQL array literal of simple or quoted elements, over its
    /// UTF-8 bytes (the delimiters are ASCII, so a multi-byte character never splits).
    static func textArray(_ text: String) throws -> [String] {
        var text = text
        return try text.withUTF8 { bytes -> [String] in
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else {
                throw PGError(code: .decode, message: "not an array literal")
            }
            if bytes.count == 2 { return [] }
            var out: [String] = []
            var current: [UInt8] = []
            var quoted = false, escaped = false
            for c in bytes[1 ..< bytes.count - 1] {
                if escaped { current.append(c); escaped = false; continue }
                if quoted {
                    if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { quoted = false } else { current.append(c) }
                    continue
                }
                if c == UInt8(ascii: "\"") { quoted = true; continue }
                if c == UInt8(ascii: ",") {
                    out.append(String(decoding: current, as: UTF8.self))
                    current.removeAll(keepingCapacity: true)
                    continue
                }
                current.append(c)
            }
            out.append(String(decoding: current, as: UTF8.self))
            return out
        }
    }
}
