import Foundation
import PushCore

extension PGQueueStore {
    // MARK: - Send time

    public func notificationStart(_ jobs: [JobLease], batchSize: Int, goneLedger: LedgerAction,
                                  now: Date?) throws -> [Int64: StartOutcome] {
        if jobs.isEmpty { return [:] }
        return try Self.run {
            let r = try connection.execPrepared(name: "notification_start_many", sql: JobQueries.startNotifications, params: [
                .int64Array(jobs.map(\.id)), .uuidArray(jobs.map(\.token)), .int(batchSize), .text(goneLedger.rawValue),
                now.map(PGValue.date),
            ])
            var out: [Int64: StartOutcome] = [:]
            for i in r.rows {
                let id = try r.int64(i, "job_id")
                switch try r.string(i, "outcome") {
                case "lease_lost":
                    out[id] = .leaseLost
                case "orphaned":
                    out[id] = .orphaned
                case "not_pending":
                    out[id] = .notPending(try r.decode(i, "status"))
                case "started":
                    let inline: [UUID]? = try r.isNull(i, "inline_device_ids") ? nil
                        : try PGArrayText.uuids(r.string(i, "inline_device_ids"))
                    out[id] = .started(NotificationStart(inlineDeviceIDs: inline, batchJobs: try r.int(i, "batch_jobs"),
                                                         gone: try r.int(i, "gone"), encrypted: try r.bool(i, "encrypted"),
                                                         contentMode: try r.decode(i, "content_mode")))
                case let other:
                    throw PGError(code: .decode, message: "push_start_notifications answered outcome \(other.prefix(20))")
                }
            }
            return out
        }
    }

    public func audienceSplit(_ job: JobLease, batchSize: Int, request: SplitRequest, now: Date?) throws -> SplitOutcome {
        try Self.run {
            let r = try connection.execPrepared(name: "audience_split", sql: JobQueries.splitAudience, params: [
                .int64(job.id), .uuid(job.token), .int(request.chunkDevices), .int(batchSize),
                .int(request.maxPendingBatches), .double(request.waitSeconds), now.map(PGValue.date),
            ])
            let jobs = try r.int(0, "batch_jobs"), devices = try r.int(0, "devices"), charged = try r.int(0, "charged")
            switch try r.string(0, "outcome") {
            case "split": return .split(batchJobs: jobs, devices: devices, charged: charged)
            case "done": return .done(batchJobs: jobs, devices: devices, charged: charged)
            case "throttled": return .throttled
            case "not_sending": return .notSending
            case "lease_lost": return .leaseLost
            case "orphaned": return .orphaned
            case let other:
                throw PGError(code: .decode, message: "push_split_audience answered outcome \(other.prefix(20))")
            }
        }
    }

    // MARK: - Batches

    public func batchLoadDevices(_ batches: [DeviceBatch]) throws -> [[BatchDeviceRow]] {
        var index: [Int64] = [], notifications: [UUID?] = [], devices: [UUID?] = []
        for (i, b) in batches.enumerated() {
            for d in b.deviceIDs {
                index.append(Int64(i + 1))
                notifications.append(b.notificationID)
                devices.append(d)
            }
        }
        var out = [[BatchDeviceRow]](repeating: [], count: batches.count)
        if devices.isEmpty { return out }
        return try Self.run {
            let r = try connection.execPrepared(name: "batch_load_devices", sql: JobQueries.loadBatchDevices,
                                                params: [.int64Array(index), .uuidArray(notifications), .uuidArray(devices)])
            let k = try DeviceColumns(r)
            for i in r.rows {
                let row = BatchDeviceRow(
                    deviceID: try r.uuid(i, k.deviceId), found: try r.bool(i, k.found),
                    targeted: try r.bool(i, k.targeted), platform: try r.decode(i, k.platform),
                    token: try r.decode(i, k.token), endpoint: try r.decode(i, k.endpoint),
                    p256dh: try r.decode(i, k.p256dh), authSecret: try r.decode(i, k.authSecret),
                    apnsEnvironment: try r.decode(i, k.apnsEnvironment),
                    publicKey: try r.decode(i, k.publicKey), kid: try r.decode(i, k.kid),
                    lastRegisteredAt: try r.decode(i, k.lastRegisteredAt),
                    deliveryStatus: try r.decode(i, k.deliveryStatus), attempts: try r.int(i, k.attempts),
                    failures: try r.int(i, k.failures), nextAttemptAt: try r.decode(i, k.nextAttemptAt),
                    charged: try r.bool(i, k.charged), apnsID: try r.uuid(i, k.apnsId))
                out[try r.int(i, k.batch) - 1].append(row)
            }
            return out
        }
    }

