import Foundation

/// One row claimed from the generic outbox (`push_outbox`, sql/0009).
public struct OutboxClaim: Sendable, Equatable {
    /// Row id.
    public var id: Int64
    /// The fairness and concurrency key (webhooks: the endpoint).
    public var fairKey: UUID
    /// What the row hands over (webhooks: the event's internal id).
    public var refID: Int64
    /// Claims so far, this one included.
    public var attempts: Int
    /// Failed attempts in the current window.
    public var failures: Int
    /// The lease token guarding every write of this claim.
    public var leaseToken: UUID
    /// First attempt of the current window.
    public var windowStartedAt: Date
}

/// The generic leased outbox, for any kind of row handed to someone outside (webhooks now, the
/// SMS outbox later): claim (`FOR UPDATE SKIP LOCKED`, leased, at most `perKey` rows of one key
/// running fleet-wide, turns across keys), settle (lease-guarded) and rescue of expired leases.
/// The rules live in the SQL functions `push_outbox_claim`, `push_outbox_settle` and
/// `push_outbox_rescue`; a kind adds its own statements around them (`WebhookDispatchStore`).
/// One store per connection (not thread-safe). Errors: `PGError`.
public final class OutboxStore {
    /// The session every call runs on.
    public let connection: PGConnection

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// Claims up to `limit` due rows of `kind` for `owner`, leased for `leaseSeconds`; commits at once.
    public func claim(kind: String, owner: String, limit: Int, perKey: Int, leaseSeconds: Double,
                      now: Date? = nil) throws -> [OutboxClaim] {
        let r = try connection.execPrepared(name: "outbox_claim", sql: OutboxQueries.claim, params: [
            .text(kind), .text(owner), .int(max(1, limit)), .int(max(1, perKey)), .double(leaseSeconds), now.map(PGValue.date),
        ])
        return try r.rows.map { i in
            OutboxClaim(id: try r.int64(i, "id"), fairKey: try r.uuid(i, "fair_key"), refID: try r.int64(i, "ref_id"),
                        attempts: try r.int(i, "attempts"), failures: try r.int(i, "failures"),
                        leaseToken: try r.uuid(i, "lease_token"), windowStartedAt: try r.date(i, "window_started_at"))
        }
    }

    /// The outcome of one claimed row.
    public struct Settlement: Sendable, Equatable {
        /// `available` (again at `runAt`), `done` or `failed`.
        public var state: String
        public var id: Int64
        public var leaseToken: UUID
        public var runAt: Date?
        /// Counts as a failed attempt of the current window.
        public var failed: Bool
        public var error: String?

        /// Memberwise initializer.
        public init(id: Int64, leaseToken: UUID, state: String, runAt: Date? = nil, failed: Bool, error: String? = nil) {
            self.id = id
            self.leaseToken = leaseToken
            self.state = state
            self.runAt = runAt
            self.failed = failed
            self.error = error
        }
    }

    /// Settles claimed rows in one statement, each guarded by its lease token. Returns the ids
    /// settled; a missing one had lost its lease (rescued, maybe claimed again).
    public func settle(kind: String, _ rows: [Settlement], now: Date? = nil) throws -> Set<Int64> {
        if rows.isEmpty { return [] }
        let r = try connection.execPrepared(name: "outbox_settle", sql: OutboxQueries.settle, params: [
            .text(kind), .int64Array(rows.map(\.id)), .uuidArray(rows.map(\.leaseToken)), .textArray(rows.map(\.state)),
            .dateArray(rows.map(\.runAt)), .boolArray(rows.map(\.failed)), .textArray(rows.map(\.error)), now.map(PGValue.date),
        ])
        return Set(try r.rows.map { try r.int64($0, "id") })
    }

    /// Rows of `kind` whose lease expired become available again at once, or fail
    /// (`LEASE_EXPIRED`) when their window of `windowSeconds` has passed; at most `limit`.
    /// - Returns: (rescued, failed) with the events of the failed ones, so the kind can finish them.
    public func rescue(kind: String, windowSeconds: Double, limit: Int = 1000,
                       now: Date? = nil) throws -> (rescued: Int, failedRefs: [Int64]) {
        let r = try connection.execPrepared(name: "outbox_rescue", sql: OutboxQueries.rescue, params: [
            .text(kind), .double(windowSeconds), .int(max(1, limit)), now.map(PGValue.date),
        ])
        var rescued = 0
        var failed: [Int64] = []
        for i in r.rows {
            if try r.string(i, "state") == "failed" { failed.append(try r.int64(i, "ref_id")) } else { rescued += 1 }
        }
        return (rescued, failed)
    }
}
