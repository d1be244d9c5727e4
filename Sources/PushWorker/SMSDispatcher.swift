import Foundation
import PushCore
import PushProviders
import PushStore

/// Sends the SMS fallbacks (R-SMS-1, R-SEND-6) from its own thread and connection, beside the job
/// loop of `pushfleet worker`; any number of workers run one each.
///
/// One cycle: claim due SMS from the generic leased outbox (`SMSStore.claim`: kind `sms`,
/// `FOR UPDATE SKIP LOCKED`, at most `perApp` of one app in flight across the fleet, apps taking
/// turns); end at once those that cannot be sent (the SMS deadline passed: `EXPIRED`; live mode
/// without a usable set: `CREDENTIALS_INVALID`, R-APP-4; no call made); mark the others `sending`
/// and commit (`SMSStore.begin`); only then hand them to the provider (test mode: `SMSSimulator`,
/// R-MODE-2; live: the app's `TwilioClient`), each app's batch on its own thread; decide each answer
/// (PushCore's `SMSAttemptDecision`) and record them all in one statement (`SMSStore.record`, each
/// guarded by its lease token).
///
/// Once: a request is written only after its `sending` mark is committed, by the worker holding
/// the lease; an SMS whose worker dies after that becomes `unknown` when its lease expires
/// (`push_sms_rescue`), never sent again; one whose worker dies before is simply claimed again.
/// Outcomes that cannot be written (the database is down) are kept and written when it is back.
public final class SMSDispatcher: @unchecked Sendable {
    public let config: SMSDispatcherConfig
    private let databaseURL: String
    private let keys: CredentialKeys?
    private let metrics: SMSMetrics
    private let log: Log
    private let jitter: @Sendable () -> Double
    private let simulator = SMSSimulator()

    private let thread = DispatcherThread()

    private var connection: PGConnection?
    private var pendingRecords: [SMSAttemptRecord] = []
    /// Live clients by app, rebuilt when the set's version changes.
    private var clients: [UUID: (version: String, client: SMSProvider)] = [:]
    /// SMS recorded by this dispatcher (tests read it).
    public private(set) var recordedCount = 0

    /// - Parameters:
    ///   - keys: the operator key that opens SMS credential sets; nil = live SMS fail `CREDENTIALS_INVALID`.
    ///   - jitter: a random value in [0, 1) per retry decision.
    public init(config: SMSDispatcherConfig, databaseURL: String, keys: CredentialKeys?, metrics: SMSMetrics,
                log: Log = .shared, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.config = config
        self.databaseURL = databaseURL
        self.keys = keys
        self.metrics = metrics
        self.log = log
        self.jitter = jitter
    }

    // MARK: - Lifecycle

    /// Runs the loop on a thread of its own.
    public func start() {
        thread.start(name: "pushfleet-sms") { [self] in run() }
    }

    /// Stops claiming; outcomes not yet written are written until `drainSeconds` from now.
    public func requestStop(drainSeconds: Double = 20) {
        thread.requestStop(drainSeconds: drainSeconds)
    }

    /// `requestStop`, then waits for the thread started by `start`, at most `timeout` seconds.
    @discardableResult
    public func stop(timeout: Double) -> Bool {
        thread.stop(timeout: timeout)
    }

    private var isStopping: Bool { thread.isStopping }

    // MARK: - Loop

