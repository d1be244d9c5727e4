import Foundation
import PushCore
import PushProviders
import PushStore

/// Decides whether the worker may claim work on a connection: the schema must be at least
/// `requiredSchemaVersion` (the highest `sql/NNNN_*.up.sql` this build was written against) and
/// the server must accept writes. Probes each new connection, then again every `interval`
/// seconds; sets `metrics.ready` (what `/readyz` serves) and logs each change of verdict once.
public final class ReadinessGate {
    /// The schema version this build needs: sql/0027_inlined_uuid_v7 is the newest
    /// migration (the UUIDv7 generator made inlinable, same bits; before it sql/0026: notification
    /// ids made time-ordered, UUIDv7; before it sql/0025: the start and the
    /// record planned generically, the pre-0020 erasure index dropped; nothing this build calls
    /// changed shape in either); sql/0024_provider_platforms
    /// (`push_platforms`, which this gate fills from the worker's provider table, and the functions
    /// reading it); sql/0023_fewer_steps (`push_record`
    /// taking a sole batch's final state with its record); sql/0022_preview_mends
    /// (`confirm_deliveries_since`, which the worker's confirmation series and the preview SQL
    /// read, and `push_erase_content`, which the Maintainer's erasure calls);
    /// sql/0021_enqueue_cost `push_enqueue` and its measures restated for cost, same answers;
    /// sql/0020_preview_and_receipts the preview tokens, revocation, the preview window and
    /// confirmed deliveries of the preview routes (R-IDS-2..4);
    /// sql/0019_content_mode the content mode of R-IDS-1 that the send-time start writes and the
    /// claim reads; sql/0018_whole_app_audiences whole-app audiences (`push_split_audience`, the 'split' job
    /// kind, push_enqueue's audience; issue 22);
    /// sql/0017_database_cost_second_pass the record leaving a last batch's counter to
    /// push_finalize_notifications, which this build runs in the same transaction;
    /// sql/0016_token_platform the registration refusing a token's platform change (R-DEV-2, which
    /// the API answers 409);
    /// sql/0015_api_access keys scoped to apps, the audit log, the usage report's index and
    /// `push_erase_user`; sql/0014_provider_pauses the fleet-wide provider pauses of R-KIND-4
    /// (`PGPauseStore`); sql/0013_database_cost the set-based start and record (the Maintainer folds
    /// the queue tally with push_compact_job_tally); sql/0012_sms_fallback the SMS dispatcher's
    /// functions (on sql/0009_webhooks's leased outbox); sql/0011_push_kinds the kind columns its
    /// claim reads; sql/0010_typed_record the queue functions answering per job (their locks in the
    /// order of sql/LOCK_ORDER.md); sql/0009_webhooks the webhook dispatcher and retention deleting
    /// events with their outbox rows; sql/0008_api_accounts the accounts and keys of `pushfleet api`
    /// and the account-aware `push_app_create` the CLI calls; sql/0007 seals provider tokens.
    public static let requiredSchemaVersion = 27

    /// Every migration this build uses (the `sql/` files' versions up to `requiredSchemaVersion`;
    /// `ReadinessTests` holds it to the directory). All must be recorded, not only the highest: a
    /// branch's migration can land after higher ones (0008 and 0010 after 0011), and a database
    /// migrated by an earlier main records 0011 without them.
    public static let requiredMigrations = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27]

    /// Why a database is not fit for work.
    public enum Verdict: Equatable, Sendable {
        /// Work may be claimed.
        case ready
        /// `schema_migrations` is behind this build (its highest version is below `needed`, or a
        /// migration this build uses is missing): run `pushfleet migrate`.
        case schemaTooOld(found: Int, needed: Int, missing: [Int])
        /// The server refuses writes (read-only default or standby).
        case readOnly
        /// The schema is ready but the platforms served could not be written into `push_platforms`
        /// (sql/0024), e.g. the role lacks INSERT, UPDATE on it: `error` is the database's refusal
        /// (`DB_QUERY [SQLSTATE]: message`, no row values). Tried again at each probe.
        case platformsNotServed(error: String)

        /// A stable reason label for logs.
        public var reason: String {
            switch self {
            case .ready: return "ready"
            case .schemaTooOld: return "SCHEMA_TOO_OLD"
            case .readOnly: return "DATABASE_READ_ONLY"
            case .platformsNotServed: return "PLATFORMS_NOT_SERVED"
            }
        }
    }

    private let metrics: WorkerMetrics
    private let log: Log
    private let requiredVersion: Int
    private let requiredMigrations: [Int]
    private let interval: Double
    private weak var probed: AnyObject?
    private var probedAt = Date.distantPast
    private var verdict: Verdict?
    private let platforms: [PlatformTraits]
    private var platformsServed = false

    /// - Parameters:
    ///   - requiredVersion: minimum schema version (default `requiredSchemaVersion`).
    ///   - requiredMigrations: versions that must all be recorded (default `requiredMigrations`).
    ///   - interval: seconds between probes of the same connection (default 5).
    ///   - platforms: the platforms the worker serves (its provider table's), told to the store
    ///     (`QueueStore.servePlatforms`, sql/0024) on the first ready verdict.
    public init(metrics: WorkerMetrics, log: Log = .shared, requiredVersion: Int = ReadinessGate.requiredSchemaVersion,
                requiredMigrations: [Int] = ReadinessGate.requiredMigrations, interval: Double = 5,
                platforms: [PlatformTraits] = ProviderTable.standard.servedPlatforms) {
        self.platforms = platforms
        self.metrics = metrics
        self.log = log
        self.requiredVersion = requiredVersion
        self.requiredMigrations = requiredMigrations
        self.interval = interval
    }

    /// Probes `store` when it is a new session or the last probe is older than `interval`; returns
    /// whether work may be claimed. A schema ready for work is not yet a ready verdict: the
    /// platforms served are told to the store first (once per gate; before any claim), and a
    /// refusal of that write (a privilege missing on `push_platforms`) is the verdict
    /// `platformsNotServed`, logged once and tried again at the next call.
    /// - Throws: the store's error when the probe or the write lost the connection or conflicted.
    public func admit(_ store: QueueStore, now: Date = Date()) throws -> Bool {
        if probed !== store || now.timeIntervalSince(probedAt) >= interval || verdict != .ready {
            let health = try store.healthProbe(required: requiredMigrations)
            var v = Self.verdict(health, requiredVersion: requiredVersion)
            if v == .ready && !platformsServed {
                do {
                    try store.servePlatforms(platforms)
                    platformsServed = true
                } catch QueueStoreError.failed(let error) {
                    v = .platformsNotServed(error: String(error.prefix(300)))
                }
            }
            record(v)
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
        if h.schemaVersion < requiredVersion || !h.missingVersions.isEmpty {
            return .schemaTooOld(found: h.schemaVersion, needed: requiredVersion, missing: h.missingVersions)
        }
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
        case .schemaTooOld(let found, let needed, let missing):
            log.error("worker.not_ready", ["reason": v.reason, "schema_version": found, "required_version": needed,
                                           "missing_versions": missing.map(String.init).joined(separator: ","),
                                           "hint": "run pushfleet migrate with this release's sql/"])
        case .readOnly:
            log.error("worker.not_ready", ["reason": v.reason, "hint": "the server refuses writes; waiting"])
        case .platformsNotServed(let error):
            log.error("worker.not_ready", ["reason": v.reason, "error": error,
                                           "hint": "grant the worker's role INSERT, UPDATE on push_platforms"])
        }
    }
}
