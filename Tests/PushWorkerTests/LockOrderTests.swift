import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// Issue 13 "Races": one lock order for notification and job rows (sql/LOCK_ORDER.md). Each
/// function is stopped at its first lock by a session holding that row; a third session then
/// finds every row the order puts after it still free (`FOR UPDATE NOWAIT`), so nothing that
/// waits for the first lock holds a later one, and two callers cannot wait for each other in a
/// cycle. Then the races of the issue, bounded: cancels at the send time against three workers,
/// and lease heartbeats against grouped records, with no deadlock.
final class LockOrderTests: PGWorkerTestCase {
    /// Runs `body` on its own thread; the semaphore is signalled when it returns.
    private func background(_ body: @escaping () throws -> Void) -> (DispatchSemaphore, LockedBox<Error?>) {
        let done = DispatchSemaphore(value: 0)
        let failure = LockedBox<Error?>(nil)
        Thread.detachNewThread {
            do { try body() } catch { failure.update { $0 = error } }
            done.signal()
        }
        return (done, failure)
    }

    /// Waits until the session `pid` waits for a lock (at most 10 s).
    private func waitUntilBlocked(_ pid: Int32, file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let r = try conn.exec("SELECT count(*)::int FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
                                  [.int(Int(pid))])
            if try r.int(0, 0) == 1 { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTFail("the session never waited for the held lock", file: file, line: line)
    }

    /// True when `sql` (a `FOR UPDATE NOWAIT`) finds its row free.
    private func isFree(_ sql: String, _ params: [PGValue?]) throws -> Bool {
        let probe = try database.connect()
        do {
            _ = try probe.exec(sql, params)
            return true
        } catch let e as PGError where e.sqlState == "55P03" {
            return false
        }
    }

    private func jobFree(_ id: Int64) throws -> Bool {
        try isFree("SELECT 1 FROM push_jobs WHERE id = $1 FOR UPDATE NOWAIT", [.int64(id)])
    }

    /// `count` notifications to one user each, claimed by a worker connection (their jobs running).
    private func claimed(_ count: Int) throws -> [ClaimedJob] {
        let app = try createApp()
        for i in 0..<count {
            try register(app, user: "u\(i)")
            _ = try enqueue(app, users: ["u\(i)"])
        }
        let jobs = try PGQueueStore(connection: workerConn).jobClaimBatch(owner: "t", limit: count, leaseSeconds: 600)
        XCTAssertEqual(jobs.count, count)
        return jobs.sorted { $0.id < $1.id }
    }

    /// Holds the notification row of `job` in an open transaction on a session of its own.
    private func holdNotification(of job: ClaimedJob) throws -> PGConnection {
        let holder = try database.connect()
        try holder.exec("BEGIN")
        try holder.exec("SELECT 1 FROM push_notifications WHERE id = $1 FOR UPDATE", [.uuid(job.notification.id)])
        return holder
    }

    func testStartNotificationWaitsForTheNotificationBeforeLockingItsJob() throws {
        let job = try claimed(1)[0]
        let holder = try holdNotification(of: job)
        let starter = try database.connect()
        let (done, failure) = background {
            _ = try PGQueueStore(connection: starter).notificationStart([job.lease], batchSize: 500)
        }
        try waitUntilBlocked(starter.serverProcessID)
        XCTAssertTrue(try jobFree(job.id), "push_start_notification holds the job while it waits for the notification")
        try holder.exec("COMMIT")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNil(failure.value)
    }

    func testCancelWaitsForTheNotificationBeforeLockingItsJob() throws {
        let app = try createApp()
        try register(app, user: "u")
        let n = try enqueue(app, users: ["u"]) { $0.sendAt = Date().addingTimeInterval(3600) }
        let job = try conn.exec("SELECT id FROM push_jobs WHERE notification_id = $1", [.uuid(n)]).int64(0, "id")
        let holder = try database.connect()
        try holder.exec("BEGIN")
        try holder.exec("SELECT 1 FROM push_notifications WHERE id = $1 FOR UPDATE", [.uuid(n)])
        let canceller = try database.connect()
        let (done, failure) = background { XCTAssertTrue(try NotificationStore(connection: canceller).cancel(id: n)) }
        try waitUntilBlocked(canceller.serverProcessID)
        XCTAssertTrue(try jobFree(job))
        try holder.exec("COMMIT")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNil(failure.value)
    }

    /// push_record locks every notification of the call (by id) before any job: stopped at
    /// one notification, it holds no job yet. (0004 locked job, notification, job, notification.)
    func testGroupedRecordLocksAllNotificationsBeforeAnyJob() throws {
        let jobs = try claimed(2)
        let later = jobs.max { $0.notification.id.uuidString.lowercased() < $1.notification.id.uuidString.lowercased() }!
        let holder = try holdNotification(of: later)
        let recorder = try database.connect()
        let (done, failure) = background {
            _ = try PGQueueStore(connection: recorder).batchRecord(jobs.map { BatchOutcome(job: $0, records: [], credentials: .init()) })
        }
        try waitUntilBlocked(recorder.serverProcessID)
        for job in jobs { XCTAssertTrue(try jobFree(job.id), "job \(job.id) locked before the notifications") }
        try holder.exec("COMMIT")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNil(failure.value)
    }

    /// The lease heartbeat locks its jobs by id whatever order it is given them: stopped at the
    /// second, it holds the first and not the third. (The previous statement's order was its
    /// plan's, which happened to be by id here too: the race below is the one that caught it.)
    func testHeartbeatLocksItsJobsByID() throws {
        let jobs = try claimed(3)
        let holder = try database.connect()
        try holder.exec("BEGIN")
        try holder.exec("SELECT 1 FROM push_jobs WHERE id = $1 FOR UPDATE", [.int64(jobs[1].id)])
        let keeper = try database.connect()
        let (done, failure) = background {
            let kept = try PGQueueStore(connection: keeper).jobHeartbeat(jobs.reversed().map(\.lease),
                                                                       leaseSeconds: 600)
            XCTAssertEqual(kept.count, 3)
        }
        try waitUntilBlocked(keeper.serverProcessID)
        XCTAssertFalse(try jobFree(jobs[0].id), "the lowest id is taken first")
        XCTAssertTrue(try jobFree(jobs[2].id), "the highest id waits for the one before it")
        try holder.exec("COMMIT")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNil(failure.value)
    }

    /// The race, bounded: 300 notifications due in 4 s (room for the setup on a loaded
    /// machine: 1.5 s was once too little), three workers draining, and three
    /// sessions cancelling a third of them each, timed at the send time. Every cancel answers (true
    /// or false, never 40P01), no job loses an attempt, every notification ends.
    func testCancelsAtTheSendTimeAgainstThreeWorkersNeverDeadlock() throws {
        let app = try createApp()
        try conn.exec("""
            SELECT count(*) FROM (SELECT push_register_device($1::uuid, 'test', 'android', 'tok-' || i, NULL, NULL, NULL,
                                                              'u' || i, NULL, 'keep', NULL, NULL)
                                    FROM generate_series(0, 299) i) s
            """, [.uuid(app)])
        let sendAt = Date().addingTimeInterval(4)
        let r = try conn.exec("""
            SELECT (push_enqueue($1::uuid, 'test', ARRAY['u' || i], NULL, 't', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                 $2::timestamptz, NULL, NULL, NULL, NULL)).notification_id AS id
              FROM generate_series(0, 299) i
            """, [.uuid(app), .date(sendAt)])
        let ids = try r.rows.map { try r.uuid($0, "id") }
        XCTAssertEqual(ids.count, 300)
        XCTAssertGreaterThan(sendAt.timeIntervalSinceNow, 0.3, "the setup took too long to race the send time")
        let workers = try (0..<3).map { try makeWorker(owner: "w\($0)", claimLimit: 8) }
        let connections = try (0..<3).map { _ in try database.connect() }
        let drains = (0..<3).map { i in background { try self.drain(workers[i], connection: connections[i], timeout: 60) } }
        let cancelled = LockedBox(0)
        let cancels = try (0..<3).map { k -> (DispatchSemaphore, LockedBox<Error?>) in
            let canceller = try database.connect()
            let mine = ids.enumerated().filter { $0.offset % 3 == k }.map(\.element)
            return background {
                Thread.sleep(forTimeInterval: max(0, sendAt.timeIntervalSinceNow - 0.01))
                for id in mine where try NotificationStore(connection: canceller).cancel(id: id) { cancelled.update { $0 += 1 } }
            }
        }
        for (done, failure) in cancels {
            XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
            XCTAssertNil(failure.value, "a cancel failed: \(String(describing: failure.value))")
        }
        for (done, failure) in drains {
            XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
            XCTAssertNil(failure.value)
        }
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_jobs WHERE attempt > 1 OR last_error IS NOT NULL"), 0,
                       "a job lost an attempt")
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_notifications WHERE finished_at IS NULL"), 0)
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_notifications WHERE status = 'cancelled'"), cancelled.value)
    }

