import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore

/// Delivers webhook events (issue 19, R-HOOK-1..3) from its own thread and connection, beside the
/// job loop of `pushfleet worker`; any number of workers run one each.
///
/// One loop: claim due deliveries (`WebhookDispatchStore.claim`: `FOR UPDATE SKIP LOCKED`, leased,
/// at most `perEndpoint` of one endpoint in flight across the fleet, endpoints taking turns), build
/// each body (`WebhookBody`) and its signatures (`WebhookSignature`), run the address guard
/// (`WebhookRequest`: URL checked again, host resolved off the loop thread, every address checked
/// and pinned), start the POST on an `HTTPTransferPool` (10 s deadline, no redirects, at most 4 KiB of
/// the answer read) and, as each one ends, decide (`WebhookAttemptDecision`) and record it
/// (`push_webhook_record`, one statement for every attempt that ended together, each guarded by
/// its lease token). Transfers never wait for one another: a hanging endpoint holds its own
/// `perEndpoint` slots and nothing else.
///
/// At least once: an attempt whose worker dies before recording it is sent again with the same
/// `webhook-id` once its lease expires (receivers deduplicate on it). Outcomes that cannot be
/// written (the database is down) are kept and written when it is back; their leases may expire
/// meanwhile, and then the delivery goes out again. For the same reason the dispatcher's session
/// commits with `synchronous_commit = off`: a server crash may lose its last fraction of a second
/// of claims and records, which only ever sends a delivery again (same `webhook-id`), never loses
/// one (events themselves are written by the product's own transactions, with their changes).
public final class WebhookDispatcher: @unchecked Sendable {
    public let config: WebhookDispatcherConfig
    private let databaseURL: String
    private let keys: CredentialKeys
    private let resolver: WebPushResolver
    private let metrics: WebhookMetrics
    private let log: Log
    private let jitter: @Sendable () -> Double
    private let pool: HTTPTransferPool
    private let secrets = WebhookSecretCache()

    private let thread = DispatcherThread()

    private var connection: PGConnection?
    private var nextTag = 0
    /// Attempts under way, by tag: waiting for a lookup, or in the transfer pool.
    private var inflight: [Int: Attempt] = [:]
    private let lookups: LookupInbox
    private var waitingForLookup: [String: (tags: [Int], since: Date)] = [:]
    private var lookupCache: [String: (addresses: [String], until: Date)] = [:]
    private var pendingRecords: [WebhookAttemptRecord] = []
    private var pendingDisables: [(endpointID: UUID, reason: WebhookDisableReason)] = []
    /// Deliveries recorded by this dispatcher (tests read it).
    public private(set) var recordedCount = 0

    /// One attempt under way.
    private struct Attempt {
        var delivery: WebhookDelivery
        var type: String
        var target: OutboundURL
        var body: [UInt8]
        var messageID: String
        var startedAt: Date
    }

    /// - Parameters:
    ///   - keys: the operator key that opens endpoint secrets.
    ///   - resolver: host lookup for the address guard (tests map names to addresses).
    ///   - jitter: a random value in [0, 1) per retry decision.
    /// - Throws: `HTTPClientError` when libcurl cannot be set up or the CA file is unreadable.
    public init(config: WebhookDispatcherConfig, databaseURL: String, keys: CredentialKeys,
                resolver: WebPushResolver = SystemWebPushResolver(), metrics: WebhookMetrics, log: Log = .shared,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) throws {
        self.config = config
        self.databaseURL = databaseURL
        self.keys = keys
        self.resolver = resolver
        self.metrics = metrics
        self.log = log
        self.jitter = jitter
        self.lookups = LookupInbox()
        self.pool = try HTTPTransferPool.make(configuration: WebhookRequest.poolConfiguration(
            maxConnections: config.maxInFlight, allowPlainHTTP: config.allowLoopback, caFile: config.caFile))
    }

    // MARK: - Lifecycle

    /// Runs the loop on a thread of its own.
    public func start() {
        thread.start(name: "pushfleet-webhooks") { [self] in run() }
    }

