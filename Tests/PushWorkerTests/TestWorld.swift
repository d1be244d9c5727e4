import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore
import PushWorker

/// What a worker test sets up and reads back, whatever holds the queue: `MemoryWorld` (the
/// in-memory store, no database) or `PGWorld` (a fresh migrated PostgreSQL database). Setup goes
/// through each world's own API side (push_enqueue / the registry on PostgreSQL); the worker under
/// test only ever sees `sessions`.
protocol TestWorld: AnyObject {
    /// Sessions for a worker under test.
    var sessions: QueueSessions { get }
    /// A new session (the one `drain` runs the worker on).
    func session() throws -> QueueStore

    // MARK: Setup (the API side)

    func createApp(requireEncryption: Bool, name: String) throws -> UUID
    /// An app whose alert placeholder is localized (R-KIND-3: loc keys instead of the texts).
    func createApp(name: String, placeholderTitleLocKey: String?, placeholderBodyLocKey: String?) throws -> UUID
    func updateApp(_ app: UUID, requireEncryption: Bool) throws
    func deleteApp(_ app: UUID) throws
    /// Sets the app's content mode (R-IDS-1).
    func updateApp(_ app: UUID, contentMode: ContentMode) throws
    /// The notification's `content_mode` as its send time wrote it (nil before).
    func contentMode(notification: UUID) throws -> ContentMode?
    func register(_ app: UUID, _ r: DeviceRegistration, appLimit: Int64?) throws -> UUID
    func enqueue(_ q: EnqueueRequest) throws -> (id: UUID, created: Bool)
    /// `enqueue` accepted at `now` (the instant the stored expiry counts from, R-SEND-10).
    func enqueue(_ q: EnqueueRequest, now: Date) throws -> (id: UUID, created: Bool)
    /// Cancels a notification as push_cancel does (R-SEND-9 refunds); false when it is too late.
    func cancel(_ n: UUID) throws -> Bool
    /// Runs `body`'s setup as one transaction on PostgreSQL (fast bulk setup); as it comes in memory.
    func inOneTransaction(_ body: () throws -> Void) throws

    // MARK: Reading back

    func deliveries(_ n: UUID) throws -> [UUID: DeliveryRowT]
    /// (charges, refunds) per device for notification `n`.
    func ledger(_ n: UUID) throws -> [UUID: (charges: Int, refunds: Int)]
    func notification(_ n: UUID) throws -> NotificationStateT
    /// The `reason` of the events of `type` naming `device`.
    func events(type: String, device: UUID) throws -> [String]
    func device(_ id: UUID) throws -> (active: Bool, reason: String?)
    /// Every job, oldest first.
    func jobs() throws -> [JobRowT]
    /// The stored expiry of notification `n` (push_expires_at's instant).
    func expiresAt(notification n: UUID) throws -> Date
    /// Rows of every app: notifications, jobs, and the ledger's charges and refunds.
    func rowCounts() throws -> (notifications: Int, jobs: Int, charges: Int, refunds: Int)
    /// Notifications not yet final.
    func openNotifications() throws -> Int
    /// The SMS outbox: (phone, text) per notification.
    func smsOutbox() throws -> [UUID: (phone: String, text: String)]

    /// A notification with its deliveries and ledger rows.
    func report(_ n: UUID) throws -> ReportT
    /// The payloads of `app`'s events of `type`, oldest first.
    func appEvents(app: UUID, type: String) throws -> [[String: Any]]
    /// The delivery rows of `device`, any notification.
    func deliveries(device: UUID) throws -> [DeliveryRowT]
    /// Active devices of `app`.
    func activeDevices(app: UUID) throws -> Int

    // MARK: Live mode (credential sets)

    /// Validates and stores `app`'s credential set of `kind` (`CredentialValidation`), sealed under
    /// `keys` where the world seals.
    @discardableResult
    func setCredentials(app: UUID, kind: CredentialKind, config: [String: String], secret: [UInt8],
                        keys: CredentialKeys) throws -> CredentialSummary
    func credential(app: UUID, kind: CredentialKind) throws -> CredentialSummary?
    /// Where a live router reads this world's credential sets.
    func credentialSource(keys: CredentialKeys) -> CredentialSource
    /// Where a live router keeps APNs JWTs (shared through the database on PostgreSQL).
    func apnsTokenCache(keys: CredentialKeys) -> ProviderTokenCache

