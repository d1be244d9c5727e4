import Foundation
import PushCore
import PushStore

/// Send time and batches, as push_start_notifications, JobQueries.loadBatchDevices, push_record
/// and push_finalize_notifications do them. Called under the lock.
extension InMemoryQueue {
    func start(_ leases: [JobLease], batchSize: Int, goneLedger: LedgerAction, now: Date) throws -> [Int64: StartOutcome] {
        guard goneLedger == .none || goneLedger == .refund else {
            throw QueueStoreError.failed("VALIDATION_ERROR: p_gone_ledger must be none or refund (a gone device was charged)")
        }
        var out: [Int64: StartOutcome] = [:]
        for lease in leases {
            guard let job = held(lease), let n = notifications[job.notificationID] else {
                out[lease.id] = .leaseLost
                continue
            }
            guard n.row.status == .pending else {
                out[lease.id] = .notPending(n.row.status)
                continue
            }
            let app = apps[n.row.appID]
            let encrypted = app?.requireEncryption ?? false
            let contentMode = app?.contentMode ?? .sealed
            let targets = devices.values.filter { d in
                app?.deleted == false && d.appID == n.row.appID && d.mode == n.row.mode && d.active
                    && n.userIDs.contains(d.userID) && (n.deviceIDs?.contains(d.id) ?? true)
            }.map(\.id).sorted { $0.uuidString < $1.uuidString }
            let targeted = Set(targets)
            var gone = 0
            for key in ledger.keys where key.notification == n.row.id && key.kind == "charge" && !targeted.contains(key.device) {
                let dk = DeliveryKey(notification: n.row.id, device: key.device)
                guard deliveries[dk] == nil else { continue }
                deliveries[dk] = Delivery(status: .failed, errorCode: ErrorCode.deviceGone.rawValue,
                                          errorDetail: "charged at acceptance, no longer targeted at send time",
                                          apnsID: Self.apnsID(n.row.id, key.device), finishedAt: now)
                gone += 1
                if goneLedger == .refund {
                    let refund = LedgerKey(notification: n.row.id, device: key.device, kind: "refund")
                    if ledger[refund] == nil { ledger[refund] = ErrorCode.deviceGone.rawValue }
                }
            }
            var batches: Int
            var inline: [UUID]?
            if targets.count <= batchSize {
                batches = targets.isEmpty ? 0 : 1
                jobs[job.id]?.kind = .batch
                jobs[job.id]?.deviceIDs = targets
                inline = targets
            } else {
                batches = 0
                for start in stride(from: 0, to: targets.count, by: batchSize) {
                    _ = insertJob(Job(id: 0, kind: .batch, notificationID: n.row.id, appID: n.row.appID,
                                      deviceIDs: Array(targets[start ..< min(start + batchSize, targets.count)]),
                                      priority: job.priority, runAt: now))
                    batches += 1
                }
                unlease(job.id, state: .completed, now: now)
            }
            notifications[n.row.id]?.row.status = .sending
            notifications[n.row.id]?.row.encrypted = encrypted
            notifications[n.row.id]?.row.contentMode = contentMode
            notifications[n.row.id]?.startedAt = now
            notifications[n.row.id]?.remainingBatches = batches
            out[lease.id] = .started(NotificationStart(inlineDeviceIDs: inline, batchJobs: batches, gone: gone, encrypted: encrypted,
                                                         contentMode: contentMode))
        }
        return out
    }

    func load(_ batches: [DeviceBatch]) -> [[BatchDeviceRow]] {
        batches.map { b in
            let n = notifications[b.notificationID]
            return b.deviceIDs.map { id in
                let d = devices[id]
                let del = deliveries[DeliveryKey(notification: b.notificationID, device: id)]
                var targeted = false
                if let d, let n {
                    let since = n.startedAt.map { d.lastRegisteredAt < $0.addingTimeInterval(-60) } ?? false
                    targeted = d.appID == n.row.appID && d.mode == n.row.mode && d.active
                        && (since || n.userIDs.contains(d.userID)) && (n.deviceIDs?.contains(d.id) ?? true)
                }
                return BatchDeviceRow(deviceID: id, found: d != nil, targeted: targeted, platform: d?.platform, token: d?.token,
                                      endpoint: d?.endpoint, p256dh: d?.p256dh, authSecret: d?.authSecret,
                                      apnsEnvironment: d?.apnsEnvironment, publicKey: d?.publicKey, kid: d?.kid,
                                      lastRegisteredAt: d?.lastRegisteredAt, deliveryStatus: del?.status,
                                      attempts: del?.attempts ?? 0, failures: del?.failures ?? 0,
                                      nextAttemptAt: del?.nextAttemptAt,
                                      charged: ledger[LedgerKey(notification: b.notificationID, device: id, kind: "charge")] != nil,
                                      apnsID: Self.apnsID(b.notificationID, id))
            }
        }
    }