    /// Stops claiming; attempts under way finish and are recorded until `drainSeconds` from now.
    public func requestStop(drainSeconds: Double = 20) {
        thread.requestStop(drainSeconds: drainSeconds)
    }

    /// `requestStop`, then waits for the thread started by `start` to end, at most `timeout` seconds.
    @discardableResult
    public func stop(timeout: Double) -> Bool {
        thread.stop(timeout: timeout)
    }

    private var isStopping: Bool { thread.isStopping }

    // MARK: - Loop

    /// The loop (`start` runs it on its own thread); returns once stopped and drained.
    public func run() {
        log.info("webhook.dispatcher.start", ["owner": config.owner, "per_endpoint": config.perEndpoint,
                                              "max_in_flight": config.maxInFlight, "lease_seconds": config.leaseSeconds,
                                              "allow_loopback": config.allowLoopback])
        var backoff = 0.2
        var nextConnect = Date.distantPast
        var lastClaim = Date.distantPast, lastRescue = Date.distantPast, lastStats = Date.distantPast
        var wake = true
        while true {
            let stopping = isStopping
            let unwritten = pendingRecords.count + pendingDisables.count
            if stopping && inflight.isEmpty && unwritten == 0 { break }
            if stopping, thread.drainExpired {
                log.error("webhook.dispatcher.unwritten", ["in_flight": inflight.count, "unrecorded": unwritten,
                                                           "effect": "sent again once their leases expire"])
                break
            }
            if connection == nil && Date() >= nextConnect {
                do {
                    let c = try PGConnection.connect(databaseURL)
                    try c.exec("SET synchronous_commit = off")
                    try c.listen("pushfleet_webhooks")
                    connection = c
                    wake = true
                } catch {
                    nextConnect = Date().addingTimeInterval(backoff)
                    backoff = min(backoff * 2, 5)
                }
            }
            if let conn = connection {
                do {
                    try flush(conn)
                    let now = Date()
                    if !stopping {
                        if now.timeIntervalSince(lastRescue) >= config.rescueInterval {
                            lastRescue = now
                            try rescue(conn)
                        }
                        if now.timeIntervalSince(lastStats) >= config.statsInterval {
                            lastStats = now
                            try refreshGauges(conn)
                        }
                        let room = min(config.maxInFlight - inflight.count, config.claimBatch)
                        if room > 0 && (wake || now.timeIntervalSince(lastClaim) >= config.pollInterval) {
                            wake = false
                            lastClaim = now
                            let claimed = try WebhookDispatchStore(connection: conn, keys: keys, cache: secrets).claim(
                                owner: config.owner, limit: room, perEndpoint: config.perEndpoint,
                                leaseSeconds: config.leaseSeconds)
                            if claimed.count == room { wake = true }   // more may be due
                            for delivery in claimed { begin(delivery) }
                        }
                    }
                    backoff = 0.2   // a round the database served: the next failure starts over
                } catch {
                    // Backed off like a failed connect (0.2 s doubling to 5 s): a statement that
                    // keeps failing on a session that connects (no `pushfleet migrate` yet, a
                    // privilege missing) is logged at that pace, not every round.
                    connection = nil
                    log.warn("webhook.db_error", ["error": String(describing: error).prefix(300), "retry_in_s": backoff])
                    nextConnect = Date().addingTimeInterval(backoff)
                    backoff = min(backoff * 2, 5)
                }
            }
            drainLookups()
            var ended = pool.poll(timeoutMillis: pool.inFlight > 0 ? 20 : 0)
            if !ended.isEmpty && pool.inFlight > 0 {   // others still under way
                // Let a few more end before recording: one statement per batch, not per attempt.
                ended += pool.poll(timeoutMillis: 3)
            }
            for transfer in ended { finish(transfer) }
            if !ended.isEmpty { wake = true }      // endpoints have room again
            metrics.inflight.set(Double(inflight.count))
            if !inflight.isEmpty && pool.inFlight == 0 {
                lookups.wait(seconds: 0.02)        // only lookups under way
            } else if inflight.isEmpty && pendingRecords.isEmpty && !wake && !isStopping {
                wake = idle(until: lastClaim.addingTimeInterval(config.pollInterval))
            } else if let conn = connection, (try? conn.waitForNotifications(timeout: 0))?.isEmpty == false {
                wake = true
            }
        }
        metrics.inflight.set(0)
        log.info("webhook.dispatcher.stop", ["owner": config.owner, "recorded": recordedCount])
    }

