import Foundation
import PushStore

/// Retention and cleanup, run by one worker of the fleet at a time (a session advisory lock,
/// `MaintenanceStore.withMaintenanceLock`): finished jobs pruned, old deliveries and delivered
/// outbox events deleted, devices deactivated more than 30 days ago deleted (R-DEV-7; their
/// delivery history stays), and the content of final notifications erased (title, body, data, sound, thread id),
/// so the database does not keep what the envelope protects. Every step deletes in bounded
/// batches (`batchLimit` rows per statement, at most `maxBatchesPerRun` statements per step).
public final class Maintainer {
    /// Retention settings (seconds). Defaults: jobs 1 day, deliveries 30 days, events 7 days,
    /// devices 30 days (R-DEV-7), content erased as soon as final (0).
    public struct Config: Sendable, Equatable {
        public static let defaultInterval: TimeInterval = 60
        public var interval: TimeInterval = Config.defaultInterval
        public var finishedJobRetention: TimeInterval = 86_400
        public var deliveryRetention: TimeInterval = 30 * 86_400
        public var eventRetention: TimeInterval = 7 * 86_400
        public var deactivatedDeviceRetention: TimeInterval = MaintenanceStore.deactivatedDeviceRetention
        /// Erase final notifications' content this long after they ended; nil keeps content.
        public var contentRetention: TimeInterval? = 0
        public var batchLimit: Int = 1000
        public var maxBatchesPerRun: Int = 20

        public init() {}

        /// The settings `fromEnvironment` reads, each a number of seconds (`keep` also for content).
        public static let environmentKeys = ["PUSHFLEET_MAINTENANCE_INTERVAL", "PUSHFLEET_RETENTION_JOBS",
                                             "PUSHFLEET_RETENTION_DELIVERIES", "PUSHFLEET_RETENTION_EVENTS",
                                             "PUSHFLEET_RETENTION_DEVICES", "PUSHFLEET_RETENTION_CONTENT"]

        /// The first of `environmentKeys` set in `env` to something other than a finite number of seconds
        /// ≥ 0 (or `keep` for `PUSHFLEET_RETENTION_CONTENT`), or nil: `fromEnvironment` would ignore it.
        public static func invalidSetting(in env: [String: String]) -> String? {
            environmentKeys.first { key in
                guard let text = env[key], !(key == "PUSHFLEET_RETENTION_CONTENT" && text == "keep") else { return false }
                guard let s = Double(text), s.isFinite, s >= 0 else { return true }
                return false
            }
        }

        /// Reads `PUSHFLEET_RETENTION_*` overrides (seconds; `PUSHFLEET_RETENTION_CONTENT=keep` keeps content).
        public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) -> Config {
            var c = Config()
            func seconds(_ key: String) -> TimeInterval? { env[key].flatMap(TimeInterval.init).map { max(0, $0) } }
            if let v = seconds("PUSHFLEET_MAINTENANCE_INTERVAL") { c.interval = max(1, v) }
            if let v = seconds("PUSHFLEET_RETENTION_JOBS") { c.finishedJobRetention = v }
            if let v = seconds("PUSHFLEET_RETENTION_DELIVERIES") { c.deliveryRetention = v }
            if let v = seconds("PUSHFLEET_RETENTION_EVENTS") { c.eventRetention = v }
            if let v = seconds("PUSHFLEET_RETENTION_DEVICES") { c.deactivatedDeviceRetention = v }
            if env["PUSHFLEET_RETENTION_CONTENT"] == "keep" { c.contentRetention = nil }
            else if let v = seconds("PUSHFLEET_RETENTION_CONTENT") { c.contentRetention = v }
            return c
        }
    }

    /// Rows affected by one run, per step; `ranLeader` false when another worker held the lock.
    public struct RunResult: Sendable, Equatable {
        public var ranLeader = false
        public var jobs = 0
        public var deliveries = 0
        public var events = 0
        public var devices = 0
        public var erased = 0
        /// SMS outbox rows that ended, pruned with the finished jobs' retention.
        public var smsOutbox = 0
        /// SMS fallbacks whose phone and text were erased (R-SMS-1).
        public var smsErased = 0
        /// Queue tally rows of ended sessions folded into one per state (`push_queue_stats`'s source).
        public var tallyRowsFolded = 0
    }

    public let config: Config

    public init(config: Config = Config()) {
        self.config = config
    }

    /// One maintenance pass on `connection` at `now`; does nothing unless this session gets the lock.
    public func runOnce(connection: PGConnection, now: Date = Date()) throws -> RunResult {
        try runOnce(store: MaintenanceStore(connection: connection), now: now)
    }

    /// One maintenance pass through `store` at `now`; does nothing unless its session gets the lock.
    public func runOnce(store: MaintenanceStore, now: Date = Date()) throws -> RunResult {
        let result = try store.withMaintenanceLock { () -> RunResult in
            var r = RunResult(ranLeader: true)
            r.jobs = try drain { try store.pruneFinishedJobs(olderThan: now - config.finishedJobRetention, limit: $0) }
            r.smsOutbox = try drain { try store.pruneFinishedSMSOutbox(olderThan: now - config.finishedJobRetention, limit: $0) }
            r.deliveries = try drain { try store.deleteOldDeliveries(olderThan: now - config.deliveryRetention, limit: $0) }
            r.events = try drain { try store.deleteDeliveredEvents(olderThan: now - config.eventRetention, limit: $0) }
            r.devices = try drain {
                try store.deleteDeactivatedDevices(olderThan: now - config.deactivatedDeviceRetention, limit: $0)
            }
            if let keep = config.contentRetention {
                r.erased = try drain { try store.eraseFinalContent(olderThan: now - keep, limit: $0) }
                r.smsErased = try drain { try store.eraseFinalSMS(olderThan: now - keep, limit: $0) }
            }
            r.tallyRowsFolded = try store.compactJobTally()
            return r
        }
        return result ?? RunResult()
    }

    /// Repeats a bounded step until it affects fewer rows than the limit (or the per-run cap).
    private func drain(_ step: (Int) throws -> Int) throws -> Int {
        var total = 0
        for _ in 0..<config.maxBatchesPerRun {
            let n = try step(config.batchLimit)
            total += n
            if n < config.batchLimit { break }
        }
        return total
    }
}
