import Foundation
import PushCore

/// The queue on PostgreSQL: `QueueStore` over one connection (not thread-safe: one per thread).
/// Every method is a constant number of round trips whatever the batch size; the SQL lives in
/// `JobQueries` and the functions of sql/functions/. Errors leave as `QueueStoreError`
/// (`PGQueueStore.storeError` maps the server's), so the worker never reads a message.
public final class PGQueueStore: QueueStore {
    /// The connection this store runs on.
    public let connection: PGConnection

    /// Wraps an open connection (the caller LISTENs on `JobQueries.channel` for `waitForWork`).
    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Opens a worker session: connects, sets the statement and lock timeouts (milliseconds) and
    /// listens for new work. - Throws: `QueueStoreError.connectionLost` when the server is unreachable.
    public static func open(_ url: String, statementTimeoutMillis: Int, lockTimeoutMillis: Int,
                            listen: Bool = true) throws -> PGQueueStore {
        try run {
            let c = try PGConnection.connect(url)
            try c.setStatementTimeout(milliseconds: statementTimeoutMillis)
            try c.setLockTimeout(milliseconds: lockTimeoutMillis)
            if listen { try c.listen(JobQueries.channel) }
            return PGQueueStore(connection: c)
        }
    }

    public var roundTrips: Int { connection.statementCount }

    public var maintenance: MaintenanceStore? { MaintenanceStore(connection: connection) }

    public func healthProbe(required: [Int]) throws -> DatabaseHealth {
        try Self.run { try HealthStore(connection: connection).healthProbe(required: required) }
    }

    public func servePlatforms(_ platforms: [PlatformTraits]) throws {
        try Self.run { _ = try PlatformStore(connection: connection).serve(platforms) }
    }

    public func waitForWork(timeout: Double) throws {
        try Self.run { _ = try connection.waitForNotifications(timeout: timeout) }
    }

    public var isHealthy: Bool { connection.isHealthy }

    // MARK: - Claim and lease

    public func jobClaim(_ q: ClaimRequest) throws -> [ClaimedJob] {
        try Self.run {
            let r = try connection.execPrepared(name: "job_claim_batch", sql: JobQueries.claimBatch, params: [
                q.now.map(PGValue.date), .int(q.limit), .text(q.owner), .double(q.leaseSeconds), .int(q.window),
                .int(q.deviceBudget), .int(q.appDeviceBudget),
            ])
            let columns = try ClaimColumns(r)
            return try r.rows.compactMap { i in
                // A job that can never run (its notification or app row missing: ORPHANED_JOB; a stored
                // text over 65,536 bytes: OVERSIZED_ROW) is set aside at once, never loaded.
                if let problem: String = try r.decode(i, columns.problem) {
                    _ = try jobDiscard(JobLease(id: try r.int64(i, columns.id), token: try r.uuid(i, columns.leaseToken)),
                                       error: problem)
                    return nil
                }
                do {
                    return try Self.claimedJob(r, i, columns)
                } catch let error as PGError where error.code == .decode {
                    let attempt = (try? r.int(i, columns.attempt)) ?? 1
                    _ = try jobFail(JobLease(id: try r.int64(i, columns.id), token: try r.uuid(i, columns.leaseToken)),
                                    error: "UNDECODABLE_ROW: \(error.message)",
                                    retryAt: Date().addingTimeInterval(q.retryPolicy.delay(afterAttempt: attempt)))
                    return nil
                }
            }
        }
    }