    /// Waits for a NOTIFY (or a stop request) until `deadline`; true when woken by a NOTIFY.
    private func idle(until deadline: Date) -> Bool {
        while !isStopping {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            guard let conn = connection else {
                Thread.sleep(forTimeInterval: min(0.1, left))
                return false
            }
            do {
                if !(try conn.waitForNotifications(timeout: min(0.25, left))).isEmpty { return true }
            } catch {
                connection = nil
                return false
            }
        }
        return false
    }

    // MARK: - One delivery

    /// Prepares a claimed delivery: refuses what cannot be sent (recorded at once), else starts its
    /// lookup or its transfer.
    private func begin(_ d: WebhookDelivery) {
        guard let endpoint = d.endpoint, endpoint.enabled, let event = d.event else {
            let code = d.endpoint == nil ? "ENDPOINT_DELETED" : (d.event == nil ? "EVENT_GONE" : "ENDPOINT_DISABLED")
            pendingRecords.append(WebhookAttemptRecord(outboxID: d.outboxID, leaseToken: d.leaseToken, state: .failed,
                                                       error: code, statusCode: nil, attemptedAt: Date(), durationMillis: 0,
                                                       response: nil, countsAsEndpointFailure: false))
            return
        }
        let type = WebhookEventType(rawValue: event.type)?.rawValue ?? "unknown"
        guard !endpoint.secrets.isEmpty else {
            return conclude(d, type: type, .noAnswer(WebhookFailure(code: WebhookFailure.secretUnavailable,
                                                                    detail: endpoint.secretError ?? "")), seconds: 0)
        }
        let body: [UInt8]
        do {
            body = try WebhookBody.bytes(event)
        } catch {
            return conclude(d, type: type, .noAnswer(WebhookFailure(code: WebhookFailure.unknownEvent, detail: "\(error)")),
                            seconds: 0)
        }
        let target: OutboundURL
        switch WebhookRequest.target(url: endpoint.url, mode: endpoint.mode, allowLoopback: config.allowLoopback) {
        case .failure(let f): return conclude(d, type: type, .noAnswer(f), seconds: 0)
        case .success(let t): target = t
        }
        guard let messageID = try? WebhookSignature.messageID(eventID: event.publicID, endpointID: d.endpointID) else {
            return conclude(d, type: type, .noAnswer(WebhookFailure(code: WebhookFailure.notSent, detail: "no message id")),
                            seconds: 0)
        }
        nextTag += 1
        let tag = nextTag
        inflight[tag] = Attempt(delivery: d, type: type, target: target, body: body, messageID: messageID, startedAt: Date())
        if target.isIPLiteral { return send(tag, pins: []) }
        let key = "\(target.host):\(target.port)"
        if let cached = lookupCache[key], cached.until > Date() { return checked(tag, addresses: cached.addresses) }
        if waitingForLookup[key] != nil {
            waitingForLookup[key]?.tags.append(tag)
            return
        }
        waitingForLookup[key] = ([tag], Date())
        let resolver = self.resolver, inbox = lookups, host = target.host, port = target.port
        DispatchQueue.global(qos: .utility).async {
            inbox.post(key, Result { try resolver.addresses(host: host, port: port) })
        }
    }

