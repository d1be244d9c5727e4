import Foundation
import PushCore
import PushProviders
import PushStore
import PushTestSupport
import PushWorker

/// A `TestWorld` on a fresh migrated PostgreSQL database: setup through the product's SQL
/// functions and stores, rows read back with SQL.
final class PGWorld: TestWorld {
    let database: PGTestDatabase
    /// The test's own session (setup and assertions).
    let conn: PGConnection

    init() throws {
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
    }

    func drop() throws { try database.drop() }

    var sessions: QueueSessions { PGQueueSessions(url: database.conninfo) }
    func session() throws -> QueueStore { PGQueueStore(connection: try database.connect()) }

    /// An app whose events are kept (`WebhookFixture`: endpoints that want every type; sql/0009
    /// drops an event no endpoint wants), as the in-memory store keeps every event.
    func createApp(requireEncryption: Bool, name: String) throws -> UUID {
        let id = try AppStore(connection: conn).appCreate(name: name, requireEncryption: requireEncryption).id
        try WebhookFixture.subscribeToEverything(conn, appID: id)
        return id
    }

    func createApp(name: String, placeholderTitleLocKey: String?, placeholderBodyLocKey: String?) throws -> UUID {
        let id = try AppStore(connection: conn).appCreate(name: name, placeholderTitleLocKey: placeholderTitleLocKey,
                                                          placeholderBodyLocKey: placeholderBodyLocKey).id
        try WebhookFixture.subscribeToEverything(conn, appID: id)
        return id
    }

    func updateApp(_ app: UUID, requireEncryption: Bool) throws {
        guard try AppStore(connection: conn).appUpdate(id: app, requireEncryption: requireEncryption) != nil else {
            throw PushError(.notFound, "no app")
        }
    }

    func updateApp(_ app: UUID, contentMode: ContentMode) throws {
        guard try AppStore(connection: conn).appUpdate(id: app, contentMode: contentMode) != nil else {
            throw PushError(.notFound, "no app")
        }
    }

    func contentMode(notification: UUID) throws -> ContentMode? {
        let r = try conn.exec("SELECT content_mode FROM push_notifications WHERE id = $1::uuid", [.uuid(notification)])
        return try r.decode(0, "content_mode")
    }

    func deleteApp(_ app: UUID) throws {
        guard try AppStore(connection: conn).appDelete(id: app) else { throw PushError(.notFound, "no app") }
    }

    func register(_ app: UUID, _ r: DeviceRegistration, appLimit: Int64?) throws -> UUID {
        try DeviceRegistry(connection: conn, appLimitOverride: appLimit).register(appID: app, r).deviceID
    }

    func enqueue(_ q: EnqueueRequest) throws -> (id: UUID, created: Bool) { try NotificationStore(connection: conn).enqueue(q) }
    func enqueue(_ q: EnqueueRequest, now: Date) throws -> (id: UUID, created: Bool) {
        try NotificationStore(connection: conn).enqueue(q, now: now)
    }
    func cancel(_ n: UUID) throws -> Bool { try NotificationStore(connection: conn).cancel(id: n) }

    func inOneTransaction(_ body: () throws -> Void) throws {
        try conn.exec("BEGIN")
        do { try body() } catch {
            _ = try? conn.exec("ROLLBACK")
            throw error
        }
        try conn.exec("COMMIT")
    }

    func expiresAt(notification n: UUID) throws -> Date {
        try conn.exec("SELECT expires_at FROM push_notifications WHERE id = $1", [.uuid(n)]).date(0, "expires_at")
    }

    func rowCounts() throws -> (notifications: Int, jobs: Int, charges: Int, refunds: Int) {
        let r = try conn.exec("""
            SELECT (SELECT count(*)::int FROM push_notifications) AS notifications, (SELECT count(*)::int FROM push_jobs) AS jobs,
                   (SELECT count(*)::int FROM push_ledger WHERE kind = 'charge') AS charges,
                   (SELECT count(*)::int FROM push_ledger WHERE kind = 'refund') AS refunds
            """)
        return (try r.int(0, "notifications"), try r.int(0, "jobs"), try r.int(0, "charges"), try r.int(0, "refunds"))
    }

