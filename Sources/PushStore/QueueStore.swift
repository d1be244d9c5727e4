import Foundation
import PushCore

/// The queue as the worker sees it: one session (one thread at a time), one method per operation,
/// each a constant number of round trips whatever the number of jobs and devices. Implementations:
/// `PGQueueStore` (PostgreSQL, the product) and the in-memory store of the test support; both pass
/// the same conformance suite (`QueueConformance` in the worker tests). Operations on several jobs
/// answer per job (`StartOutcome`, `RecordOutcome`): a lease lost by one job never fails the others.
///
/// Errors are `QueueStoreError` values: `connectionLost` (nothing of the call is known to have
/// been written; open a new session), `conflict` (deadlock or serialization failure: the call was
/// rolled back whole and may run again), `failed` (anything else).
public protocol QueueStore: AnyObject {
    /// Statements run on this session so far (the worker's log lines report round trips from it).
    var roundTrips: Int { get }
    /// False once the session is known to be broken (a new one is needed).
    var isHealthy: Bool { get }

    /// The database's schema version, which of the `required` migration versions it lacks and
    /// whether it takes writes (the readiness gate's probe).
    func healthProbe(required: [Int]) throws -> DatabaseHealth
    /// Blocks until new work is announced or `timeout` seconds pass.
    func waitForWork(timeout: Double) throws
    /// Retention and cleanup on this session, or nil where the store keeps nothing to clean.
    var maintenance: MaintenanceStore? { get }
    /// Tells the store the platforms this process serves (`PlatformStore.serve`, sql/0024; the
    /// readiness gate's, once the schema is ready). A store whose functions bound no platform
    /// (the in-memory one) has nothing to tell: the default does nothing.
    func servePlatforms(_ platforms: [PlatformTraits]) throws

    // MARK: Claim and lease

    /// Claims due jobs (see `ClaimRequest`), leased and committed at once. A claimed row that
    /// cannot be decoded fails its own job (`UNDECODABLE_ROW`, retried after `JobRetryPolicy`'s
    /// delay) and is left out; a job that can never run (its notification or app row missing:
    /// `ORPHANED_JOB`; a stored text over 65,536 bytes: `OVERSIZED_ROW`) is set aside at once and
    /// left out; the rest of the claim goes on.
    func jobClaim(_ request: ClaimRequest) throws -> [ClaimedJob]
    /// Extends the leases still held by these tokens by `leaseSeconds` from now; returns their ids.
    func jobHeartbeat(_ leases: [JobLease], leaseSeconds: Double) throws -> Set<Int64>
    /// Puts back running jobs whose lease expired, or sets them aside once out of attempts.
    func jobRescueExpired(now: Date?) throws -> RescueCounts
    /// A job that failed as a whole: retried at `retryAt`, or discarded once out of attempts.
    /// Returns the new state, nil when the lease was lost.
    func jobFail(_ lease: JobLease, error: String, retryAt: Date) throws -> JobState?
    /// Sets a job aside at once (`discarded`, `error` as its last error). False when the lease was lost.
    func jobDiscard(_ lease: JobLease, error: String) throws -> Bool
    /// Gives jobs back untouched, without spending an attempt; a lost lease is left alone.
    func jobRelease(_ leases: [JobLease]) throws
    /// The earliest `run_at` among available jobs, nil when none.
    func jobNextRunAt() throws -> Date?
    /// Queue depth by state.
    func queueStats() throws -> QueueStats
    /// The apps with `confirm_deliveries` (R-IDS-4), each with its `confirm_deliveries_since`: the
    /// worker counts their pushes sent since then for the confirmation rate (the deliveries
    /// `PreviewQueries.counted` defines); at most `limit`. A store without apps answers none.
    func confirmingApps(limit: Int) throws -> [UUID: Date]

    // MARK: Send time and batches