    func record(_ outcomes: [BatchOutcome], now: Date, decideFinal: FinalDecision) -> [Int64: RecordOutcome] {
        var results: [Int64: RecordOutcome] = [:]
        var finals: [(UUID, NotificationOutcome)] = []
        for o in outcomes {
            guard let job = held(o.job.lease), let n = notifications[job.notificationID] else {
                results[o.job.id] = .leaseLost
                continue
            }
            let nid = n.row.id
            if let final = o.final { finalsGiven[nid] = final }
            var deactivated = 0
            for r in o.records {
                let key = DeliveryKey(notification: nid, device: r.deviceID)
                if deliveries[key].map({ $0.status == .retrying }) ?? true {
                    deliveries[key] = Delivery(status: r.status, errorCode: r.errorCode?.rawValue,
                                               errorDetail: r.errorDetail.map { String($0.prefix(500)) }, encrypted: r.encrypted,
                                               provider: r.provider?.rawValue, providerMessageID: r.providerMessageID,
                                               apnsID: Self.apnsID(nid, r.deviceID), attempts: r.attempts, failures: r.failures,
                                               nextAttemptAt: r.status == .retrying ? r.nextAttemptAt : nil, payload: r.payload,
                                               finishedAt: r.status == .retrying ? nil : now)
                }
                if r.ledger == .charge || r.ledger == .refund {
                    let lk = LedgerKey(notification: nid, device: r.deviceID, kind: r.ledger.rawValue)
                    if ledger[lk] == nil { ledger[lk] = r.errorCode?.rawValue ?? "sent" }
                }
                // R-PRV-1/2 with R-DEV-8 ordering: a verdict older than the last registration is ignored.
                if let reason = r.deactivateReason, let d = devices[r.deviceID], d.active, d.lastRegisteredAt < (r.verdictAt ?? now) {
                    devices[d.id]?.active = false
                    devices[d.id]?.deactivatedAt = now
                    devices[d.id]?.deactivationReason = reason.rawValue
                    events.append(Event(appID: d.appID, type: "push_device.deactivated",
                                        payload: ["device_id": d.id.uuidString.lowercased(), "user_id": d.userID,
                                                  "mode": d.mode.rawValue, "reason": reason.rawValue,
                                                  "notification_id": nid.uuidString.lowercased()]))
                    deactivated += 1
                }
            }
            for c in o.credentials.invalid {
                let key = Self.credentialKey(n.row.appID, c.kind)
                guard let set = credentials[key], set.state != .invalid else { continue }
                credentials[key]?.state = .invalid
                credentials[key]?.invalidReason = c.reason
                events.append(Event(appID: n.row.appID, type: "push_app.credentials_invalid",
                                    payload: ["kind": c.kind.rawValue, "reason": c.reason]))
            }
            for kind in o.credentials.accepted {
                let key = Self.credentialKey(n.row.appID, kind)
                guard let set = credentials[key], set.firstAcceptedAt == nil || set.state == .unverified else { continue }
                if set.state == .unverified { credentials[key]?.state = .verified }
                credentials[key]?.firstAcceptedAt = set.firstAcceptedAt ?? now
            }
            let retrying = o.records.filter { $0.status == .retrying }
            var remaining = n.remainingBatches
            if retrying.isEmpty {
                remaining = max(remaining - 1, 0)
                notifications[nid]?.remainingBatches = remaining
            } else {
                _ = insertJob(Job(id: 0, kind: .batch, notificationID: nid, appID: n.row.appID,
                                  deviceIDs: retrying.map(\.deviceID).sorted { $0.uuidString < $1.uuidString },
                                  priority: job.priority, runAt: retrying.compactMap(\.nextAttemptAt).min() ?? now))
            }
            unlease(job.id, state: .completed, now: now)
            var endings: [DeliveryEnding]?
            if remaining == 0 {
                let rows = deliveries.filter { $0.key.notification == nid }.sorted { $0.key.device.uuidString < $1.key.device.uuidString }
                let list = rows.map { key, d in
                    DeliveryEnding(recordedCode: d.status == .sent ? nil : d.errorCode,
                                   netsCharge: ledger[LedgerKey(notification: nid, device: key.device, kind: "charge")] != nil
                                       && ledger[LedgerKey(notification: nid, device: key.device, kind: "refund")] == nil)
                }
                endings = list
                finals.removeAll { $0.0 == nid }
                // A final state given with the record (a sole batch's, sql/0023) is stored as told.
                finals.append((nid, o.final ?? decideFinal(list, n.smsPhone != nil)))
            }
            results[o.job.id] = .recorded(BatchRecordResult(remainingBatches: remaining, deactivated: deactivated,
                                                            endings: endings, hasSMSFallback: n.smsPhone != nil))
        }
        for (nid, outcome) in finals {
            guard let n = notifications[nid], n.finishedAt == nil else { continue }
            notifications[nid]?.row.status = NotificationState(outcome.status)
            notifications[nid]?.errorCode = outcome.errorCode?.rawValue
            notifications[nid]?.finishedAt = now
            notifications[nid]?.remainingBatches = 0
            notifications[nid]?.deviceCount = outcome.deviceCount
            if outcome.status == .smsFallback, let phone = n.smsPhone, let text = n.smsText, smsOutbox[nid] == nil {
                smsOutbox[nid] = (phone, text)
            }
        }
        return results
    }
}