    /// One row of the claim statement; an unknown kind, mode, status or priority is `DB_DECODE`.
    private static func claimedJob(_ r: PGResult, _ i: Int, _ k: ClaimColumns) throws -> ClaimedJob {
        let ids: [UUID]? = try r.isNull(i, k.deviceIds) ? nil : try PGArrayText.uuids(r.string(i, k.deviceIds))
        let notification = NotificationRow(
            id: try r.uuid(i, k.notificationId), appID: try r.uuid(i, k.appId),
            mode: try r.decode(i, k.mode), status: try r.decode(i, k.status),
            title: try r.decode(i, k.title), body: try r.decode(i, k.body), data: try r.decode(i, k.data),
            badge: try r.decode(i, k.badge), sound: try r.decode(i, k.sound),
            threadID: try r.decode(i, k.threadId), collapseKey: try r.decode(i, k.collapseKey),
            priority: try r.decode(i, k.priority), ttlSeconds: try r.int(i, k.ttlSeconds),
            acceptedAt: try r.date(i, k.acceptedAt), sendAt: try r.decode(i, k.sendAt),
            expiresAt: try r.date(i, k.expiresAt), encrypted: try r.decode(i, k.encrypted),
            contentMode: try r.decode(i, k.contentMode), hasSMSFallback: try r.bool(i, k.hasSms), kindFields: try k.kinds.fields(r, i))
        let app = AppPolicyRow(requireEncryption: try r.bool(i, k.requireEncryption),
                               placeholderTitle: try r.string(i, k.placeholderTitle),
                               placeholderBody: try r.string(i, k.placeholderBody),
                               placeholderTitleLocKey: try r.decode(i, k.kinds.placeholderTitleLocKey),
                               placeholderBodyLocKey: try r.decode(i, k.kinds.placeholderBodyLocKey),
                               deleted: try r.bool(i, k.appDeleted))
        return ClaimedJob(id: try r.int64(i, k.id), kind: try r.decode(i, k.kind), deviceIDs: ids,
                          leaseToken: try r.uuid(i, k.leaseToken), attempt: try r.int(i, k.attempt),
                          maxAttempts: try r.int(i, k.maxAttempts), notification: notification, app: app)
    }

    public func jobHeartbeat(_ leases: [JobLease], leaseSeconds: Double) throws -> Set<Int64> {
        if leases.isEmpty { return [] }
        return try Self.run {
            let r = try connection.execPrepared(name: "job_heartbeat", sql: JobQueries.heartbeat, params: [
                .int64Array(leases.map(\.id)), .uuidArray(leases.map(\.token)), .double(leaseSeconds),
            ])
            return Set(try r.rows.map { try r.int64($0, "id") })
        }
    }

    public func jobRescueExpired(now: Date? = nil) throws -> RescueCounts {
        try Self.run {
            let r = try connection.execPrepared(name: "job_rescue", sql: JobQueries.rescueExpired,
                                                params: [now.map(PGValue.date)])
            var counts = RescueCounts(rescued: 0, discarded: 0)
            for i in r.rows {
                if try r.decode(i, "state", as: JobState.self) == .discarded { counts.discarded += 1 } else { counts.rescued += 1 }
            }
            return counts
        }
    }

    @discardableResult
    public func jobFail(_ lease: JobLease, error: String, retryAt: Date) throws -> JobState? {
        try Self.run {
            let r = try connection.execPrepared(name: "job_fail", sql: JobQueries.failJob, params: [
                .int64(lease.id), .uuid(lease.token), .text(error), .date(retryAt),
            ])
            return r.rowCount == 0 ? nil : try r.decode(0, "state", as: JobState.self)
        }
    }

    @discardableResult
    public func jobDiscard(_ lease: JobLease, error: String) throws -> Bool {
        try Self.run {
            try connection.execPrepared(name: "job_discard", sql: JobQueries.discardJob,
                                        params: [.int64(lease.id), .uuid(lease.token), .text(error)]).rowCount == 1
        }
    }

    public func jobRelease(_ leases: [JobLease]) throws {
        if leases.isEmpty { return }
        try Self.run {
            _ = try connection.execPrepared(name: "job_release_many", sql: JobQueries.releaseJobs,
                                            params: [.int64Array(leases.map(\.id)), .uuidArray(leases.map(\.token))])
        }
    }

    public func jobNextRunAt() throws -> Date? {
        try Self.run {
            try connection.execPrepared(name: "job_next_run_at", sql: JobQueries.nextRunAt, params: []).decode(0, "next")
        }
    }

