import Foundation
import PushCore
import PushProviders
import PushStore

/// The API side of the in-memory world: registration (R-DEV-2..8, as push_register_device),
/// enqueue (as push_enqueue) and cancel (as push_cancel).
extension InMemoryQueue {
    /// Registers (upserts) a validated device (R-DEV-2, R-DEV-4..8). Limits default to PushCore's
    /// `DeviceLimits`. - Throws: `PushError` `NOT_FOUND`, `PUSH_DEVICE_LIMIT` (nothing changed then).
    @discardableResult
    public func register(appID: UUID, _ r: DeviceRegistration, appLimit: Int64? = nil,
                         userLimit: Int = DeviceLimits.perUser) throws -> RegistrationResult {
        try lock.withLock {
            guard let app = apps[appID], !app.deleted else { throw PushError(.notFound, "push app \(appID) does not exist") }
            let now = clock()
            var all = devices
            let endpoint: String? = r.subscription?.endpoint
            let existing = all.values.first { (d: Device) -> Bool in
                guard d.appID == appID, d.mode == r.mode else { return false }
                if let token = r.token { return d.token == token }
                return d.endpoint == endpoint
            }
            var device = existing ?? Device(id: UUID(), appID: appID, mode: r.mode, platform: r.platform.rawValue,
                                            token: r.token, endpoint: r.subscription?.endpoint, userID: r.userID,
                                            lastRegisteredAt: now)
            let created = existing == nil
            let reactivated = !(existing?.active ?? true)
            device.platform = r.platform.rawValue
            device.userID = r.userID
            device.apnsEnvironment = r.apnsEnvironment
            device.p256dh = r.subscription?.p256dh
            device.authSecret = r.subscription?.auth
            switch r.key {
            case .keep: break
            case .set(let raw, let kid): device.publicKey = raw; device.kid = kid
            case .remove: device.publicKey = nil; device.kid = nil
            }
            device.active = true
            device.deactivatedAt = nil
            device.deactivationReason = nil
            device.lastRegisteredAt = max(device.lastRegisteredAt, now)
            if created || reactivated {
                let limit = appLimit ?? DeviceLimits.perApp(r.mode)
                let deviceID = device.id
                let active = all.values.filter { (d: Device) -> Bool in
                    d.appID == appID && d.mode == r.mode && d.active && d.id != deviceID
                }.count
                if Int64(active) >= limit {
                    throw PushError(.pushDeviceLimit, "the app has \(active) active \(r.mode.rawValue) devices, its limit is \(limit)")
                }
            }
            all[device.id] = device
            // R-DEV-5: besides this device, keep the user's (limit - 1) most recently registered active devices.
            let deviceID = device.id
            let others = all.values.filter { (d: Device) -> Bool in
                d.appID == appID && d.mode == r.mode && d.userID == r.userID && d.active && d.id != deviceID
            }.sorted { (a: Device, b: Device) -> Bool in
                a.lastRegisteredAt != b.lastRegisteredAt ? a.lastRegisteredAt > b.lastRegisteredAt : a.id.uuidString > b.id.uuidString
            }
            var evicted: [UUID] = []
            for d in others.dropFirst(max(0, userLimit - 1)) {
                all[d.id]?.active = false
                all[d.id]?.deactivatedAt = now
                all[d.id]?.deactivationReason = ErrorCode.deviceLimit.rawValue
                evicted.append(d.id)
                events.append(Event(appID: appID, type: "push_device.deactivated",
                                    payload: ["device_id": d.id.uuidString.lowercased(), "user_id": d.userID,
                                              "mode": r.mode.rawValue, "reason": ErrorCode.deviceLimit.rawValue]))
            }
            devices = all
            let stored = StoredDevice(id: device.id, appID: appID, platform: device.platform, userID: device.userID,
                                      apnsEnvironment: device.apnsEnvironment?.rawValue, active: true, encryptionKeyID: device.kid,
                                      createdAt: existing?.lastRegisteredAt ?? now, lastRegisteredAt: device.lastRegisteredAt)
            return RegistrationResult(deviceID: device.id, created: created, reactivated: reactivated, evicted: evicted,
                                      device: stored)
        }
    }

