import Foundation
import PushCore
import PushCrypto
import PushStore

/// The rows PostgreSQL would hold, in memory, behind a lock: apps, devices, notifications, jobs,
/// deliveries, the ledger, events, credential states and the SMS outbox. `InMemoryQueueSession`
/// is its `QueueStore`: the same operations as `PGQueueStore`, written from the same contract (the
/// SQL functions of sql/functions/), and held to it by the shared conformance suite that runs
/// against both. The API side (apps, registry, enqueue, cancel) is here for tests to set a world up.
/// Rules the store only stores (ledger actions, device_count, the final state, DEVICE_GONE's ledger
/// row) come in from the caller, as they do for PostgreSQL; the acceptance charge and the expiry
/// use PushCore's rules.
public final class InMemoryQueue: @unchecked Sendable {
    // MARK: Rows

    public struct App {
        public var id: UUID
        public var name: String
        public var requireEncryption: Bool
        public var placeholderTitle = "New notification"
        public var placeholderBody = ""
        /// The placeholder's loc keys (R-KIND-3), sent instead of the literal parts when set.
        public var placeholderTitleLocKey: String?
        public var placeholderBodyLocKey: String?
        public var deleted = false
        /// R-IDS-1 (sql/0019).
        public var contentMode: ContentMode = .sealed
    }

    public struct Device {
        public var id: UUID
        public var appID: UUID
        public var mode: Mode
        public var platform: String
        public var token: String?
        public var endpoint: String?
        public var p256dh: [UInt8]?
        public var authSecret: [UInt8]?
        public var userID: String
        public var apnsEnvironment: APNsEnvironment?
        public var publicKey: [UInt8]?
        public var kid: String?
        public var active = true
        public var lastRegisteredAt: Date
        public var deactivatedAt: Date?
        public var deactivationReason: String?
    }

    public struct Notification {
        public var row: NotificationRow
        public var userIDs: [String]
        public var deviceIDs: [UUID]?
        public var idempotencyKey: String?
        public var smsPhone: String?
        public var smsText: String?
        public var startedAt: Date?
        public var remainingBatches = 0
        public var deviceCount = 0
        public var errorCode: String?
        public var finishedAt: Date?
    }

    public struct Job {
        public var id: Int64
        public var kind: JobKind
        public var notificationID: UUID
        public var appID: UUID
        public var deviceIDs: [UUID]?
        public var state: JobState = .available
        public var priority = 0
        public var runAt: Date
        public var attempt = 0
        public var maxAttempts = 10
        public var leaseOwner: String?
        public var leaseToken: UUID?
        public var leaseExpiresAt: Date?
        public var lastError: String?
        public var finalizedAt: Date?
    }

    public struct Delivery {
        public var status: DeliveryStatus
        public var errorCode: String?
        public var errorDetail: String?
        public var encrypted = false
        public var provider: String?
        public var providerMessageID: String?
        public var apnsID: UUID
        public var attempts = 0
        public var failures = 0
        public var nextAttemptAt: Date?
        public var payload: [UInt8]?
        public var finishedAt: Date?
    }

    public struct Event {
        public var appID: UUID
        public var type: String
        public var payload: [String: String]
    }

    public struct Credential {
        public var state: CredentialState
        public var firstAcceptedAt: Date?
        public var invalidReason: String?
        public var identifiers: [String: String] = [:]
        public var secret: [UInt8] = []
        public var version = UUID().uuidString
        public var updatedAt = Date()
    }

    public struct DeliveryKey: Hashable {
        public var notification: UUID
        public var device: UUID
    }

    public struct LedgerKey: Hashable {
        public var notification: UUID
        public var device: UUID
        public var kind: String
    }

