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
    /// apps within a window of `window` due jobs). Commits at once (no transaction stays open).
    /// Throws `PGError` on database failure, or on a row that cannot be decoded.
    public func jobClaimBatch(owner: String, limit: Int, leaseSeconds: Double, window: Int = 1000,
                              now: Date? = nil) throws -> [ClaimedJob] {
        let r = try connection.execPrepared(name: "job_claim_batch", sql: JobQueries.claimBatch, params: [
            now.map(PGValue.date), .int(limit), .text(owner), .double(leaseSeconds), .int(max(window, limit)),
        ])
        return try r.rows.map { i in
            let kind = try r.string(i, "kind")
            let ids: [UUID]? = try r.isNull(i, "device_ids") ? nil : try Self.uuidArray(r.string(i, "device_ids"))
            let notification = NotificationRow(
                id: try r.uuid(i, "notification_id"), appID: try r.uuid(i, "app_id"),
                mode: try r.string(i, "mode"), status: try r.string(i, "status"),
                title: try r.decode(i, "title"), body: try r.decode(i, "body"), data: try r.decode(i, "data"),
                badge: try r.decode(i, "badge"), sound: try r.decode(i, "sound"),
                threadID: try r.decode(i, "thread_id"), collapseKey: try r.decode(i, "collapse_key"),
                priority: try r.string(i, "priority"), ttlSeconds: try r.int(i, "ttl_seconds"),
                acceptedAt: try r.date(i, "accepted_at"), sendAt: try r.decode(i, "send_at"),
                expiresAt: try r.date(i, "expires_at"), encrypted: try r.decode(i, "encrypted"),
                hasSMSFallback: try r.bool(i, "has_sms"))
            let app = AppPolicyRow(requireEncryption: try r.bool(i, "require_encryption"),
                                   placeholderTitle: try r.string(i, "placeholder_title"),
                                   placeholderBody: try r.string(i, "placeholder_body"),
                                   deleted: try r.bool(i, "app_deleted"))
            return ClaimedJob(id: try r.int64(i, "id"), kind: kind, deviceIDs: ids,
                              leaseToken: try r.uuid(i, "lease_token"), attempt: try r.int(i, "attempt"),
                              maxAttempts: try r.int(i, "max_attempts"), notification: notification, app: app)
        }
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

    /// Loads a batch's devices (keys, targeting at send time, delivery progress, charge) in one round trip.
    public func batchLoadDevices(notificationID: UUID, deviceIDs: [UUID]) throws -> [BatchDeviceRow] {
        let r = try connection.execPrepared(name: "batch_load_devices", sql: JobQueries.loadBatchDevices,
                                            params: [.uuid(notificationID), .uuidArray(deviceIDs)])
        return try r.rows.map { i in
            BatchDeviceRow(deviceID: try r.uuid(i, "device_id"), found: try r.bool(i, "found"),
                           targeted: try r.bool(i, "targeted"), platform: try r.decode(i, "platform"),
                           token: try r.decode(i, "token"), endpoint: try r.decode(i, "endpoint"),
                           p256dh: try r.decode(i, "p256dh"), authSecret: try r.decode(i, "auth_secret"),
                           apnsEnvironment: try r.decode(i, "apns_environment"),
                           publicKey: try r.decode(i, "public_key"), kid: try r.decode(i, "kid"),
                           lastRegisteredAt: try r.decode(i, "last_registered_at"),
                           deliveryStatus: try r.decode(i, "delivery_status"), attempts: try r.int(i, "attempts"),
                           failures: try r.int(i, "failures"),
                           nextAttemptAt: try r.decode(i, "next_attempt_at"), charged: try r.bool(i, "charged"),
                           apnsID: try r.uuid(i, "apns_id"))
        }
    }

    /// Records a batch in one transaction guarded by the lease: deliveries, ledger, deactivations
    /// and their events, credential states, the successor retry job, the job's completion; and,
    /// when it was the notification's last batch, its final state as `decideFinal` (PushCore's
    /// R-SEND-6 rule) says. Throws `PGError` (message `LEASE_LOST...`) when the lease was lost:
    /// nothing is written then.
    public func batchRecord(job: ClaimedJob, records: [DeliveryRecord], credentials: CredentialChanges = .init(),
                            now: Date? = nil,
                            decideFinal: (_ endings: [String], _ hasSMS: Bool) -> NotificationFinal) throws -> BatchRecordResult {
        try connection.transaction { conn in
            let r = try conn.execPrepared(name: "batch_record", sql: JobQueries.recordBatch, params: [
                .int64(job.id), .uuid(job.leaseToken),
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
                .textArray(credentials.invalid.map { $0.kind }),
                .textArray(credentials.invalid.map { $0.reason }),
                .textArray(credentials.accepted),
                now.map(PGValue.date),
            ])
            let remaining = try r.int(0, "remaining_batches")
            let hasSMS = try r.bool(0, "has_sms")
            var endings: [String]? = nil
            if remaining == 0 {
                let list = try r.isNull(0, "endings") ? [] : Self.textArray(try r.string(0, "endings"))
                endings = list
                let final = decideFinal(list, hasSMS)
                _ = try conn.execPrepared(name: "notification_finalize", sql: JobQueries.finalizeNotification,
                                          params: [.uuid(job.notification.id), .text(final.status),
                                                   final.errorCode.map(PGValue.text), now.map(PGValue.date)])
            }
            return BatchRecordResult(remainingBatches: remaining, deactivated: try r.int(0, "deactivated"),
                                     endings: endings, hasSMSFallback: hasSMS)
        }
    }

    // MARK: - Array text decoding (PostgreSQL array output of uuid[] and text[] of codes)

    /// Parses `{a,b,c}` of uuids.
    static func uuidArray(_ text: String) throws -> [UUID] {
        try textArray(text).map { s in
            guard let u = PGUUIDText.parse(s) else {
                throw PGError(code: .decode, message: "not a uuid in array: \(s.prefix(40))")
            }
            return u
        }
    }

    /// Parses a one-dimensional PostgreSQL array literal of simple or quoted elements.
    static func textArray(_ text: String) throws -> [String] {
        var chars = Substring(text)
        guard chars.first == "{", chars.last == "}" else {
            throw PGError(code: .decode, message: "not an array literal")
        }
        chars = chars.dropFirst().dropLast()
        if chars.isEmpty { return [] }
        var out: [String] = []
        var current = ""
        var quoted = false, escaped = false
        for c in chars {
            if escaped { current.append(c); escaped = false; continue }
            if quoted {
                if c == "\\" { escaped = true } else if c == "\"" { quoted = false } else { current.append(c) }
                continue
            }
            if c == "\"" { quoted = true; continue }
            if c == "," {
                out.append(current); current = ""; continue
            }
            current.append(c)
        }
        out.append(current)
        return out
    }
}
