import Foundation
import PushCore
import PushStore

/// Claim and lease, as `JobQueries.claimBatch`, `heartbeat`, `rescueExpired`, `failJob`,
/// `discardJob` and `releaseJobs` do them. Called under the lock.
extension InMemoryQueue {
    func claim(_ q: ClaimRequest, now: Date) -> [ClaimedJob] {
        func order(_ a: Job, _ b: Job) -> Bool {
            if a.priority != b.priority { return a.priority > b.priority }
            if a.runAt != b.runAt { return a.runAt < b.runAt }
            return a.id < b.id
        }
        func weight(_ j: Job) -> Int { j.deviceIDs?.count ?? 1 }
        let window = jobs.values.filter { $0.state == .available && $0.runAt <= now }.sorted(by: order).prefix(q.window)
        // Round-robin across apps: each job's turn within its app, and the app's devices before it.
        var turns: [(job: Job, turn: Int, appBefore: Int)] = []
        var perApp: [UUID: (turn: Int, devices: Int)] = [:]
        for job in window {
            let seen = perApp[job.appID] ?? (0, 0)
            turns.append((job, seen.turn + 1, seen.devices))
            perApp[job.appID] = (seen.turn + 1, seen.devices + weight(job))
        }
        let ranked = turns.filter { $0.appBefore < q.appDeviceBudget }.sorted { a, b in
            if a.turn != b.turn { return a.turn < b.turn }
            if weight(a.job) != weight(b.job) { return weight(a.job) < weight(b.job) }
            return order(a.job, b.job)
        }
        var picked: [Job] = []
        var before = 0
        for r in ranked {
            if before < q.deviceBudget && picked.count < q.limit { picked.append(r.job) }
            before += weight(r.job)
        }
        var out: [ClaimedJob] = []
        for job in picked {
            var j = job
            j.state = .running
            j.attempt += 1
            j.leaseOwner = q.owner
            j.leaseToken = UUID()
            j.leaseExpiresAt = now.addingTimeInterval(q.leaseSeconds)
            jobs[j.id] = j
            guard let n = notifications[j.notificationID], let app = apps[n.row.appID], let token = j.leaseToken else { continue }
            out.append(ClaimedJob(id: j.id, kind: j.kind, deviceIDs: j.deviceIDs, leaseToken: token, attempt: j.attempt,
                                  maxAttempts: j.maxAttempts, notification: n.row,
                                  app: AppPolicyRow(requireEncryption: app.requireEncryption,
                                                    placeholderTitle: app.placeholderTitle,
                                                    placeholderBody: app.placeholderBody,
                                                    placeholderTitleLocKey: app.placeholderTitleLocKey,
                                                    placeholderBodyLocKey: app.placeholderBodyLocKey, deleted: app.deleted)))
        }
        return out.sorted { a, b in
            let pa = jobs[a.id]?.priority ?? 0, pb = jobs[b.id]?.priority ?? 0
            return pa != pb ? pa > pb : a.id < b.id
        }
    }

    /// The job of `lease` when its lease still holds.
    func held(_ lease: JobLease) -> Job? {
        guard let j = jobs[lease.id], j.leaseToken == lease.token, j.state == .running else { return nil }
        return j
    }

    func heartbeat(_ leases: [JobLease], leaseSeconds: Double, now: Date) -> Set<Int64> {
        var kept: Set<Int64> = []
        for lease in leases where held(lease) != nil {
            jobs[lease.id]?.leaseExpiresAt = now.addingTimeInterval(leaseSeconds)
            kept.insert(lease.id)
        }
        return kept
    }

    func rescue(now: Date) -> RescueCounts {
        var counts = RescueCounts(rescued: 0, discarded: 0)
        for (id, j) in jobs where j.state == .running && (j.leaseExpiresAt ?? now) < now {
            let out = j.attempt >= j.maxAttempts
            jobs[id]?.state = out ? .discarded : .available
            jobs[id]?.finalizedAt = out ? now : nil
            jobs[id]?.runAt = now
            jobs[id]?.leaseToken = nil
            jobs[id]?.leaseExpiresAt = nil
            jobs[id]?.lastError = "LEASE_EXPIRED: lease of \(j.leaseOwner ?? "?") expired"
            if out { counts.discarded += 1 } else { counts.rescued += 1 }
        }
        return counts
    }

    /// Lets go of a job's lease, leaving it in `state`.
    func unlease(_ id: Int64, state: JobState, now: Date) {
        jobs[id]?.state = state
        jobs[id]?.leaseToken = nil
        jobs[id]?.leaseExpiresAt = nil
        jobs[id]?.leaseOwner = nil
        if state == .completed || state == .discarded || state == .cancelled { jobs[id]?.finalizedAt = now }
    }

    func fail(_ lease: JobLease, error: String, retryAt: Date, now: Date) -> JobState? {
        guard let j = held(lease) else { return nil }
        let state: JobState = j.attempt >= j.maxAttempts ? .discarded : .available
        unlease(j.id, state: state, now: now)
        jobs[j.id]?.runAt = retryAt
        jobs[j.id]?.lastError = String(error.prefix(1000))
        return state
    }

    func discard(_ lease: JobLease, error: String, now: Date) -> Bool {
        guard let j = held(lease) else { return false }
        unlease(j.id, state: .discarded, now: now)
        jobs[j.id]?.lastError = error
        return true
    }

    func release(_ leases: [JobLease], now: Date) {
        for lease in leases {
            guard let j = held(lease) else { continue }
            unlease(j.id, state: .available, now: now)
            jobs[j.id]?.attempt = max(j.attempt - 1, 0)
        }
    }

    func stats(now: Date) -> QueueStats {
        func n(_ s: JobState) -> Int64 { Int64(jobs.values.filter { $0.state == s }.count) }
        let due = jobs.values.filter { $0.state == .available && $0.runAt <= now }
        let oldest = due.map(\.runAt).min().map { now.timeIntervalSince($0) } ?? 0
        return QueueStats(available: n(.available), due: Int64(due.count), running: n(.running), discarded: n(.discarded),
                          completed: n(.completed), cancelled: n(.cancelled), oldestDueAgeSeconds: oldest)
    }
}