    /// Lookups that ended (or took longer than `lookupTimeout`): their attempts go on or fail.
    private func drainLookups() {
        for (key, result) in lookups.take() {
            guard let waiting = waitingForLookup.removeValue(forKey: key) else { continue }
            switch result {
            case .success(let addresses):
                lookupCache[key] = (addresses, Date().addingTimeInterval(config.lookupCacheSeconds))
                for tag in waiting.tags { checked(tag, addresses: addresses) }
            case .failure(let error):
                for tag in waiting.tags { fail(tag, WebhookFailure(code: WebhookFailure.notSent, detail: "dns: \(error)")) }
            }
        }
        for (key, waiting) in waitingForLookup where Date().timeIntervalSince(waiting.since) > config.lookupTimeout {
            waitingForLookup.removeValue(forKey: key)
            for tag in waiting.tags { fail(tag, WebhookFailure(code: WebhookFailure.notSent, detail: "dns: no answer in time")) }
        }
    }

    /// The address guard on what the host resolved to, then the transfer.
    private func checked(_ tag: Int, addresses: [String]) {
        guard let a = inflight[tag] else { return }
        switch WebhookRequest.pin(a.target, addresses: addresses, allowLoopback: config.allowLoopback) {
        case .success(let pins): send(tag, pins: pins)
        case .failure(let f): fail(tag, f)
        }
    }

    private func send(_ tag: Int, pins: [String]) {
        guard let a = inflight[tag] else { return }
        guard let endpoint = a.delivery.endpoint,
              let request = try? WebhookRequest.make(target: a.target, pins: pins, messageID: a.messageID,
                                                     timestamp: Int64(Date().timeIntervalSince1970), body: a.body,
                                                     secrets: endpoint.secrets) else {
            return fail(tag, WebhookFailure(code: WebhookFailure.notSent, detail: "signing failed"))
        }
        pool.start(request, tag: tag)
    }

    private func fail(_ tag: Int, _ failure: WebhookFailure) {
        guard let a = inflight.removeValue(forKey: tag) else { return }
        conclude(a.delivery, type: a.type, .noAnswer(failure), seconds: Date().timeIntervalSince(a.startedAt))
    }

    private func finish(_ transfer: HTTPTransferPool.Finished) {
        guard let a = inflight.removeValue(forKey: transfer.tag) else { return }
        let answer: WebhookAnswer
        var response: String?
        switch transfer.outcome {
        case .response(let r):
            answer = .status(r.status)
            response = Self.excerpt(r.body)
        case .timeout(let d): answer = .noAnswer(WebhookFailure(code: WebhookFailure.timeout, detail: d))
        case .connectionError(let d): answer = .noAnswer(WebhookFailure(code: WebhookFailure.connectionError, detail: d))
        case .notSent(let d): answer = .noAnswer(WebhookFailure(code: WebhookFailure.notSent, detail: d))
        }
        conclude(a.delivery, type: a.type, answer, seconds: Date().timeIntervalSince(a.startedAt), response: response)
    }

    /// Decides what follows an attempt (PushCore) and queues its record.
    private func conclude(_ d: WebhookDelivery, type: String, _ answer: WebhookAnswer, seconds: Double,
                          response: String? = nil) {
        let now = Date()
        let decision = WebhookAttemptDecision.decide(answer, failedAttempts: d.failures + 1,
                                                     windowStartedAt: d.windowStartedAt,
                                                     endpointFailingSince: d.endpoint?.failingSince, now: now,
                                                     jitter: jitter(), policy: config.retry)
        let state: WebhookAttemptRecord.State
        let result: String
        var error = decision.errorCode
        switch decision.next {
        case .delivered:
            (state, result) = (.done, "delivered")
        case .retry(let at):
            (state, result) = (.retry(at: at), "retry")
        case .failed(let code):
            (state, result) = (.failed, "failed")
            if code != error { error = error.map { "\(code) (\($0))" } ?? code }
        }
        pendingRecords.append(WebhookAttemptRecord(
            outboxID: d.outboxID, leaseToken: d.leaseToken, state: state, error: error,
            statusCode: { if case .status(let s) = answer { return s } else { return nil } }(),
            attemptedAt: now, durationMillis: Int(seconds * 1000), response: response ?? Self.noAnswerDetail(answer),
            countsAsEndpointFailure: decision.countsAsEndpointFailure))
        metrics.attempts.increment([type, result])
        metrics.requestDuration.observe(seconds)
        if result != "retry" { metrics.deliveries.increment([type, result]) }
        if let reason = decision.disableEndpoint {
            pendingDisables.append((d.endpointID, reason))
            metrics.disabledTotal.increment([reason.rawValue])
            log.warn("webhook.endpoint_disabled", ["endpoint_id": PrefixedID.format(.webhookEndpoint, d.endpointID),
                                                   "reason": reason.rawValue, "error": error ?? ""])
        }
        if log.minimum <= .debug {
            log.debug("webhook.attempt", ["outbox_id": d.outboxID, "endpoint_id": PrefixedID.format(.webhookEndpoint, d.endpointID),
                                          "attempt": d.attempt, "result": result, "error": error ?? "",
                                          "ms": Int(seconds * 1000)])
        }
    }