    /// Two round trips at most, in one transaction: `push_record` with every outcome as one JSON
    /// value (with the final state of each outcome that carries one, stored by that statement),
    /// then `push_finalize_notifications` for the other notifications whose last batch this was.
    public func batchRecord(_ outcomes: [BatchOutcome], now: Date?, decideFinal: FinalDecision) throws -> [Int64: RecordOutcome] {
        if outcomes.isEmpty { return [:] }
        let batch = RecordJSON.batch(outcomes)
        let notificationOf = Dictionary(outcomes.map { ($0.job.id, $0.job.notification.id) }, uniquingKeysWith: { a, _ in a })
        let given = Dictionary(outcomes.map { ($0.job.id, $0) }, uniquingKeysWith: { a, _ in a })
        return try Self.run {
            try connection.transaction { conn in
                let r = try conn.execPrepared(name: "batch_record", sql: JobQueries.record,
                                              params: [.jsonUTF8(batch), now.map(PGValue.date)])
                var results: [Int64: RecordOutcome] = [:]
                var finals: [(UUID, NotificationOutcome)] = []
                for i in r.rows {
                    let jobID = try r.int64(i, "job_id")
                    switch try r.string(i, "outcome") {
                    case "recorded": break
                    case "orphaned": results[jobID] = .orphaned; continue
                    default: results[jobID] = .leaseLost; continue
                    }
                    let remaining = try r.int(i, "remaining_batches")
                    let hasSMS = try r.bool(i, "has_sms")
                    var endings: [DeliveryEnding]? = nil
                    if remaining == 0, try r.isNull(i, "ending_codes"), let o = given[jobID], o.final != nil {
                        // Its final state was given and stored by push_record itself: its endings
                        // are its records' (every delivery of the notification), in the store's order.
                        endings = o.records.sorted { PGUUIDText.format($0.deviceID) < PGUUIDText.format($1.deviceID) }
                            .compactMap(\.ending)
                    } else if remaining == 0, let notification = notificationOf[jobID] {
                        let codes = try PGArrayText.strings(r.string(i, "ending_codes"))
                        let nets = try PGArrayText.bools(r.string(i, "ending_nets"))
                        let list = zip(codes, nets).map { DeliveryEnding(recordedCode: $0 == "sent" ? nil : $0, netsCharge: $1) }
                        endings = list
                        // Two batches of one notification in one call: only the last one finalizes.
                        finals.removeAll { $0.0 == notification }
                        finals.append((notification, decideFinal(list, hasSMS)))
                    }
                    results[jobID] = .recorded(BatchRecordResult(remainingBatches: remaining,
                                                                 deactivated: try r.int(i, "deactivated"),
                                                                 endings: endings, hasSMSFallback: hasSMS))
                }
                if !finals.isEmpty {
                    _ = try conn.execPrepared(name: "notification_finalize_many", sql: JobQueries.finalizeNotifications, params: [
                        .uuidArray(finals.map(\.0)), .textArray(finals.map { $0.1.status.rawValue }),
                        .textArray(finals.map { $0.1.errorCode?.rawValue }),
                        .int64Array(finals.map { Int64($0.1.deviceCount) }), now.map(PGValue.date),
                    ])
                }
                return results
            }
        }
    }
}