    func deliveries(_ n: UUID) throws -> [UUID: DeliveryRowT] {
        let r = try conn.exec("""
            SELECT device_id, status, error_code, error_detail, encrypted, attempts, failures, apns_id, provider_message_id,
                   payload
              FROM push_deliveries WHERE notification_id = $1
            """, [.uuid(n)])
        var out: [UUID: DeliveryRowT] = [:]
        for i in r.rows {
            let d = DeliveryRowT(deviceID: try r.uuid(i, "device_id"), status: try r.string(i, "status"),
                                 errorCode: try r.decode(i, "error_code"), errorDetail: try r.decode(i, "error_detail"),
                                 encrypted: try r.bool(i, "encrypted"), attempts: try r.int(i, "attempts"),
                                 failures: try r.int(i, "failures"), apnsID: try r.uuid(i, "apns_id"),
                                 providerMessageID: try r.decode(i, "provider_message_id"), payload: try r.decode(i, "payload"))
            out[d.deviceID] = d
        }
        return out
    }

    func ledger(_ n: UUID) throws -> [UUID: (charges: Int, refunds: Int)] {
        let r = try conn.exec("""
            SELECT device_id, count(*) FILTER (WHERE kind = 'charge')::int AS c,
                   count(*) FILTER (WHERE kind = 'refund')::int AS r
              FROM push_ledger WHERE notification_id = $1 GROUP BY device_id
            """, [.uuid(n)])
        var out: [UUID: (charges: Int, refunds: Int)] = [:]
        for i in r.rows { out[try r.uuid(i, "device_id")] = (try r.int(i, "c"), try r.int(i, "r")) }
        return out
    }

    func notification(_ n: UUID) throws -> NotificationStateT {
        let r = try conn.exec("SELECT status, error_code, encrypted, device_count FROM push_notifications WHERE id = $1",
                              [.uuid(n)])
        return NotificationStateT(status: try r.string(0, "status"), errorCode: try r.decode(0, "error_code"),
                                  encrypted: try r.decode(0, "encrypted"), deviceCount: try r.int(0, "device_count"))
    }

    func events(type: String, device: UUID) throws -> [String] {
        let r = try conn.exec("SELECT payload->>'reason' AS reason FROM push_events WHERE type = $1 AND payload->>'device_id' = $2",
                              [.text(type), .text(device.uuidString.lowercased())])
        return try r.rows.map { try r.string($0, "reason") }
    }

    func device(_ id: UUID) throws -> (active: Bool, reason: String?) {
        let r = try conn.exec("SELECT active, deactivation_reason FROM push_devices WHERE id = $1::uuid", [.uuid(id)])
        return (try r.bool(0, "active"), try r.decode(0, "deactivation_reason"))
    }

    func jobs() throws -> [JobRowT] {
        let r = try conn.exec("""
            SELECT id, kind, notification_id, app_id, state, attempt, device_ids::text AS devices, lease_owner, lease_expires_at,
                   last_error, run_at
              FROM push_jobs ORDER BY id
            """)
        return try r.rows.map { i in
            let devices: String? = try r.decode(i, "devices")
            return JobRowT(id: try r.int64(i, "id"), kind: try r.decode(i, "kind"), notificationID: try r.uuid(i, "notification_id"),
                           appID: try r.uuid(i, "app_id"), state: try r.decode(i, "state"), attempt: try r.int(i, "attempt"),
                           deviceIDs: try devices.map { try Self.uuids($0) }, leaseOwner: try r.decode(i, "lease_owner"),
                           leaseExpiresAt: try r.decode(i, "lease_expires_at"),
                           lastError: try r.decode(i, "last_error"), runAt: try r.date(i, "run_at"))
        }
    }

    /// `{a,b}` of uuids.
    static func uuids(_ text: String) throws -> [UUID] {
        let inner = text.dropFirst().dropLast()
        if inner.isEmpty { return [] }
        return try inner.split(separator: ",").map {
            guard let u = UUID(uuidString: String($0)) else { throw PushError(.validationError, "not a uuid") }
            return u
        }
    }

    func openNotifications() throws -> Int {
        try conn.exec("SELECT count(*)::int AS n FROM push_notifications WHERE finished_at IS NULL").int(0, "n")
    }