    /// Deactivates a device as `reason` (deletion is `DELETED`, R-DEV-7). False when not active.
    @discardableResult
    public func deactivate(_ id: UUID, reason: String = "DELETED") -> Bool {
        lock.withLock {
            guard devices[id]?.active == true else { return false }
            devices[id]?.active = false
            devices[id]?.deactivatedAt = clock()
            devices[id]?.deactivationReason = reason
            return true
        }
    }

    /// Changes a stored device row as a hand-written UPDATE would (bad-input tests).
    public func alterDevice(_ id: UUID, _ change: (inout Device) -> Void) {
        lock.withLock { if var d = devices[id] { change(&d); devices[id] = d } }
    }

    /// Changes a stored notification row as a hand-written UPDATE would (bad-input tests).
    public func alterNotification(_ id: UUID, _ change: (inout Notification) -> Void) {
        lock.withLock { if var n = notifications[id] { change(&n); notifications[id] = n } }
    }

    /// Changes stored job rows as a hand-written UPDATE would (lease tests).
    public func alterJobs(where match: (Job) -> Bool, _ change: (inout Job) -> Void) {
        lock.withLock {
            for (id, job) in jobs where match(job) { var j = job; change(&j); jobs[id] = j }
        }
    }

    /// Changes stored delivery rows as a hand-written UPDATE would.
    public func alterDeliveries(where match: (DeliveryKey, Delivery) -> Bool, _ change: (inout Delivery) -> Void) {
        lock.withLock {
            for (key, d) in deliveries where match(key, d) { var x = d; change(&x); deliveries[key] = x }
        }
    }

    /// Deletes the jobs of `notification` as a hand-written DELETE would.
    public func removeJobs(notification: UUID) {
        lock.withLock { jobs = jobs.filter { $0.value.notificationID != notification } }
    }

    /// Inserts a job row as a hand-written INSERT would; returns its id.
    @discardableResult
    public func addJob(kind: JobKind, notification: UUID, deviceIDs: [UUID]?, runAt: Date? = nil, priority: Int = 0) -> Int64 {
        lock.withLock {
            let appID = notifications[notification]?.row.appID ?? UUID()
            return insertJob(Job(id: 0, kind: kind, notificationID: notification, appID: appID, deviceIDs: deviceIDs,
                                 priority: priority, runAt: runAt ?? clock()))
        }
    }

    // MARK: - Enqueue and cancel

    /// Accepts one notification as push_enqueue does: refuses what can never fit, answers an
    /// earlier notification for a reused idempotency key, charges each device the policy would
    /// deliver to now (R-SEND-9), queues the notification job at its send time. `now`: the
    /// acceptance instant (default the store's clock), as push_enqueue's.
    /// - Throws: `PushError` `NOT_FOUND`, `VALIDATION_ERROR`, `PUSH_PAYLOAD_TOO_LARGE`.
    @discardableResult
    public func enqueue(_ q: EnqueueRequest, now acceptedAt: Date? = nil) throws -> (id: UUID, created: Bool) {
        try lock.withLock {
            guard let app = apps[q.appID], !app.deleted else { throw PushError(.notFound, "push app \(q.appID) does not exist") }
            guard let mode = Mode(rawValue: q.mode) else { throw PushError(.validationError, "mode must be test or live") }
            guard !q.userIDs.isEmpty else { throw PushError(.validationError, "at least one user is required") }
            guard let priority = Priority(rawValue: q.priority ?? "high") else {
                throw PushError(.validationError, "priority must be high or normal")
            }
            let ttl = q.ttlSeconds ?? Expiry.maxTTLSeconds
            guard (0...Expiry.maxTTLSeconds).contains(ttl) else { throw PushError(.validationError, "ttl out of range") }
            guard (q.smsPhone == nil) == (q.smsText == nil) else {
                throw PushError(.validationError, "an SMS fallback needs both a phone number and a text")
            }
            let loc = LocalizedText(titleLocKey: q.titleLocKey, titleLocArgs: q.titleLocArgs, bodyLocKey: q.bodyLocKey,
                                    bodyLocArgs: q.bodyLocArgs)
            let bytes = (q.title?.utf8.count ?? 0) + (q.body?.utf8.count ?? 0) + (q.data?.utf8.count ?? 0) + loc.textBytes
            guard bytes <= PayloadSizeRule.limit || app.contentMode == .idsOnly else {
                throw PushError(.pushPayloadTooLarge, "content is \(bytes) bytes and can never fit in 4096")
            }
            if let key = q.idempotencyKey,
               let earlier = notifications.values.first(where: { $0.row.appID == q.appID && $0.row.mode == mode && $0.idempotencyKey == key }) {
                return (earlier.row.id, false)
            }
            let now = acceptedAt ?? clock()
            let id = UUID()
            let row = NotificationRow(id: id, appID: q.appID, mode: mode, status: .pending, title: q.title, body: q.body,
                                      data: q.data, badge: q.badge, sound: q.sound, threadID: q.threadID,
                                      collapseKey: q.collapseKey, priority: priority, ttlSeconds: ttl, acceptedAt: now,
                                      sendAt: q.sendAt, expiresAt: Self.expiresAt(accepted: now, sendAt: q.sendAt, ttl: ttl),
                                      hasSMSFallback: q.smsPhone != nil, kindFields: Self.kindFields(q))
            notifications[id] = Notification(row: row, userIDs: q.userIDs, deviceIDs: q.deviceIDs, idempotencyKey: q.idempotencyKey,
                                             smsPhone: q.smsPhone, smsText: q.smsText)
            for d in devices.values where d.appID == q.appID && d.mode == mode && d.active && q.userIDs.contains(d.userID)
                && (q.deviceIDs?.contains(d.id) ?? true)
                && DeliveryPlanner.policyDelivers(
                    hasKey: d.publicKey != nil,
                    encryptsItself: ProviderTable.standard.provider(for: Platform(rawValue: d.platform))?.payload.encryptsItself ?? false,
                    requireEncryption: app.requireEncryption, contentMode: app.contentMode) {
                ledger[LedgerKey(notification: id, device: d.id, kind: "charge")] = "accepted"
            }
            _ = insertJob(Job(id: 0, kind: .notification, notificationID: id, appID: q.appID,
                              runAt: max(now, q.sendAt ?? now)))
            return (id, true)
        }
    }