/// The JSON value `push_record` reads (sql/functions/push_record.sql): jobs with their lease and
/// record count, deliveries job after job (`push_delivery_record`), credential changes
/// (`push_credential_change`). Absent keys are NULL; strings are JSON-escaped, a NUL character
/// (which PostgreSQL text cannot hold) becomes U+FFFD; instants are ISO-8601 UTC with
/// microseconds; bytes are bytea's hex form.
enum RecordJSON {
    /// The whole value for `outcomes`, as UTF-8 bytes: sent as they are (`PGValue.jsonUTF8`), never
    /// turned into a `String`, which would hold the batch twice at its peak beside libpq's own copy.
    static func batch(_ outcomes: [BatchOutcome]) -> [UInt8] {
        var w = Writer()
        w.out.reserveCapacity(estimatedSize(outcomes))
        w.raw(#"{"jobs":["#)
        for (i, o) in outcomes.enumerated() {
            if i > 0 { w.raw(",") }
            w.begin()
            w.int("job_id", o.job.id)
            w.string("lease_token", PGUUIDText.format(o.job.leaseToken))
            w.int("records", Int64(o.records.count))
            if let final = o.final {
                w.string("final_status", final.status.rawValue)
                w.string("final_error_code", final.errorCode?.rawValue)
                w.int("final_device_count", Int64(final.deviceCount))
            }
            w.end()
        }
        w.raw(#"],"deliveries":["#)
        var first = true
        for o in outcomes {
            for r in o.records {
                if !first { w.raw(",") }
                first = false
                delivery(r, job: o.job.id, to: &w)
            }
        }
        w.raw(#"],"credentials":["#)
        first = true
        for o in outcomes {
            let changes = o.credentials.invalid.map { ($0.kind, "invalid", Optional($0.reason)) }
                + o.credentials.accepted.map { ($0, "accepted", String?.none) }
            for (kind, change, reason) in changes {
                if !first { w.raw(",") }
                first = false
                w.begin()
                w.int("job_id", o.job.id)
                w.string("kind", kind.rawValue)
                w.string("change", change)
                w.string("reason", reason)
                w.end()
            }
        }
        w.raw("]}")
        return w.out
    }

    /// An upper estimate of `batch(outcomes)`'s bytes, reserved once: a delivery's members
    /// without their variable texts are under 420 bytes, its payload twice its bytes in hex. The
    /// writer never reserves again (`Array.reserveCapacity` allocates exactly what it is asked
    /// for, so a reserve per payload copied the whole buffer again for every delivery once the
    /// first estimate ran out: quadratic in the batch, up to about 120 MB copied for 500
    /// encrypted deliveries, `RecordJSONSizeTests`).
    static func estimatedSize(_ outcomes: [BatchOutcome]) -> Int {
        outcomes.reduce(64) { total, o in
            o.records.reduce(total + 160 + o.credentials.invalid.count * 160 + o.credentials.accepted.count * 120) { n, r in
                n + 420 + 2 * (r.payload?.count ?? 0) + (r.errorDetail?.utf8.count ?? 0) + (r.providerMessageID?.utf8.count ?? 0)
            }
        }
    }

    /// One `push_delivery_record`.
    static func delivery(_ r: DeliveryRecord, job: Int64, to w: inout Writer) {
        w.begin()
        w.int("job_id", job)
        w.string("device_id", PGUUIDText.format(r.deviceID))
        w.string("status", r.status.rawValue)
        w.string("error_code", r.errorCode?.rawValue)
        w.string("error_detail", r.errorDetail)
        w.bool("encrypted", r.encrypted)
        w.string("provider", r.provider?.rawValue)
        w.string("provider_message_id", r.providerMessageID)
        w.int("attempts", Int64(r.attempts))
        w.int("failures", Int64(r.failures))
        w.string("next_attempt_at", r.nextAttemptAt.map(PGTimestamp.format))
        w.hex("payload", r.payload)
        w.string("ledger", r.ledger.rawValue)
        w.string("deactivate_reason", r.deactivateReason?.rawValue)
        w.string("verdict_at", r.verdictAt.map(PGTimestamp.format))
        w.end()
    }

    /// Appends JSON to one buffer: objects of members (nil values left out) inside arrays.
    struct Writer {
        var out: [UInt8] = []
        private var members = 0

        mutating func raw(_ text: String) { out.append(contentsOf: text.utf8) }

        mutating func begin() {
            out.append(0x7b)
            members = 0
        }

        mutating func end() { out.append(0x7d) }

        private mutating func key(_ name: String) {
            if members > 0 { out.append(0x2c) }
            members += 1
            out.append(0x22)
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: [0x22, 0x3a])
        }

        mutating func string(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            JSONWriter.appendString(value.containsUTF8Byte(0) ? value.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : value,
                                    to: &out)
        }

        mutating func int(_ name: String, _ value: Int64) {
            key(name)
            out.append(contentsOf: String(value).utf8)
        }

        mutating func bool(_ name: String, _ value: Bool) {
            key(name)
            out.append(contentsOf: (value ? "true" : "false").utf8)
        }

        /// bytea's hex form as a JSON string: `"\\x0a0b"` (the backslash escaped).
        mutating func hex(_ name: String, _ value: [UInt8]?) {
            guard let value else { return }
            key(name)
            out.append(contentsOf: [0x22, 0x5c, 0x5c, 0x78])
            PGHex.append(value, to: &out)
            out.append(0x22)
        }
    }
}
