import Foundation
import PushCore
import PushProviders
import PushStore

/// A worker's settings, with defaults suited to one process on a small machine.
public struct WorkerConfig: Sendable {
    /// This worker's name in leases (`host:pid` by default).
    public var owner: String
    /// Jobs claimed per round trip and processed together (default 128; `--claim-limit`,
    /// `PUSHFLEET_CONCURRENCY`). The device budgets below bound the work of a claim; this bounds
    /// its rows. 128 single-user notifications per claim spread a claim cycle's fixed cost (about
    /// 7 round trips) thin: 53 -> 33 µs of worker CPU per plaintext delivery, measured against 16.
    public var claimLimit: Int
    /// Devices per batch job (default 500): audiences larger than this are split (fan-out).
    public var batchSize: Int
    /// Device budget of a claim and of one processing chunk (default 2,000): a claim takes jobs until
    /// their devices reach it (at least one job), so a broadcast's claims stay short and other apps'
    /// jobs get the next one; batches are loaded, sealed, sent and recorded in chunks of this size.
    public var groupDeviceLimit: Int = 2_000
    /// Device budget of one app within a claim (default 500, one default batch): a broadcast gives
    /// a claim one batch, so a claim holding it ends soon and another app's notification waits at most
    /// about one batch's processing time (issue 4: within 1 s); single-user notifications, which
    /// weigh one device each, still fill a claim.
    public var appDeviceBudget: Int = 500
    /// Jobs of at most this many devices (default 50) are processed before the claim's larger
    /// batches, in a chunk of their own.
    public var smallJobDevices: Int = 50
    /// One step of a whole-app audience's split (issue 22; `--split-chunk`, `--split-pending`):
    /// 5,000 devices streamed from the index per step, and no step while the notification has 100
    /// unfinished batches or more (50,000 devices at the default batch size), so a big audience
    /// never fills the claim's window of due jobs and other apps' notifications keep their turn.
    public var split: SplitRequest = SplitRequest()
    /// Lease length, seconds (default 30); heartbeats every third of it.
    public var leaseSeconds: Double
    /// Longest idle sleep between claims, seconds (default 1): NOTIFY wakes the worker sooner;
    /// a scheduled job wakes it at its run time.
    public var pollInterval: Double
    /// How often expired leases are rescued, seconds (default 5).
    public var rescueInterval: Double
    /// How often queue gauges are refreshed, seconds (default 5).
    public var statsInterval: Double
    /// Per-delivery retry policy (R-SEND-12).
    public var retryPolicy: RetryPolicy
    /// When a provider host or an FCM project is paused fleet-wide, and how it is probed (R-KIND-4;
    /// `OutageThresholds` lists the defaults; tests compress them with `scaled(by:)`).
    public var outageThresholds: OutageThresholds = .default
    /// Seconds between reads of the fleet's pauses (`push_provider_pauses`) by a worker sending live
    /// pushes (default 1); the worker's own pauses and probes apply at once.
    public var pauseRefreshInterval: Double = 1
    /// When a job that failed as a whole runs again (the store's undecodable rows too).
    public var jobRetryPolicy: JobRetryPolicy = .default
    /// The providers served (payload writers, answer rules, credential kinds, labels).
    public var providers: ProviderTable = .standard
    /// After SIGTERM: how long in-flight work may take before the worker exits (default 25 s).
    public var drainSeconds: Double
    /// Statement timeout for every query, milliseconds (default 15,000), and lock timeout (5,000).
    public var statementTimeoutMillis: Int
    public var lockTimeoutMillis: Int

    public init(owner: String = WorkerConfig.defaultOwner(), claimLimit: Int = 128, batchSize: Int = 500,
                leaseSeconds: Double = 30, pollInterval: Double = 1, rescueInterval: Double = 5,
                statsInterval: Double = 5, retryPolicy: RetryPolicy = .default, drainSeconds: Double = 25,
                statementTimeoutMillis: Int = 15_000, lockTimeoutMillis: Int = 5_000) {
        self.owner = owner
        self.claimLimit = max(1, claimLimit)
        self.batchSize = max(1, batchSize)
        self.leaseSeconds = max(0.3, leaseSeconds)
        self.pollInterval = max(0.01, pollInterval)
        self.rescueInterval = max(0.1, rescueInterval)
        self.statsInterval = statsInterval
        self.retryPolicy = retryPolicy
        self.drainSeconds = drainSeconds
        self.statementTimeoutMillis = statementTimeoutMillis
        self.lockTimeoutMillis = lockTimeoutMillis
    }

    /// `hostname:pid`.
    public static func defaultOwner() -> String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }
}