    /// The send-time step of notification jobs (R-SEND-2): policy read once and written as
    /// `encrypted`, audience resolved, DEVICE_GONE rows and their ledger action (`goneLedger`,
    /// PushCore's `LedgerRule` for a charged DEVICE_GONE) for charged devices no longer targeted,
    /// then either the job becomes the single batch (audience <= `batchSize`) or the audience is
    /// split into batch jobs. One answer per job.
    func notificationStart(_ jobs: [JobLease], batchSize: Int, goneLedger: LedgerAction, now: Date?) throws -> [Int64: StartOutcome]
    /// One step of a whole-app audience's split (`push_split_audience`, one transaction): at most
    /// `request.chunkDevices` devices after the notification's cursor become batch jobs of
    /// `batchSize` devices with their send-time charges (R-KIND-5), the cursor moved past them;
    /// the job is given back to the queue (or became the last batch). Nothing is split when the
    /// notification already has `request.maxPendingBatches` unfinished batches (`.throttled`).
    func audienceSplit(_ job: JobLease, batchSize: Int, request: SplitRequest, now: Date?) throws -> SplitOutcome
    /// Devices of several batches (keys, targeting at send time, delivery progress, charge), one
    /// array per batch in order.
    func batchLoadDevices(_ batches: [DeviceBatch]) throws -> [[BatchDeviceRow]]
    /// Records batches in one transaction: for each job whose lease holds, its deliveries, ledger
    /// rows as told, deactivations (R-DEV-8) and their events, credential changes, the successor
    /// retry job, the job's completion; for each notification whose last batch this was, its
    /// final state as `decideFinal` says, with its `device_count`. Jobs whose lease was lost
    /// write nothing. One answer per job.
    func batchRecord(_ outcomes: [BatchOutcome], now: Date?, decideFinal: FinalDecision) throws -> [Int64: RecordOutcome]
}

/// Where a worker's queue sessions come from: one for its loop (listening for new work), one for
/// its lease keeper's thread, each opened again after a broken one.
public protocol QueueSessions: Sendable {
    /// A session for the worker loop. - Throws: `QueueStoreError.connectionLost` when unreachable.
    func openWorkerSession() throws -> QueueStore
    /// A session for heartbeats, on another thread than the loop's.
    func openHeartbeatSession() throws -> QueueStore
    /// Where the fleet shares provider pauses (R-KIND-4), opened lazily; nil: this process only
    /// (the worker then keeps them in a `MemoryPauseStore`).
    func openPauseStore() -> PauseStore?
}

extension QueueSessions {
    /// No shared store: pauses stay within the process.
    public func openPauseStore() -> PauseStore? { nil }
}

/// What a claim may take.
public struct ClaimRequest: Sendable {
    /// The claiming worker's name (the lease owner).
    public var owner: String
    /// Jobs at most.
    public var limit: Int
    /// Lease length, seconds.
    public var leaseSeconds: Double
    /// Due jobs looked at (round-robin across apps within them), at least `limit`.
    public var window: Int
    /// Devices of the claim (a batch job weighs its devices, a notification job one), at least one job.
    public var deviceBudget: Int
    /// Devices of one app within the claim, at least one job.
    public var appDeviceBudget: Int
    /// The clock (tests pin it); nil = the store's own.
    public var now: Date?
    /// When a claimed row that cannot be read runs again (`UNDECODABLE_ROW`).
    public var retryPolicy: JobRetryPolicy

    /// Makes a request; `appDeviceBudget` defaults to `deviceBudget`.
    public init(owner: String, limit: Int, leaseSeconds: Double, window: Int = 1000, deviceBudget: Int = 2_000,
                appDeviceBudget: Int? = nil, now: Date? = nil, retryPolicy: JobRetryPolicy = .default) {
        self.retryPolicy = retryPolicy
        self.owner = owner
        self.limit = max(1, limit)
        self.leaseSeconds = leaseSeconds
        self.window = max(window, self.limit)
        self.deviceBudget = max(1, deviceBudget)
        self.appDeviceBudget = max(1, appDeviceBudget ?? deviceBudget)
        self.now = now
    }
}

/// How many expired leases a rescue put back and how many it set aside.
public struct RescueCounts: Sendable, Equatable {
    public var rescued: Int
    public var discarded: Int

    /// Makes a value.
    public init(rescued: Int, discarded: Int) {
        self.rescued = rescued
        self.discarded = discarded
    }
}

/// The send-time step's answer for one notification job.
public enum StartOutcome: Sendable, Equatable {
    /// Started (see `NotificationStart`).
    case started(NotificationStart)
    /// The lease is no longer this claim's (`LEASE_LOST`): another worker owns the job.
    case leaseLost
    /// The notification is no longer pending (`NOT_PENDING`): the job can never start.
    case notPending(NotificationState)
    /// The job's notification row is missing (`ORPHANED_JOB`): the job can never run.
    case orphaned
}