    /// The loop (`start` runs it on its own thread); returns once stopped and its outcomes written.
    public func run() {
        log.info("sms.dispatcher.start", ["owner": config.owner, "per_app": config.perApp, "lease_seconds": config.leaseSeconds])
        var backoff = 0.2
        var lastRescue = Date.distantPast
        while true {
            let stopping = isStopping
            if stopping && pendingRecords.isEmpty { break }
            if stopping, thread.drainExpired {
                log.error("sms.dispatcher.unwritten", ["unrecorded": pendingRecords.count,
                                                       "effect": "sending ones become unknown once their leases expire"])
                break
            }
            do {
                let conn = try ensureConnection()
                try flush(conn)
                if stopping { continue }
                if Date().timeIntervalSince(lastRescue) >= config.rescueInterval {
                    lastRescue = Date()
                    let r = try SMSStore(connection: conn).rescue()
                    if r.unknown > 0 {
                        metrics.finished.increment(["rescued", SMSStatus.unknown.rawValue, ""], by: Double(r.unknown))
                        log.error("sms.outcome_unknown", ["sms": r.unknown, "cause": "lease expired while sending",
                                                          "effect": "not sent again; check with the provider"])
                    }
                    if r.rescued > 0 { log.warn("sms.rescue", ["rescued": r.rescued]) }
                }
                let claimed = try runOnce(conn)
                backoff = 0.2
                if claimed < config.claimBatch { idle(conn) }
            } catch {
                connection = nil
                log.warn("sms.db_error", ["error": String(describing: error).prefix(300), "retry_in_s": backoff])
                pause(backoff)
                backoff = min(backoff * 2, 5)
            }
        }
        log.info("sms.dispatcher.stop", ["owner": config.owner, "recorded": recordedCount])
    }

    /// One claim and the handling of what it returned. Returns the number of SMS claimed.
    /// - Throws: `PGError` when the claim or the begin mark fails (nothing was sent then).
    @discardableResult
    public func runOnce(_ conn: PGConnection, now: Date = Date()) throws -> Int {
        let store = SMSStore(connection: conn)
        let claims = try store.claim(owner: config.owner, limit: config.claimBatch, perApp: config.perApp,
                                     leaseSeconds: config.leaseSeconds)
        if claims.isEmpty { return 0 }
        var ready: [(sms: ClaimedSMS, provider: SMSProvider, version: String?)] = []
        var settled: [OutboxStore.Settlement] = []
        var live: [UUID: Result<(SMSProvider, String), PushError>] = [:]   // each app's set, read once a claim
        for c in claims {
            switch prepare(c, conn: conn, now: now, live: &live) {
            case .send(let provider, let version): ready.append((c, provider, version))
            case .end(let record): pendingRecords.append(record)
            case .settle(let why):
                settled.append(OutboxStore.Settlement(id: c.outboxID, leaseToken: c.leaseToken, state: "done", failed: false, error: why))
            }
        }
        if !settled.isEmpty { _ = try OutboxStore(connection: conn).settle(kind: SMSStore.kind, settled) }
        let begun = try store.begin(ready.map(\.sms))
        let sending = ready.filter { begun.contains($0.sms.outboxID) }
        let answers = send(sending.map { ($0.sms, $0.provider) })
        for ((c, provider, version), (answer, seconds)) in zip(sending, answers) {
            conclude(c, provider: provider, version: version, answer: answer, seconds: seconds)
        }
        try flush(conn)
        return claims.count
    }

    /// What to do with one claimed SMS.
    private enum Plan {
        case send(SMSProvider, credentialsVersion: String?)
        /// Final without a call: the record to write.
        case end(SMSAttemptRecord)
        /// Already final: only the outbox row is settled (why).
        case settle(String)
    }

    private func prepare(_ c: ClaimedSMS, conn: PGConnection, now: Date,
                         live: inout [UUID: Result<(SMSProvider, String), PushError>]) -> Plan {
        func end(_ code: ErrorCode?, detail: String, status: SMSStatus = .failed) -> Plan {
            var r = SMSAttemptRecord(outboxID: c.outboxID, leaseToken: c.leaseToken, status: status, deferrals: c.deferrals)
            r.errorCode = code?.rawValue
            r.errorDetail = detail
            r.ledgerRow = SMSAttemptDecision.recordsLedgerRow(status)
            log.warn("sms.not_sent", ["notification_id": PrefixedID.format(.notification, c.notificationID), "status": status.rawValue,
                                      "error_code": r.errorCode ?? "", "detail": detail])
            metrics.finished.increment(["none", status.rawValue, r.errorCode ?? ""])
            return .end(r)
        }
        switch c.status {
        case .pending: break
        case .sending:   // marked by a worker that no longer holds it: it may have been written
            return end(nil, detail: "found sending without its lease: not sent again", status: .unknown)
        case .queued, .failed, .unknown:
            return .settle("ALREADY_FINAL")
        }
        guard c.phone != nil, c.text != nil else {
            return end(.providerError, detail: "the phone or the text is no longer stored")
        }
        if SMSDeadline.deadline(notificationExpiresAt: c.notificationExpiresAt, queuedAt: c.queuedAt) <= now {
            return end(.expired, detail: "the notification expired before the SMS could be sent")
        }
        if c.mode == .test { return .send(simulator, credentialsVersion: nil) }
        let client = live[c.appID] ?? liveClient(c.appID, conn: conn)
        live[c.appID] = client
        switch client {
        case .success(let (client, version)): return .send(client, credentialsVersion: version)
        case .failure(let e): return end(.credentialsInvalid, detail: e.message)
        }
    }

