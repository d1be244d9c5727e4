import Foundation

/// The fleet's housekeeping, run by one worker at a time (`withMaintenanceLock`): device cleanup
/// (R-DEV-7) and retention of finished jobs, deliveries, delivered events and notification content.
///
/// Every operation handles at most `limit` rows, the oldest first, in one statement (its own
/// transaction when called outside one), and returns how many it handled: call it again while it
/// returns `limit`. Rows another session holds locked are skipped for this round, never waited on.
/// Cutoffs are instants compared with the server-written timestamps.
public final class MaintenanceStore {
    /// Key of the session advisory lock held by `withMaintenanceLock` ("pushmnt1" as ASCII).
    public static let lockKey: Int64 = 0x7075_7368_6d6e_7431
    /// R-DEV-7: deactivated devices are deleted after this long (30 days), in seconds.
    public static let deactivatedDeviceRetention: TimeInterval = 30 * 86_400

    /// The session every call runs on.
    public let connection: PGConnection

    /// A store on `connection` (one thread at a time, like the connection).
    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Runs `body` while this session holds the fleet's maintenance lock
    /// (`pg_try_advisory_lock(lockKey)`, session level), then releases it.
    /// - Returns: `body`'s value, or nil without running it when another session holds the lock.
    /// - Throws: whatever `body` throws (the lock is released first); `PGError` from taking it.
    ///   A lock whose session dies is released by the server.
    public func withMaintenanceLock<T>(_ body: () throws -> T) throws -> T? {
        guard try connection.exec(MaintenanceQueries.tryLock, [.int64(Self.lockKey)]).bool(0, "locked") else {
            return nil
        }
        defer { _ = try? connection.exec(MaintenanceQueries.unlock, [.int64(Self.lockKey)]) }
        return try body()
    }

    /// R-DEV-7: deletes up to `limit` devices deactivated before `olderThan` (normally now minus
    /// `deactivatedDeviceRetention`), oldest deactivation first. Their delivery rows stay.
    /// - Returns: the number of devices deleted (0...limit). - Throws: `PGError`.
    @discardableResult
    public func deleteDeactivatedDevices(olderThan: Date, limit: Int) throws -> Int {
        try run(MaintenanceQueries.deleteDeactivatedDevices, olderThan, limit)
    }

    /// Deletes up to `limit` jobs that reached a final state (completed, discarded, cancelled)
    /// before `olderThan`. - Returns: the number deleted. - Throws: `PGError`.
    @discardableResult
    public func pruneFinishedJobs(olderThan: Date, limit: Int) throws -> Int {
        try run(MaintenanceQueries.pruneFinishedJobs, olderThan, limit)
    }

    /// Deletes up to `limit` SMS outbox rows (kind `sms`) that ended before `olderThan`; their
    /// SMS's outcome stays (push_sms_outbox). - Returns: the number deleted. - Throws: `PGError`.
    @discardableResult
    public func pruneFinishedSMSOutbox(olderThan: Date, limit: Int) throws -> Int {
        try run(MaintenanceQueries.pruneFinishedSMSOutbox, olderThan, limit)
    }

    /// Deletes up to `limit` final delivery rows (sent or failed) finished before `olderThan`;
    /// rows still retrying are kept. - Returns: the number deleted. - Throws: `PGError`.
    @discardableResult
    public func deleteOldDeliveries(olderThan: Date, limit: Int) throws -> Int {
        try run(MaintenanceQueries.deleteOldDeliveries, olderThan, limit)
    }

    /// Deletes up to `limit` webhook events finished before `olderThan` (each delivery of them
    /// delivered or failed for good), with their deliveries and attempt log; undelivered events are
    /// kept whatever their age (R-PRV-4). - Returns: the number of events deleted. - Throws: `PGError`.
    @discardableResult
    public func deleteDeliveredEvents(olderThan: Date, limit: Int) throws -> Int {
        try run(MaintenanceQueries.deleteDeliveredEvents, olderThan, limit)
    }

    /// Sets `title`, `body`, `data`, `sound`, `thread_id` and the SMS fallback's phone and text to
    /// NULL and `content_erased_at` to now on up to `limit`
    /// notifications that became final (sent, sms_fallback, failed, cancelled) before `olderThan`
    /// and still hold their content (issue 4 retention), and the request bodies test mode stored for
    /// their deliveries (`push_deliveries.payload`, the same content). Status, counts, ledger and
    /// delivery outcomes stay.
    /// - Returns: the number erased. - Throws: `PGError`.
    @discardableResult
    public func eraseFinalContent(olderThan: Date, limit: Int) throws -> Int {
        guard limit > 0 else {
            throw PGError(code: .usage, message: "maintenance batch limit must be positive, got \(limit)")
        }
        return try connection.exec(MaintenanceQueries.eraseFinalContent, [.date(olderThan), .int(limit)]).int(0, "erased")
    }

    /// Erases the phone, the text and the test-mode request of up to `limit` SMS fallbacks that
    /// became final before `olderThan` and whose notification's content is erased (R-SMS-1: erased
    /// with the content, once final; the notification's own copy goes with its content, an SMS still
    /// being sent keeps its own until it ends). Status, provider id, codes and segments stay.
    /// - Returns: the number erased. - Throws: `PGError`.
    @discardableResult
    public func eraseFinalSMS(olderThan: Date, limit: Int) throws -> Int {
        try run(MaintenanceQueries.eraseFinalSMS, olderThan, limit)
    }

    /// Folds the `push_job_tally` rows of sessions that ended into one row per final state, so
    /// `push_queue_stats` sums about one row per state and live session (sql/0013). One statement.
    /// - Returns: the rows folded. - Throws: `PGError`.
    @discardableResult
    public func compactJobTally() throws -> Int {
        try connection.exec(MaintenanceQueries.compactJobTally).int(0, "folded")
    }

    private func run(_ sql: String, _ cutoff: Date, _ limit: Int) throws -> Int {
        guard limit > 0 else {
            throw PGError(code: .usage, message: "maintenance batch limit must be positive, got \(limit)")
        }
        return try connection.exec(sql, [.date(cutoff), .int(limit)]).affectedRowCount
    }
}
