import Foundation
import PushCore
import PushProviders
import PushStore
import PushTestSupport
import PushWorker

/// A `TestWorld` on the in-memory queue store: no database, no server process.
final class MemoryWorld: TestWorld {
    let queue = InMemoryQueue()

    var sessions: QueueSessions { queue.workerSessions }
    func session() throws -> QueueStore { queue.session() }

    func createApp(requireEncryption: Bool, name: String) throws -> UUID {
        queue.appCreate(name: name, requireEncryption: requireEncryption)
    }

    func createApp(name: String, placeholderTitleLocKey: String?, placeholderBodyLocKey: String?) throws -> UUID {
        queue.appCreate(name: name, placeholderTitleLocKey: placeholderTitleLocKey, placeholderBodyLocKey: placeholderBodyLocKey)
    }

    func updateApp(_ app: UUID, requireEncryption: Bool) throws {
        guard queue.appUpdate(id: app, requireEncryption: requireEncryption) else { throw PushError(.notFound, "no app") }
    }

    func updateApp(_ app: UUID, contentMode: ContentMode) throws {
        guard queue.appUpdate(id: app, contentMode: contentMode) else { throw PushError(.notFound, "no app") }
    }

    func contentMode(notification: UUID) throws -> ContentMode? {
        queue.notifications[notification]?.row.contentMode
    }

    func deleteApp(_ app: UUID) throws {
        guard queue.appDelete(id: app) else { throw PushError(.notFound, "no app") }
    }

    func register(_ app: UUID, _ r: DeviceRegistration, appLimit: Int64?) throws -> UUID {
        try queue.register(appID: app, r, appLimit: appLimit).deviceID
    }

    func enqueue(_ q: EnqueueRequest) throws -> (id: UUID, created: Bool) { try queue.enqueue(q) }
    func enqueue(_ q: EnqueueRequest, now: Date) throws -> (id: UUID, created: Bool) { try queue.enqueue(q, now: now) }
    func cancel(_ n: UUID) throws -> Bool { queue.cancel(id: n) }
    func inOneTransaction(_ body: () throws -> Void) throws { try body() }

    func expiresAt(notification n: UUID) throws -> Date {
        guard let row = queue.notifications[n] else { throw PushError(.notFound, "no notification") }
        return row.row.expiresAt
    }

    func rowCounts() throws -> (notifications: Int, jobs: Int, charges: Int, refunds: Int) {
        queue.locked { q in
            (q.notifications.count, q.jobs.count, q.ledger.keys.filter { $0.kind == "charge" }.count,
             q.ledger.keys.filter { $0.kind == "refund" }.count)
        }
    }

    func deliveries(_ n: UUID) throws -> [UUID: DeliveryRowT] {
        queue.locked { q in
            var out: [UUID: DeliveryRowT] = [:]
            for (key, d) in q.deliveries where key.notification == n {
                out[key.device] = DeliveryRowT(deviceID: key.device, status: d.status.rawValue, errorCode: d.errorCode,
                                               errorDetail: d.errorDetail, encrypted: d.encrypted, attempts: d.attempts,
                                               failures: d.failures, apnsID: d.apnsID, providerMessageID: d.providerMessageID,
                                               payload: d.payload)
            }
            return out
        }
    }

    func ledger(_ n: UUID) throws -> [UUID: (charges: Int, refunds: Int)] {
        queue.locked { q in
            var out: [UUID: (charges: Int, refunds: Int)] = [:]
            for key in q.ledger.keys where key.notification == n {
                var e = out[key.device] ?? (0, 0)
                if key.kind == "charge" { e.charges += 1 } else { e.refunds += 1 }
                out[key.device] = e
            }
            return out
        }
    }

    func notification(_ n: UUID) throws -> NotificationStateT {
        try queue.locked { q in
            guard let row = q.notifications[n] else { throw PushError(.notFound, "no notification") }
            return NotificationStateT(status: row.row.status.rawValue, errorCode: row.errorCode, encrypted: row.row.encrypted,
                                      deviceCount: row.deviceCount)
        }
    }

    func events(type: String, device: UUID) throws -> [String] {
        queue.locked { q in
            q.events.filter { $0.type == type && $0.payload["device_id"] == device.uuidString.lowercased() }
                .compactMap { $0.payload["reason"] }
        }
    }

    func device(_ id: UUID) throws -> (active: Bool, reason: String?) {
        try queue.locked { q in
            guard let d = q.devices[id] else { throw PushError(.notFound, "no device") }
            return (d.active, d.deactivationReason)
        }
    }

    func jobs() throws -> [JobRowT] {
        queue.locked { q in
            q.jobs.values.sorted { $0.id < $1.id }.map { j in
                JobRowT(id: j.id, kind: j.kind, notificationID: j.notificationID, appID: j.appID, state: j.state,
                        attempt: j.attempt, deviceIDs: j.deviceIDs, leaseOwner: j.leaseOwner, leaseExpiresAt: j.leaseExpiresAt,
                        lastError: j.lastError,
                        runAt: j.runAt)
            }
        }
    }

    func openNotifications() throws -> Int { queue.locked { $0.notifications.values.filter { $0.finishedAt == nil }.count } }

    func smsOutbox() throws -> [UUID: (phone: String, text: String)] { queue.locked { $0.smsOutbox } }

    func stealLease(notification: UUID?, owner: String, expiresIn: TimeInterval?) throws {
        let now = Date()
        queue.alterJobs(where: { $0.state == .running && (notification == nil || $0.notificationID == notification) }) { j in
            j.leaseToken = UUID()
            j.leaseOwner = owner
            if let expiresIn { j.leaseExpiresAt = now.addingTimeInterval(expiresIn) }
        }
    }