    // MARK: - Database

    /// Writes the queued outcomes in one statement; they stay queued when the connection fails.
    private func flush(_ conn: PGConnection) throws {
        guard !pendingRecords.isEmpty || !pendingDisables.isEmpty else { return }
        do {
            let recorded = try WebhookDispatchStore(connection: conn, keys: keys).record(pendingRecords, disable: pendingDisables)
            recordedCount += recorded.count
            if recorded.count < pendingRecords.count {
                log.info("webhook.lease_lost", ["attempts": pendingRecords.count - recorded.count,
                                                "effect": "another worker owns those deliveries now"])
            }
            pendingRecords.removeAll()
            pendingDisables.removeAll()
        } catch let e as PGError where e.code == .connection || e.connectionBroken {
            log.warn("webhook.record_deferred", ["attempts": pendingRecords.count, "error": e.description.prefix(200)])
            throw e
        } catch {
            // Not the connection: these outcomes cannot be written; their leases expire and the
            // deliveries go out again.
            log.error("webhook.record_failed", ["attempts": pendingRecords.count, "error": String(describing: error).prefix(300)])
            pendingRecords.removeAll()
            pendingDisables.removeAll()
        }
    }

    private func rescue(_ conn: PGConnection) throws {
        let r = try WebhookDispatchStore(connection: conn, keys: keys).rescue(window: config.retry.window)
        if r.rescued + r.failed > 0 { log.warn("webhook.rescue", ["rescued": r.rescued, "failed": r.failed]) }
    }

    private func refreshGauges(_ conn: PGConnection) throws {
        let s = try WebhookDispatchStore(connection: conn, keys: keys).stats()
        for reason in WebhookDisableReason.allCases { metrics.endpointsDisabled.set(reason.rawValue, Double(s.disabled[reason.rawValue] ?? 0)) }
        var ages: [String: Double] = [:]
        for (endpoint, age) in s.oldestPending { ages[endpoint.uuidString.lowercased()] = age }
        metrics.oldestPendingAge.replaceAll(ages)
    }

    // MARK: - Helpers

    /// The first bytes of an answer as text for the attempt log: at most 256 characters, controls dropped.
    static func excerpt(_ body: [UInt8]) -> String? {
        if body.isEmpty { return nil }
        let text = String(decoding: body.prefix(512), as: UTF8.self)
        return String(String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }).prefix(256))
    }

    private static func noAnswerDetail(_ answer: WebhookAnswer) -> String? {
        if case .noAnswer(let f) = answer, !f.detail.isEmpty { return String(f.detail.prefix(256)) }
        return nil
    }
}

/// Lookups finished on other threads, handed to the loop (thread-safe).
private final class LookupInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var done: [(String, Result<[String], Error>)] = []
    private let signal = DispatchSemaphore(value: 0)

    func post(_ key: String, _ result: Result<[String], Error>) {
        lock.withLock { done.append((key, result)) }
        signal.signal()
    }

    func take() -> [(String, Result<[String], Error>)] {
        lock.withLock {
            defer { done.removeAll() }
            return done
        }
    }

    /// Waits until a lookup ends or `seconds` pass.
    func wait(seconds: Double) { _ = signal.wait(timeout: .now() + seconds) }
}