    /// The app's Twilio client (R-APP-3, R-APP-4): missing, unopenable or `invalid` sets fail.
    private func liveClient(_ app: UUID, conn: PGConnection) -> Result<(SMSProvider, String), PushError> {
        guard let keys else { return .failure(PushError(.credentialsInvalid, "\(CredentialKeys.currentVariable) is not set")) }
        do {
            let sets = try CredentialStore(connection: conn, keys: keys).load(appID: app)
            guard let set = sets.first(where: { $0.summary.kind.isSMS }) else {
                return .failure(PushError(.credentialsInvalid, "the app has no SMS provider set"))
            }
            guard set.summary.state != .invalid else {
                return .failure(PushError(.credentialsInvalid, "the app's \(set.summary.kind.rawValue) set is invalid (\(set.summary.invalidReason ?? "?"))"))
            }
            if let cached = clients[app], cached.version == set.summary.version { return .success((cached.client, cached.version)) }
            let ids = set.summary.identifiers
            let sender: TwilioClient.Sender = ids["messaging_service_sid"].map { .messagingService($0) } ?? .from(ids["from"] ?? "")
            var c = TwilioClient.Configuration(accountSID: ids["account_sid"] ?? "", username: ids["api_key_sid"] ?? ids["account_sid"] ?? "",
                                               secret: String(decoding: set.secret, as: UTF8.self), sender: sender)
            if let url = ids["twilio_base_url"] { c.baseURL = url }
            c.requestTimeoutMillis = config.requestTimeoutMillis
            c.http = HTTP2Client.Configuration(caFile: config.caFile)
            let client = try TwilioClient.make(configuration: c)
            clients[app] = (set.summary.version, client)
            return .success((client, set.summary.version))
        } catch let e as PushError {
            return .failure(e)
        } catch {
            return .failure(PushError(.credentialsInvalid, "the SMS provider set cannot be used: \(LiveProviderClients.safe(error))"))
        }
    }