    public func confirmingApps(limit: Int) throws -> [UUID: Date] {
        try Self.run {
            let r = try connection.exec(JobQueries.confirmingApps, [.int(limit)])
            var apps: [UUID: Date] = [:]
            for i in r.rows { apps[try r.uuid(i, "id")] = try r.date(i, "confirm_deliveries_since") }
            return apps
        }
    }

    public func queueStats() throws -> QueueStats {
        try Self.run {
            let r = try connection.exec(JobQueries.stats)
            return QueueStats(available: try r.int64(0, "available"), due: try r.int64(0, "due"),
                              running: try r.int64(0, "running"), discarded: try r.int64(0, "discarded"),
                              completed: try r.int64(0, "completed"), cancelled: try r.int64(0, "cancelled"),
                              oldestDueAgeSeconds: try r.double(0, "oldest_due_age_seconds"))
        }
    }

    // MARK: - Operators (the CLI's, not the worker's)

    /// Jobs in `state`, newest first, at most `limit`. Throws `PGError`.
    public func jobList(state: JobState, limit: Int = 100) throws -> [JobSummary] {
        let r = try connection.exec(JobQueries.listJobs, [.text(state.rawValue), .int(limit)])
        return try r.rows.map { i in
            JobSummary(id: try r.int64(i, "id"), kind: try r.decode(i, "kind"),
                       notificationID: try r.uuid(i, "notification_id"), state: try r.decode(i, "state"),
                       attempt: try r.int(i, "attempt"), maxAttempts: try r.int(i, "max_attempts"),
                       runAt: try r.date(i, "run_at"), lastError: try r.decode(i, "last_error"),
                       devices: try r.int(i, "devices"))
        }
    }

    /// Puts a discarded job back with fresh attempts. False when no discarded job has that id.
    public func jobRetry(id: Int64) throws -> Bool {
        try connection.exec(JobQueries.retryJob, [.int64(id)]).rowCount == 1
    }

    // MARK: - Errors

    /// Runs `body`, turning a `PGError` into the `QueueStoreError` the worker acts on.
    static func run<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PGError {
            throw storeError(e)
        }
    }

    /// A lost connection (libpq saw it break, SQLSTATE class 08, an administrator's shutdown) is
    /// `connectionLost`; `40P01` / `40001` are `conflict`; anything else `failed` with its text.
    public static func storeError(_ e: PGError) -> QueueStoreError {
        if e.isConnectionLost { return .connectionLost(e.description) }
        if e.sqlState == "40P01" || e.sqlState == "40001" { return .conflict(e.description) }
        return .failed(e.description)
    }
}

/// PostgreSQL sessions for a worker: each connects to `url` with the worker's statement and lock
/// timeouts; the loop's session LISTENs for new work.
public struct PGQueueSessions: QueueSessions {
    public var url: String
    public var statementTimeoutMillis: Int
    public var lockTimeoutMillis: Int

    /// Sessions on `url` (libpq URI or conninfo).
    public init(url: String, statementTimeoutMillis: Int = 15_000, lockTimeoutMillis: Int = 5_000) {
        self.url = url
        self.statementTimeoutMillis = statementTimeoutMillis
        self.lockTimeoutMillis = lockTimeoutMillis
    }

    public func openWorkerSession() throws -> QueueStore {
        try PGQueueStore.open(url, statementTimeoutMillis: statementTimeoutMillis, lockTimeoutMillis: lockTimeoutMillis)
    }

    public func openHeartbeatSession() throws -> QueueStore {
        try PGQueueStore.open(url, statementTimeoutMillis: statementTimeoutMillis, lockTimeoutMillis: lockTimeoutMillis,
                              listen: false)
    }

    /// `push_provider_pauses` through a connection of its own, with this session's timeouts.
    public func openPauseStore() -> PauseStore? {
        let url = url, statement = statementTimeoutMillis, lock = lockTimeoutMillis
        return PGPauseStore {
            let c = try PGConnection.connect(url)
            try c.setStatementTimeout(milliseconds: statement)
            try c.setLockTimeout(milliseconds: lock)
            return c
        }
    }
}