    // MARK: Hand edits and faults (what a bug, an operator or a failure would do)

    /// Another party takes the running jobs of `notification` over: new lease token, owner `other`,
    /// lease expiring in `expiresIn` seconds (kept when nil).
    func stealLease(notification: UUID?, owner: String, expiresIn: TimeInterval?) throws
    /// Marks a job completed and lets go of its lease (as its worker's record would).
    func complete(job: Int64) throws
    /// Ends every session of the worker under test (the database went away for it).
    func breakSessions() throws
    /// Makes the send-time step end the session that runs it (once armed), until disarmed.
    func breakSessionsAtSendTime(_ armed: Bool) throws
    func setDeviceKey(_ id: UUID, raw: [UInt8]) throws
    func setDevicePlatform(_ id: UUID, _ platform: String) throws
    func setNotificationData(_ n: UUID, _ data: String) throws
    func setMaxAttempts(notification: UUID, _ n: Int) throws
    /// Inserts a job row by hand.
    @discardableResult
    func addJob(kind: JobKind, notification: UUID, deviceIDs: [UUID]?, priority: Int, runAt: Date?) throws -> Int64
    /// Deletes the jobs of `notification` (a test keeps only the jobs it writes by hand).
    func removeJobs(notification: UUID) throws
    func setDeviceLastRegistered(_ id: UUID, _ at: Date) throws
    func setDeviceToken(_ id: UUID, _ token: String) throws
    /// Moves a device row to another user (as a re-registration would, past the registry).
    func setDeviceUser(_ id: UUID, _ user: String) throws
    /// Deactivates a device row by hand (no reason, no event).
    func deactivateDevice(_ id: UUID) throws
    /// When the notification's send time started it (nil before).
    func startedAt(notification: UUID) throws -> Date?
    /// Moves every pending retry and every available job's run time to now.
    func dueNow() throws
}

/// One `push_deliveries` row.
struct DeliveryRowT {
    var deviceID: UUID
    var status: String
    var errorCode: String?
    var errorDetail: String?
    var encrypted: Bool
    var attempts: Int
    var failures: Int
    var apnsID: UUID
    var providerMessageID: String?
    var payload: [UInt8]?
}

/// The `push_notifications` columns tests assert on.
struct NotificationStateT {
    var status: String
    var errorCode: String?
    var encrypted: Bool?
    var deviceCount: Int
}

/// One `push_jobs` row.
struct JobRowT {
    var id: Int64
    var kind: JobKind
    var notificationID: UUID
    var appID: UUID
    var state: JobState
    var attempt: Int
    var deviceIDs: [UUID]?
    var leaseOwner: String?
    var leaseExpiresAt: Date?
    var lastError: String?
    var runAt: Date
}

/// A notification as `notifications show` reports it, with each delivery's failures.
struct ReportT {
    struct Delivery {
        var deviceID: UUID
        var status: String
        var errorCode: String?
        var errorDetail: String?
        var encrypted: Bool
        var provider: String?
        var providerMessageID: String?
        var apnsID: UUID
        var attempts: Int
        var failures: Int
        var nextAttemptAt: Date?
        /// Test mode: the stored payload bytes (R-MODE-2).
        var payloadBytes: [UInt8]?

        /// The payload as `notifications show` prints it: UTF-8 text, or `base64url:` + the bytes.
        var payload: String? {
            guard let bytes = payloadBytes else { return nil }
            if let text = String(bytes: bytes, encoding: .utf8), !text.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                return text
            }
            return "base64url:" + Base64URL.encode(bytes)
        }
    }
    struct LedgerRow {
        var deviceID: UUID
        var kind: String
        var reason: String?
    }
    var status: String
    var deviceCount: Int
    var errorCode: String?
    var deliveries: [Delivery]
    var ledger: [LedgerRow]
}
