import Foundation
import PushCore

/// What the webhook dispatcher reads and writes (issue 19), one round trip per call: claim
/// deliveries (`push_outbox_claim` with each one's event and endpoint, secrets opened), record
/// finished attempts (`push_webhook_record`), rescue expired leases, and the gauges' numbers.
/// One store per connection (not thread-safe). Errors: `PGError`.
public final class WebhookDispatchStore {
    /// The outbox kind of webhook rows.
    public static let kind = "webhook"

    /// The session every call runs on.
    public let connection: PGConnection
    /// The operator key that opens endpoint secrets; nil leaves every delivery without secrets.
    public let keys: CredentialKeys?
    private let cache: WebhookSecretCache?

    /// A store on `connection`; `cache` keeps opened secrets across calls (one AES-GCM open per
    /// sealed secret rather than per delivery).
    public init(connection: PGConnection, keys: CredentialKeys?, cache: WebhookSecretCache? = nil) {
        self.connection = connection
        self.keys = keys
        self.cache = cache
    }

    /// Claims up to `limit` deliveries for `owner`: at most `perEndpoint` running per endpoint
    /// across the fleet, endpoints taking turns, leased for `leaseSeconds`. Commits at once.
    public func claim(owner: String, limit: Int, perEndpoint: Int, leaseSeconds: Double,
                      now: Date = Date()) throws -> [WebhookDelivery] {
        let r = try connection.execPrepared(name: "webhook_claim", sql: WebhookQueries.claim, params: [
            .text(owner), .int(max(1, limit)), .int(max(1, perEndpoint)), .double(leaseSeconds), .date(now),
        ])
        let c = try ClaimColumns(r)
        return try r.rows.map { i in
            let endpointID = try r.uuid(i, c.fairKey)
            var event: WebhookBody.Event?
            if !(try r.isNull(i, c.publicID)) {
                event = WebhookBody.Event(publicID: try r.uuid(i, c.publicID), type: try r.string(i, c.type),
                                          createdAt: try r.date(i, c.createdAt), appID: try r.uuid(i, c.appID),
                                          payload: try r.string(i, c.payload))
            }
            var target: WebhookDelivery.Target?
            if !(try r.isNull(i, c.url)) {
                let (secrets, error) = openSecrets(r, i, c, endpointID: endpointID, now: now)
                target = WebhookDelivery.Target(url: try r.string(i, c.url), mode: Mode(rawValue: try r.string(i, c.mode)) ?? .live,
                                                enabled: try r.bool(i, c.enabled), secrets: secrets, secretError: error,
                                                failingSince: try r.decode(i, c.failingSince))
            }
            return WebhookDelivery(outboxID: try r.int64(i, c.id), leaseToken: try r.uuid(i, c.leaseToken),
                                   attempt: try r.int(i, c.attempts), failures: try r.int(i, c.failures),
                                   windowStartedAt: try r.date(i, c.windowStartedAt), endpointID: endpointID,
                                   event: event, endpoint: target)
        }
    }

    /// The claim statement's column positions, resolved once per result.
    private struct ClaimColumns {
        let id, fairKey, attempts, failures, leaseToken, windowStartedAt, publicID, type, payload, createdAt, appID: Int
        let url, mode, enabled, secret, previousSecret, previousExpires, failingSince: Int

        init(_ r: PGResult) throws {
            func at(_ name: String) throws -> Int { try r.columnIndex(named: name) }
            id = try at("id"); fairKey = try at("fair_key"); attempts = try at("attempts"); failures = try at("failures")
            leaseToken = try at("lease_token"); windowStartedAt = try at("window_started_at"); publicID = try at("public_id")
            type = try at("type"); payload = try at("payload"); createdAt = try at("created_at"); appID = try at("app_id")
            url = try at("url"); mode = try at("mode"); enabled = try at("enabled"); secret = try at("secret_sealed")
            previousSecret = try at("previous_secret_sealed"); previousExpires = try at("previous_secret_expires_at")
            failingSince = try at("failing_since")
        }
    }