    /// Hands each provider its SMS, one thread per provider; the answers in the input's order.
    private func send(_ items: [(ClaimedSMS, SMSProvider)]) -> [(ProviderAnswer, Double)] {
        var groups: [ObjectIdentifier: [Int]] = [:]
        for (i, item) in items.enumerated() { groups[ObjectIdentifier(item.1), default: []].append(i) }
        let order = Array(groups.values)
        var answers = [(ProviderAnswer, Double)?](repeating: nil, count: items.count)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: order.count) { g in
            let indices = order[g]
            let started = Date()
            let result = items[indices[0]].1.send(indices.map { i in
                SMSRequest(to: items[i].0.phone ?? "", body: items[i].0.text ?? "",
                           reference: items[i].0.notificationID.uuidString.lowercased())
            })
            let seconds = Date().timeIntervalSince(started)
            lock.withLock { for (i, a) in zip(indices, result) { answers[i] = (a, seconds) } }
        }
        return answers.map { $0 ?? (ProviderAnswer(transport: .notSent, rawDetail: "no answer"), 0) }
    }

    /// Decides one answer (PushCore) and queues its record.
    private func conclude(_ c: ClaimedSMS, provider: SMSProvider, version: String?, answer: ProviderAnswer, seconds: Double) {
        let now = Date()
        let deadline = SMSDeadline.deadline(notificationExpiresAt: c.notificationExpiresAt, queuedAt: c.queuedAt)
        let d = SMSAttemptDecision.decide(answer, failedAttempts: c.failures, deferrals: c.deferrals, now: now,
                                          deadline: deadline, jitter: jitter(), policy: config.retry)
        let request = SMSRequest(to: c.phone ?? "", body: c.text ?? "", reference: c.notificationID.uuidString.lowercased())
        var status = SMSStatus.pending, runAt: Date?
        switch d.next {
        case .retry(let at): runAt = at
        case .final(let s): status = s
        }
        let deferred = runAt != nil && !d.failedAttempt
        var r = SMSAttemptRecord(outboxID: c.outboxID, leaseToken: c.leaseToken, status: status,
                                 deferrals: c.deferrals + (deferred ? 1 : 0))
        r.runAt = runAt
        r.failedAttempt = d.failedAttempt
        r.provider = provider.name
        r.providerMessageID = d.messageID
        r.errorCode = d.errorCode?.rawValue
        r.providerErrorCode = d.providerCode
        r.errorDetail = answer.rawDetail
        r.segments = SMSSegments(c.text ?? "")
        r.request = c.mode == .test ? SMSSimulator.request(request) : nil
        r.ledgerRow = SMSAttemptDecision.recordsLedgerRow(status)
        if c.mode == .live {
            r.credentials = d.credentialsInvalid ? .invalid : (status == .queued ? .accepted : nil)
            r.credentialsVersion = version
        }
        pendingRecords.append(r)
        metrics.requestDuration.observe(seconds)
        var fields: [String: Any] = ["notification_id": PrefixedID.format(.notification, c.notificationID),
                                     "app_id": PrefixedID.format(.app, c.appID), "mode": c.mode.rawValue,
                                     "provider": provider.name, "status": status.rawValue, "attempt": c.attempts + 1,
                                     "error_code": r.errorCode ?? "", "provider_error_code": d.providerCode ?? "",
                                     "ms": Int(seconds * 1000)]
        if status == .pending {
            metrics.retries.increment()
            fields["retry_in_s"] = runAt.map { max(0, $0.timeIntervalSince(now)) } ?? 0
            log.info("sms.retry", fields)
        } else {
            metrics.finished.increment([provider.name, status.rawValue, r.errorCode ?? ""])
            if status == .unknown {
                fields["detail"] = answer.rawDetail ?? ""
                fields["effect"] = "not sent again; check with the provider"
                log.error("sms.outcome_unknown", fields)
            } else {
                log.info("sms.attempt", fields)
            }
        }
    }

    // MARK: - Database

    /// Writes the queued outcomes in one statement; they stay queued when the connection fails.
    private func flush(_ conn: PGConnection) throws {
        guard !pendingRecords.isEmpty else { return }
        do {
            let recorded = try SMSStore(connection: conn).record(pendingRecords)
            recordedCount += recorded.count
            if recorded.count < pendingRecords.count {
                log.warn("sms.lease_lost", ["sms": pendingRecords.count - recorded.count,
                                            "effect": "their outcome is not recorded by this worker"])
            }
            pendingRecords.removeAll()
        } catch let e as PGError where e.code == .connection || e.connectionBroken {
            log.warn("sms.record_deferred", ["sms": pendingRecords.count, "error": e.description.prefix(200)])
            throw e
        } catch {
            log.error("sms.record_failed", ["sms": pendingRecords.count, "error": String(describing: error).prefix(300),
                                            "effect": "sending ones become unknown once their leases expire"])
            pendingRecords.removeAll()
        }
    }

    private func ensureConnection() throws -> PGConnection {
        if let c = connection, c.isHealthy { return c }
        let c = try PGConnection.connect(databaseURL)
        try c.setStatementTimeout(milliseconds: 15_000)
        try c.setLockTimeout(milliseconds: 5_000)
        try c.listen("pushfleet_sms")
        connection = c
        return c
    }

    /// Waits for a NOTIFY, a stop request or the poll interval.
    private func idle(_ conn: PGConnection) {
        let deadline = Date().addingTimeInterval(config.pollInterval)
        while !isStopping, deadline.timeIntervalSinceNow > 0 {
            guard let woken = try? conn.waitForNotifications(timeout: min(0.25, deadline.timeIntervalSinceNow)) else { return }
            if !woken.isEmpty { return }
        }
    }

    private func pause(_ seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while !isStopping && Date() < end { Thread.sleep(forTimeInterval: min(0.05, max(0, end.timeIntervalSinceNow))) }
    }
}