    func smsOutbox() throws -> [UUID: (phone: String, text: String)] {
        let r = try conn.exec("SELECT notification_id, phone, text FROM push_sms_outbox")
        var out: [UUID: (phone: String, text: String)] = [:]
        for i in r.rows { out[try r.uuid(i, "notification_id")] = (try r.string(i, "phone"), try r.string(i, "text")) }
        return out
    }

    func stealLease(notification: UUID?, owner: String, expiresIn: TimeInterval?) throws {
        try conn.exec("""
            UPDATE push_jobs SET lease_token = gen_random_uuid(), lease_owner = $2::text,
                   lease_expires_at = coalesce(now() + make_interval(secs => $3::float8), lease_expires_at)
             WHERE state = 'running' AND ($1::uuid IS NULL OR notification_id = $1::uuid)
            """, [notification.map(PGValue.uuid), .text(owner), expiresIn.map(PGValue.double)])
    }

    func complete(job: Int64) throws {
        try conn.exec("UPDATE push_jobs SET state = 'completed', finalized_at = now(), lease_token = NULL, lease_owner = NULL, "
                      + "lease_expires_at = NULL WHERE id = $1::bigint", [.int64(job)])
    }

    func breakSessions() throws {
        try conn.exec("""
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
            """)
    }

    func breakSessionsAtSendTime(_ armed: Bool) throws {
        if armed {
            // The send-time step (which turns a notification job into its batch) ends its own session.
            try conn.execScript("""
                CREATE OR REPLACE FUNCTION test_cut_off() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$;
                CREATE TRIGGER test_cut_off BEFORE UPDATE OF kind ON push_jobs
                   FOR EACH ROW WHEN (OLD.kind = 'notification' AND NEW.kind = 'batch') EXECUTE FUNCTION test_cut_off();
                """)
        } else {
            try conn.exec("DROP TRIGGER IF EXISTS test_cut_off ON push_jobs")
        }
    }

    func setDeviceKey(_ id: UUID, raw: [UInt8]) throws {
        try conn.exec("UPDATE push_devices SET public_key = $1 WHERE id = $2", [.bytea(raw), .uuid(id)])
    }

    func setDevicePlatform(_ id: UUID, _ platform: String) throws {
        try conn.exec("UPDATE push_devices SET platform = $1 WHERE id = $2", [.text(platform), .uuid(id)])
    }

    func setNotificationData(_ n: UUID, _ data: String) throws {
        try conn.exec("UPDATE push_notifications SET data = $1 WHERE id = $2", [.text(data), .uuid(n)])
    }

    func setMaxAttempts(notification: UUID, _ n: Int) throws {
        try conn.exec("UPDATE push_jobs SET max_attempts = $2::int WHERE notification_id = $1::uuid", [.uuid(notification), .int(n)])
    }

    func addJob(kind: JobKind, notification: UUID, deviceIDs: [UUID]?, priority: Int, runAt: Date?) throws -> Int64 {
        try conn.exec("""
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            SELECT $1::text, id, app_id, $2::uuid[], $3::int, coalesce($4::timestamptz, now())
              FROM push_notifications WHERE id = $5::uuid RETURNING id
            """, [.text(kind.rawValue), deviceIDs.map { .uuidArray($0) }, .int(priority), runAt.map(PGValue.date),
                  .uuid(notification)]).int64(0, "id")
    }

    func removeJobs(notification: UUID) throws {
        try conn.exec("DELETE FROM push_jobs WHERE notification_id = $1::uuid", [.uuid(notification)])
    }

    func dueNow() throws {
        try conn.exec("UPDATE push_deliveries SET next_attempt_at = now() WHERE status = 'retrying'")
        try conn.exec("UPDATE push_jobs SET run_at = now() WHERE state = 'available'")
    }