    /// Heartbeats every 0.1 s (leases of 0.3 s) beside grouped records of 300 small notifications
    /// by two workers: no deadlock recorded by the server (pg_stat_database, read once every
    /// session that took part has ended and flushed its counters). With the previous heartbeat
    /// statement this run saw 2 deadlocks (`lease.heartbeat_failed ... 40P01` in the issue).
    func testHeartbeatsBesideGroupedRecordsNeverDeadlock() throws {
        let app = try createApp()
        for i in 0..<300 {
            try register(app, user: "u\(i)")
            _ = try enqueue(app, users: ["u\(i)"])
        }
        do {
            let config = WorkerConfig(owner: "hb", claimLimit: 32, batchSize: 500, leaseSeconds: 0.3, pollInterval: 0.05,
                                      rescueInterval: 0.1, statsInterval: 3600, retryPolicy: Self.fastRetry)
            let workers = try (0..<2).map { i -> Worker in
                var c = config
                c.owner = "hb\(i)"
                let w = try Worker(config: c, databaseURL: database.conninfo, router: RecordingRouter(), log: Self.quietLog)
                w.maintainer = nil
                return w
            }
            let runs = workers.map { w in background { w.run() } }
            let deadline = Date().addingTimeInterval(60)
            while try int("SELECT count(*)::int FROM push_notifications WHERE finished_at IS NULL") > 0, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
            }
            for w in workers { w.requestStop() }
            for (done, _) in runs { XCTAssertEqual(done.wait(timeout: .now() + 20), .success) }
        }
        XCTAssertEqual(try int("SELECT count(*)::int FROM push_notifications WHERE finished_at IS NULL"), 0)
        var deadlocks = -1
        for _ in 0..<30 {  // the workers' sessions have ended; their counters reach the server at exit
            Thread.sleep(forTimeInterval: 0.1)
            deadlocks = try conn.exec("SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()").int(0, 0)
            if deadlocks > 0 { break }
        }
        XCTAssertEqual(deadlocks, 0)
    }
}