    func complete(job: Int64) throws {
        queue.alterJobs(where: { $0.id == job }) { j in
            j.state = .completed
            j.finalizedAt = Date()
            j.leaseToken = nil
            j.leaseOwner = nil
            j.leaseExpiresAt = nil
        }
    }

    func breakSessions() throws { queue.breakSessions() }

    func breakSessionsAtSendTime(_ armed: Bool) throws {
        if armed {
            queue.beforeOperation = { (operation: InMemoryQueue.Operation, session: InMemoryQueueSession) in
                if operation == .start { session.breakSession() }
            }
        } else {
            queue.beforeOperation = nil
        }
    }

    func setDeviceKey(_ id: UUID, raw: [UInt8]) throws { queue.alterDevice(id) { $0.publicKey = raw } }
    func setDevicePlatform(_ id: UUID, _ platform: String) throws { queue.alterDevice(id) { $0.platform = platform } }
    func setNotificationData(_ n: UUID, _ data: String) throws { queue.alterNotification(n) { $0.row.data = data } }

    func setMaxAttempts(notification: UUID, _ n: Int) throws {
        queue.alterJobs(where: { $0.notificationID == notification }) { $0.maxAttempts = n }
    }

    func addJob(kind: JobKind, notification: UUID, deviceIDs: [UUID]?, priority: Int, runAt: Date?) throws -> Int64 {
        queue.addJob(kind: kind, notification: notification, deviceIDs: deviceIDs, runAt: runAt, priority: priority)
    }

    func removeJobs(notification: UUID) throws { queue.removeJobs(notification: notification) }

    func dueNow() throws {
        let now = Date()
        queue.alterDeliveries(where: { $1.status == .retrying }) { $0.nextAttemptAt = now }
        queue.alterJobs(where: { $0.state == .available }) { $0.runAt = now }
    }

    func report(_ n: UUID) throws -> ReportT {
        try queue.locked { q in
            guard let row = q.notifications[n] else { throw PushError(.notFound, "no notification") }
            let deliveries = q.deliveries.filter { $0.key.notification == n }.map { key, d in
                ReportT.Delivery(deviceID: key.device, status: d.status.rawValue, errorCode: d.errorCode, errorDetail: d.errorDetail,
                                 encrypted: d.encrypted, provider: d.provider, providerMessageID: d.providerMessageID,
                                 apnsID: d.apnsID, attempts: d.attempts, failures: d.failures, nextAttemptAt: d.nextAttemptAt,
                                 payloadBytes: d.payload)
            }
            let ledger = q.ledger.filter { $0.key.notification == n }.map { key, reason in
                ReportT.LedgerRow(deviceID: key.device, kind: key.kind, reason: reason)
            }
            return ReportT(status: row.row.status.rawValue, deviceCount: row.deviceCount, errorCode: row.errorCode,
                           deliveries: deliveries, ledger: ledger)
        }
    }

    func appEvents(app: UUID, type: String) throws -> [[String: Any]] {
        queue.locked { q in q.events.filter { $0.appID == app && $0.type == type }.map { $0.payload as [String: Any] } }
    }

    func deliveries(device: UUID) throws -> [DeliveryRowT] {
        queue.locked { q in
            q.deliveries.filter { $0.key.device == device }.map { key, d in
                DeliveryRowT(deviceID: key.device, status: d.status.rawValue, errorCode: d.errorCode, errorDetail: d.errorDetail,
                             encrypted: d.encrypted, attempts: d.attempts, failures: d.failures, apnsID: d.apnsID,
                             providerMessageID: d.providerMessageID, payload: d.payload)
            }
        }
    }

    func activeDevices(app: UUID) throws -> Int {
        queue.locked { q in q.devices.values.filter { $0.appID == app && $0.active }.count }
    }

    func setCredentials(app: UUID, kind: CredentialKind, config: [String: String], secret: [UInt8],
                        keys: CredentialKeys) throws -> CredentialSummary {
        let stored = try CredentialValidation.validate(kind: kind, config: config, secret: secret)
        queue.credentialSet(app: app, kind: kind, identifiers: stored, secret: secret)
        return try XCTUnwrapSummary(try credential(app: app, kind: kind))
    }

    func credential(app: UUID, kind: CredentialKind) throws -> CredentialSummary? {
        try queue.credentialSource.states(appID: app).first { $0.kind == kind }
    }

    func credentialSource(keys: CredentialKeys) -> CredentialSource { queue.credentialSource }

    func apnsTokenCache(keys: CredentialKeys) -> ProviderTokenCache { InMemoryProviderTokenCache() }

    func setDeviceLastRegistered(_ id: UUID, _ at: Date) throws { queue.alterDevice(id) { $0.lastRegisteredAt = at } }
    func setDeviceToken(_ id: UUID, _ token: String) throws { queue.alterDevice(id) { $0.token = token } }
    func setDeviceUser(_ id: UUID, _ user: String) throws { queue.alterDevice(id) { $0.userID = user } }

    func deactivateDevice(_ id: UUID) throws {
        let now = Date()
        queue.alterDevice(id) { d in
            d.active = false
            d.deactivatedAt = now
        }
    }

    func startedAt(notification: UUID) throws -> Date? { queue.locked { $0.notifications[notification]?.startedAt } }

    private func XCTUnwrapSummary(_ s: CredentialSummary?) throws -> CredentialSummary {
        guard let s else { throw PushError(.notFound, "the set was not stored") }
        return s
    }
}