    func report(_ n: UUID) throws -> ReportT {
        let r = try conn.exec("SELECT status, error_code, device_count FROM push_notifications WHERE id = $1", [.uuid(n)])
        guard r.rowCount == 1 else { throw PushError(.notFound, "no notification") }
        let d = try conn.exec("""
            SELECT device_id, status, error_code, error_detail, encrypted, provider, provider_message_id, apns_id, attempts,
                   failures, next_attempt_at, payload
              FROM push_deliveries WHERE notification_id = $1 ORDER BY device_id
            """, [.uuid(n)])
        let l = try conn.exec("SELECT device_id, kind, reason FROM push_ledger WHERE notification_id = $1 ORDER BY device_id, kind",
                              [.uuid(n)])
        return ReportT(
            status: try r.string(0, "status"), deviceCount: try r.int(0, "device_count"), errorCode: try r.decode(0, "error_code"),
            deliveries: try d.rows.map { i in
                ReportT.Delivery(deviceID: try d.uuid(i, "device_id"), status: try d.string(i, "status"),
                                 errorCode: try d.decode(i, "error_code"), errorDetail: try d.decode(i, "error_detail"),
                                 encrypted: try d.bool(i, "encrypted"), provider: try d.decode(i, "provider"),
                                 providerMessageID: try d.decode(i, "provider_message_id"), apnsID: try d.uuid(i, "apns_id"),
                                 attempts: try d.int(i, "attempts"), failures: try d.int(i, "failures"),
                                 nextAttemptAt: try d.decode(i, "next_attempt_at"), payloadBytes: try d.decode(i, "payload"))
            },
            ledger: try l.rows.map { i in
                ReportT.LedgerRow(deviceID: try l.uuid(i, "device_id"), kind: try l.string(i, "kind"), reason: try l.decode(i, "reason"))
            })
    }

    func appEvents(app: UUID, type: String) throws -> [[String: Any]] {
        let r = try conn.exec("SELECT payload::text AS p FROM push_events WHERE app_id = $1::uuid AND type = $2::text ORDER BY id",
                              [.uuid(app), .text(type)])
        return try r.rows.map { (try JSONSerialization.jsonObject(with: Data(try r.string($0, "p").utf8)) as? [String: Any]) ?? [:] }
    }

    func deliveries(device: UUID) throws -> [DeliveryRowT] {
        let r = try conn.exec("SELECT notification_id FROM push_deliveries WHERE device_id = $1::uuid", [.uuid(device)])
        return try r.rows.compactMap { try deliveries(try r.uuid($0, "notification_id"))[device] }
    }

    func activeDevices(app: UUID) throws -> Int {
        try conn.exec("SELECT count(*)::int AS n FROM push_devices WHERE app_id = $1::uuid AND active", [.uuid(app)]).int(0, "n")
    }

    func setCredentials(app: UUID, kind: CredentialKind, config: [String: String], secret: [UInt8],
                        keys: CredentialKeys) throws -> CredentialSummary {
        try CredentialStore(connection: conn, keys: keys).set(appID: app, kind: kind, config: config, secret: secret)
    }

    func credential(app: UUID, kind: CredentialKind) throws -> CredentialSummary? {
        try CredentialStore(connection: conn, keys: nil).states(appID: app).first { $0.kind == kind }
    }

    func credentialSource(keys: CredentialKeys) -> CredentialSource {
        let url = database.conninfo
        return PGCredentialSource(keys: keys) { try PGConnection.connect(url) }
    }

    func apnsTokenCache(keys: CredentialKeys) -> ProviderTokenCache {
        let url = database.conninfo
        return PGProviderTokenCache(keys: keys, log: Log(level: .error)) { try PGConnection.connect(url) }
    }

    func setDeviceLastRegistered(_ id: UUID, _ at: Date) throws {
        try conn.exec("UPDATE push_devices SET last_registered_at = $2 WHERE id = $1::uuid", [.uuid(id), .date(at)])
    }

    func setDeviceToken(_ id: UUID, _ token: String) throws {
        try conn.exec("UPDATE push_devices SET token = $2::text WHERE id = $1::uuid", [.uuid(id), .text(token)])
    }

    func setDeviceUser(_ id: UUID, _ user: String) throws {
        try conn.exec("UPDATE push_devices SET user_id = $2::text WHERE id = $1::uuid", [.uuid(id), .text(user)])
    }

    func deactivateDevice(_ id: UUID) throws {
        try conn.exec("UPDATE push_devices SET active = false, deactivated_at = now() WHERE id = $1::uuid", [.uuid(id)])
    }

    func startedAt(notification: UUID) throws -> Date? {
        try conn.exec("SELECT started_at FROM push_notifications WHERE id = $1::uuid", [.uuid(notification)]).decode(0, "started_at")
    }
}
