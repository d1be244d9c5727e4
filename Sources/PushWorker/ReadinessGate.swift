import Foundation
import PushStore

/// Decides whether the worker may claim work on a connection: the schema must be at least
/// `requiredSchemaVersion` (the highest `sql/NNNN_*.up.sql` this build was written against) and
/// the server must accept writes. Probes each new connection, then again every `interval`
/// seconds; sets `metrics.ready` (what `/readyz` serves) and logs each change of verdict once.
public final class ReadinessGate {
    /// The schema version this build needs: sql/0012_sms_fallback is the newest migration it uses
    /// (the SMS dispatcher's functions, on sql/0009_webhooks's leased outbox); sql/0011_push_kinds
    /// gives the kind columns its claim reads; sql/0010_typed_record the queue functions answering
    /// per job (their locks in the order of sql/LOCK_ORDER.md); sql/0009_webhooks the webhook
    /// dispatcher and retention deleting events with their outbox rows; sql/0007 seals provider tokens.
    public static let requiredSchemaVersion = 12

    /// Why a database is not fit for work.
    public enum Verdict: Equatable, Sendable {
        /// Work may be claimed.
        case ready
        /// `schema_migrations` is behind this build: run `pushfleet migrate`.
        case schemaTooOld(found: Int, needed: Int)
        /// The server refuses writes (read-only default or standby).
        case readOnly

        /// A stable reason label for logs.
        public var reason: String {
            switch self {
            case .ready: return "ready"
            case .schemaTooOld: return "SCHEMA_TOO_OLD"
            case .readOnly: return "DATABASE_READ_ONLY"
            }
        }
    }

    private let metrics: WorkerMetrics
    private let log: Log
    private let requiredVersion: Int
    private let interval: Double
    private weak var probed: AnyObject?
    private var probedAt = Date.distantPast
    private var verdict: Verdict?

    /// - Parameters:
    ///   - requiredVersion: minimum schema version (default `requiredSchemaVersion`).
    ///   - interval: seconds between probes of the same connection (default 5).
    public init(metrics: WorkerMetrics, log: Log = .shared, requiredVersion: Int = ReadinessGate.requiredSchemaVersion,
                interval: Double = 5) {
        self.metrics = metrics
        self.log = log
        self.requiredVersion = requiredVersion
        self.interval = interval
    }

    /// Probes `store` when it is a new session or the last probe is older than `interval`; returns
    /// whether work may be claimed. - Throws: the store's error when the probe fails (connection broken).
    public func admit(_ store: QueueStore, now: Date = Date()) throws -> Bool {
        if probed !== store || now.timeIntervalSince(probedAt) >= interval || verdict != .ready {
            let health = try store.healthProbe()
            record(Self.verdict(health, requiredVersion: requiredVersion))
            probed = store
            probedAt = now
        }
        return verdict == .ready
    }

    /// Records that no database is reachable (the connection failed).
    public func markUnreachable() {
        metrics.ready.set(0)
        probed = nil
        if verdict != nil { verdict = nil }
    }

    /// The verdict for a probe result (pure).
    public static func verdict(_ h: DatabaseHealth, requiredVersion: Int) -> Verdict {
        if h.schemaVersion < requiredVersion { return .schemaTooOld(found: h.schemaVersion, needed: requiredVersion) }
        if h.readOnly { return .readOnly }
        return .ready
    }

    private func record(_ v: Verdict) {
        metrics.ready.set(v == .ready ? 1 : 0)
        guard v != verdict else { return }
        verdict = v
        switch v {
        case .ready:
            log.info("worker.ready", [:])
        case .schemaTooOld(let found, let needed):
            log.error("worker.not_ready", ["reason": v.reason, "schema_version": found, "required_version": needed,
                                           "hint": "run pushfleet migrate with this release's sql/"])
        case .readOnly:
            log.error("worker.not_ready", ["reason": v.reason, "hint": "the server refuses writes; waiting"])
        }
    }
}