/// How much one step of a whole-app audience's split may take (`WorkerConfig`'s split settings).
public struct SplitRequest: Sendable, Equatable {
    /// Devices streamed from the index per step, 1 to 10,000.
    public var chunkDevices: Int
    /// Unfinished batch jobs of the notification above which a step waits instead of splitting.
    public var maxPendingBatches: Int
    /// How long a throttled split job waits before it is due again, seconds.
    public var waitSeconds: Double

    /// Makes a request (each value clamped to its range).
    public init(chunkDevices: Int = 5_000, maxPendingBatches: Int = 100, waitSeconds: Double = 0.05) {
        self.chunkDevices = min(max(1, chunkDevices), 10_000)
        self.maxPendingBatches = max(1, maxPendingBatches)
        self.waitSeconds = max(0, waitSeconds)
    }
}

/// The answer of one split step (`QueueStore.audienceSplit`).
public enum SplitOutcome: Sendable, Equatable {
    /// A full chunk became `batchJobs` batch jobs (`devices` devices, `charged` charges written);
    /// the split job is due again at once.
    case split(batchJobs: Int, devices: Int, charged: Int)
    /// The last chunk: the split job itself became the last of its `batchJobs` batch jobs.
    case done(batchJobs: Int, devices: Int, charged: Int)
    /// Too many unfinished batches: nothing split, the job is due again a little later.
    case throttled
    /// The notification is no longer sending (or has no whole-app audience): the job was completed.
    case notSending
    /// The lease is no longer this claim's: nothing written.
    case leaseLost
    /// The job's notification row is missing: nothing written.
    case orphaned
}

/// The record's answer for one job.
public enum RecordOutcome: Sendable, Equatable {
    /// Written (see `BatchRecordResult`).
    case recorded(BatchRecordResult)
    /// The lease is no longer this claim's (`LEASE_LOST`): nothing of this job was written.
    case leaseLost
    /// The job's notification row is missing (`ORPHANED_JOB`): nothing was written.
    case orphaned
}

/// A queue store call that failed (see `QueueStore`).
public enum QueueStoreError: Error, CustomStringConvertible {
    /// The connection broke: nothing of the call is known to be written; a new session is needed.
    case connectionLost(String)
    /// A deadlock or serialization failure: the call was rolled back whole and may run again.
    case conflict(String)
    /// Anything else (a constraint, a timeout, a bug), with its description.
    case failed(String)

    /// `CODE: message`, safe to log (no row values).
    public var description: String {
        switch self {
        case .connectionLost(let m): return "CONNECTION_LOST: \(m)"
        case .conflict(let m): return "CONFLICT: \(m)"
        case .failed(let m): return m
        }
    }
}

extension QueueStore {
    /// Nothing to tell: a store whose functions bound no platform (the in-memory one).
    public func servePlatforms(_ platforms: [PlatformTraits]) throws {}

    /// None: a store without an apps table (the in-memory one) counts no confirmation series.
    public func confirmingApps(limit: Int) throws -> [UUID: Date] { [:] }

    /// `jobClaim` with the request's fields as arguments.
    public func jobClaimBatch(owner: String, limit: Int, leaseSeconds: Double, window: Int = 1000,
                              deviceBudget: Int = 2_000, appDeviceBudget: Int? = nil, now: Date? = nil) throws -> [ClaimedJob] {
        try jobClaim(ClaimRequest(owner: owner, limit: limit, leaseSeconds: leaseSeconds, window: window,
                                  deviceBudget: deviceBudget, appDeviceBudget: appDeviceBudget, now: now))
    }

    /// The send-time step with PushCore's ledger action for a charged DEVICE_GONE.
    public func notificationStart(_ jobs: [JobLease], batchSize: Int, now: Date? = nil) throws -> [Int64: StartOutcome] {
        try notificationStart(jobs, batchSize: batchSize,
                              goneLedger: LedgerRule.action(for: .failed(.deviceGone), chargedAtAcceptance: true), now: now)
    }

    /// Records with PushCore's R-SEND-6 decision (`NotificationOutcome.final`).
    public func batchRecord(_ outcomes: [BatchOutcome], now: Date? = nil) throws -> [Int64: RecordOutcome] {
        try batchRecord(outcomes, now: now, decideFinal: { NotificationOutcome.final(endings: $0, hasSMSFallback: $1) })
    }
}