    /// Records finished attempts and disables `disable` endpoints, in one statement (see
    /// `push_webhook_record`). Returns the outbox ids recorded; a missing one had lost its lease.
    public func record(_ attempts: [WebhookAttemptRecord],
                       disable: [(endpointID: UUID, reason: WebhookDisableReason)] = []) throws -> Set<Int64> {
        if attempts.isEmpty && disable.isEmpty { return [] }
        let states: [String] = attempts.map {
            switch $0.state {
            case .done: return "done"
            case .retry: return "available"
            case .failed: return "failed"
            }
        }
        let runAt: [Date?] = attempts.map { if case .retry(let at) = $0.state { return at } else { return nil } }
        let r = try connection.execPrepared(name: "webhook_record", sql: WebhookQueries.record, params: [
            .int64Array(attempts.map(\.outboxID)), .uuidArray(attempts.map(\.leaseToken)), .textArray(states),
            .dateArray(runAt), .textArray(attempts.map(\.error)), .int64Array(attempts.map { $0.statusCode.map(Int64.init) }),
            .dateArray(attempts.map(\.attemptedAt)), .int64Array(attempts.map { Int64($0.durationMillis) }),
            .textArray(attempts.map { $0.response.map { String($0.prefix(256)) } }),
            .boolArray(attempts.map(\.countsAsEndpointFailure)),
            .uuidArray(disable.map(\.endpointID)), .textArray(disable.map(\.reason.rawValue)),
        ])
        return Set(try r.rows.map { try r.int64($0, "outbox_id") })
    }

    /// Deliveries whose lease expired are available again at once (their worker died: the same
    /// `webhook-id` goes out again), or fail when their retry window has passed; their events are
    /// finished. - Returns: (rescued, failed).
    public func rescue(window: TimeInterval, limit: Int = 1000, now: Date? = nil) throws -> (rescued: Int, failed: Int) {
        let r = try OutboxStore(connection: connection).rescue(kind: Self.kind, windowSeconds: window, limit: limit, now: now)
        if !r.failedRefs.isEmpty {
            _ = try connection.execPrepared(name: "webhook_finish_events", sql: WebhookQueries.finishEvents,
                                            params: [.int64Array(r.failedRefs)])
        }
        return (r.rescued, r.failedRefs.count)
    }

    /// Deliveries due now or in flight, fleet-wide.
    public func dueOrRunning() throws -> Int {
        try connection.exec(WebhookQueries.dueOrRunning).int(0, "n")
    }

    /// Numbers for the gauges: disabled endpoints by reason, and the `top` endpoints whose oldest
    /// undelivered event is oldest (seconds).
    public func stats(top: Int = 20) throws -> (disabled: [String: Int], oldestPending: [(UUID, Double)]) {
        let d = try connection.execPrepared(name: "webhook_disabled_counts", sql: WebhookQueries.disabledCounts)
        var disabled: [String: Int] = [:]
        for i in d.rows { disabled[(try d.decode(i, "disabled_reason") as String?) ?? "unknown"] = try d.int(i, "n") }
        let o = try connection.execPrepared(name: "webhook_oldest_pending", sql: WebhookQueries.oldestPending,
                                            params: [.int(max(1, top))])
        let oldest = try o.rows.map { (try o.uuid($0, "fair_key"), try o.double($0, "age")) }
        return (disabled, oldest)
    }

    /// The secrets that sign at `now`: the current one, and the previous one until it expires.
    private func openSecrets(_ r: PGResult, _ i: Int, _ c: ClaimColumns, endpointID: UUID, now: Date) -> ([WebhookSecret], String?) {
        guard let keys else { return ([], "\(CredentialKeys.currentVariable) is not set") }
        do {
            func open(_ box: [UInt8]) throws -> WebhookSecret {
                if let hit = cache?.secret(endpointID, box) { return hit }
                let secret = try WebhookSecret(key: try WebhookEndpointStore.open(box, endpointID: endpointID, keys: keys))
                cache?.store(endpointID, box, secret)
                return secret
            }
            var secrets = [try open(try r.bytes(i, c.secret))]
            if let until: Date = try r.decode(i, c.previousExpires), until > now, let box: [UInt8] = try r.decode(i, c.previousSecret) {
                secrets.append(try open(box))
            }
            return (secrets, nil)
        } catch let e as PushError {
            return ([], e.message)
        } catch {
            return ([], "\(error)")
        }
    }
}

/// Opened endpoint secrets by (endpoint, sealed box), for one dispatcher (not thread-safe). A
/// rotation or an operator-key change gives a new box, so a stale entry is never used; at most
/// `capacity` entries are kept (all dropped when full).
public final class WebhookSecretCache {
    private var entries: [UUID: [(box: [UInt8], secret: WebhookSecret)]] = [:]
    private var count = 0
    /// Entries kept at most.
    public let capacity: Int

    /// An empty cache of `capacity` entries.
    public init(capacity: Int = 4096) { self.capacity = capacity }

    func secret(_ endpoint: UUID, _ box: [UInt8]) -> WebhookSecret? {
        entries[endpoint]?.first { $0.box == box }?.secret
    }

    func store(_ endpoint: UUID, _ box: [UInt8], _ secret: WebhookSecret) {
        if count >= capacity {
            entries.removeAll()
            count = 0
        }
        var list = entries[endpoint] ?? []
        if list.count >= 2 { list.removeFirst() }   // the current and the previous secret
        list.append((box, secret))
        entries[endpoint] = list
        count += 1
    }
}