    /// The kind columns as push_enqueue stores them (sql/0011: `alert` by default) and the claim reads
    /// them back (the loc args as `array_to_json` text). Their rules are PushCore's, checked by the
    /// worker when it builds the content, as for a row of PostgreSQL.
    static func kindFields(_ q: EnqueueRequest) -> NotificationKindFields {
        func json(_ args: [String]?) -> String? {
            guard let args else { return nil }
            var out: [UInt8] = []
            JSONWriter.appendStrings(args, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        return NotificationKindFields(
            pushType: q.pushType ?? "alert", interruptionLevel: q.interruptionLevel, relevanceScore: q.relevanceScore,
            category: q.category, targetContentID: q.targetContentID, criticalSoundName: q.criticalSoundName,
            criticalSoundVolume: q.criticalSoundVolume, titleLocKey: q.titleLocKey, titleLocArgsJSON: json(q.titleLocArgs),
            bodyLocKey: q.bodyLocKey, bodyLocArgsJSON: json(q.bodyLocArgs), channelID: q.channelID)
    }

    /// max(accepted, send_at) + ttl, as push_expires_at stores it (held to it by the conformance suite).
    static func expiresAt(accepted: Date, sendAt: Date?, ttl: Int) -> Date {
        max(accepted, sendAt ?? accepted).addingTimeInterval(TimeInterval(ttl))
    }

    /// Cancels a notification whose send time has not come (its job still waiting), refunding
    /// every acceptance charge. False when it is too late.
    @discardableResult
    public func cancel(id: UUID) -> Bool {
        lock.withLock {
            guard let n = notifications[id], n.row.status == .pending,
                  let job = jobs.values.first(where: { $0.notificationID == id && $0.kind == .notification && $0.state == .available })
            else { return false }
            let now = clock()
            jobs[job.id]?.state = .cancelled
            jobs[job.id]?.finalizedAt = now
            notifications[id]?.row.status = .cancelled
            notifications[id]?.errorCode = ErrorCode.cancelled.rawValue
            notifications[id]?.finishedAt = now
            for key in ledger.keys where key.notification == id && key.kind == "charge" {
                let refund = LedgerKey(notification: id, device: key.device, kind: "refund")
                if ledger[refund] == nil { ledger[refund] = ErrorCode.cancelled.rawValue }
            }
            return true
        }
    }
}