    let lock = NSLock()
    /// The store's clock (tests may move it).
    public var clock: @Sendable () -> Date = { Date() }
    public internal(set) var apps: [UUID: App] = [:]
    public internal(set) var devices: [UUID: Device] = [:]
    public internal(set) var notifications: [UUID: Notification] = [:]
    public internal(set) var jobs: [Int64: Job] = [:]
    public internal(set) var deliveries: [DeliveryKey: Delivery] = [:]
    /// Ledger rows by (notification, device, kind) with their reason: at most one of each kind.
    public internal(set) var ledger: [LedgerKey: String?] = [:]
    public internal(set) var events: [Event] = []
    public internal(set) var credentials: [String: Credential] = [:]
    public internal(set) var smsOutbox: [UUID: (phone: String, text: String)] = [:]
    /// The final states recorded batches carried (`BatchOutcome.final`), by notification: which
    /// records the worker gave PushCore's decision with (issue 17, sql/0023).
    public internal(set) var finalsGiven: [UUID: NotificationOutcome] = [:]
    var nextJobID: Int64 = 1
    /// Runs before every session call, outside the lock: a test breaks sessions at a chosen point
    /// (e.g. while the send-time step runs) as a fault test ends a PostgreSQL session.
    public var beforeOperation: (@Sendable (Operation, InMemoryQueueSession) -> Void)?
    /// Sessions ever opened, so a test can break them (`breakSessions`).
    var sessions: [WeakSession] = []

    struct WeakSession { weak var session: InMemoryQueueSession? }

    /// An empty world.
    public init() {}

    /// Runs `body` under the store's lock (every read and write of the rows goes through it).
    public func locked<T>(_ body: (InMemoryQueue) throws -> T) rethrows -> T {
        try lock.withLock { try body(self) }
    }

    /// A stable apns-id per (notification, device), like `push_apns_id`.
    static func apnsID(_ n: UUID, _ d: UUID) -> UUID {
        let h = (try? SHA256.hash(utf8: "\(n.uuidString.lowercased()):\(d.uuidString.lowercased())")) ?? [UInt8](repeating: 0, count: 32)
        return UUID(uuid: (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]))
    }

    func insertJob(_ job: Job) -> Int64 {
        var j = job
        j.id = nextJobID
        nextJobID += 1
        jobs[j.id] = j
        return j.id
    }

    // MARK: - Apps

    /// Creates an app (R-APP-1 defaults).
    @discardableResult
    public func appCreate(name: String, requireEncryption: Bool = false, placeholderTitleLocKey: String? = nil,
                          placeholderBodyLocKey: String? = nil) -> UUID {
        let id = UUID()
        lock.withLock {
            apps[id] = App(id: id, name: name, requireEncryption: requireEncryption,
                           placeholderTitleLocKey: placeholderTitleLocKey, placeholderBodyLocKey: placeholderBodyLocKey)
        }
        return id
    }

    /// Changes an app's policy; false for an unknown app.
    @discardableResult
    public func appUpdate(id: UUID, requireEncryption: Bool) -> Bool {
        lock.withLock {
            guard apps[id] != nil else { return false }
            apps[id]?.requireEncryption = requireEncryption
            return true
        }
    }

    /// Changes an app's content mode (R-IDS-1); false for an unknown app.
    @discardableResult
    public func appUpdate(id: UUID, contentMode: ContentMode) -> Bool {
        lock.withLock {
            guard apps[id] != nil else { return false }
            apps[id]?.contentMode = contentMode
            return true
        }
    }

    /// Soft-deletes an app.
    @discardableResult
    public func appDelete(id: UUID) -> Bool {
        lock.withLock {
            guard let app = apps[id], !app.deleted else { return false }
            apps[id]?.deleted = true
            return true
        }
    }

    // MARK: - Credentials (state only: what the record path changes)

    static func credentialKey(_ app: UUID, _ kind: CredentialKind) -> String { "\(app.uuidString)/\(kind.rawValue)" }

    /// Stores (or replaces) `app`'s set of `kind`, `unverified` (R-APP-3), keeping a first
    /// acceptance for good; a replacement gets a new version (its clients are rebuilt).
    public func credentialSet(app: UUID, kind: CredentialKind, identifiers: [String: String] = [:], secret: [UInt8] = []) {
        lock.withLock {
            let key = Self.credentialKey(app, kind)
            credentials[key] = Credential(state: .unverified, firstAcceptedAt: credentials[key]?.firstAcceptedAt,
                                          identifiers: identifiers, secret: secret, updatedAt: clock())
        }
    }

    /// The live router's view of this world's credential sets (secrets held in clear).
    public var credentialSource: CredentialSource { InMemoryCredentialSource(queue: self) }

    /// The state of `app`'s `kind` set, nil when it has none.
    public func credential(app: UUID, kind: CredentialKind) -> Credential? {
        lock.withLock { credentials[Self.credentialKey(app, kind)] }
    }
}
