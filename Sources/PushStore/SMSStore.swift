import Foundation
import PushCore

/// One SMS fallback claimed for sending (R-SMS-1): the outbox row's lease and what sending needs.
public struct ClaimedSMS: Sendable, Equatable {
    /// The `push_outbox` row (kind `sms`) and its lease token.
    public var outboxID: Int64
    public var leaseToken: UUID
    /// Failed attempts so far (connection refused before anything was written), for the backoff.
    public var failures: Int
    /// The `push_sms_outbox` row.
    public var smsID: Int64
    @LowercaseUUID public var notificationID: UUID
    @LowercaseUUID public var appID: UUID
    public var mode: Mode
    /// Nil once erased (only ever for a final SMS).
    public var phone: String?
    public var text: String?
    /// `pending` for one that may be sent; any other state is not sent.
    public var status: SMSStatus
    /// Requests written (or about to be) so far.
    public var attempts: Int
    /// 429 / 503 answers so far.
    public var deferrals: Int
    /// When the SMS was queued (the notification became final).
    public var queuedAt: Date
    /// The notification's expiry (R-SEND-10), for `SMSDeadline`.
    public var notificationExpiresAt: Date
}

/// What one claimed SMS came to, as `push_sms_record` stores it (sql/0012).
public struct SMSAttemptRecord: Sendable, Equatable {
    /// Which credential change the attempt implies (live mode only, R-APP-3).
    public enum CredentialChange: String, Sendable {
        /// The provider took a message: the set is verified for good.
        case accepted
        /// The provider refused the credentials (401): the set is invalid.
        case invalid
    }

    public var outboxID: Int64
    public var leaseToken: UUID
    /// `pending` (try again at `runAt`), `queued`, `failed` or `unknown`.
    public var status: SMSStatus
    public var runAt: Date?
    /// A failed attempt of the backoff.
    public var failedAttempt: Bool
    public var provider: String?
    public var providerMessageID: String?
    public var errorCode: String?
    public var providerErrorCode: String?
    public var errorDetail: String?
    public var segments: SMSSegments?
    /// Test mode: the exact form body it would have sent.
    public var request: [UInt8]?
    /// Deferrals so far, this attempt's included.
    public var deferrals: Int
    /// Write the `sms` ledger row.
    public var ledgerRow: Bool
    public var credentials: CredentialChange?
    /// The set the attempt used (`CredentialSummary.version`), so that a set replaced meanwhile is untouched.
    public var credentialsVersion: String?

    /// A record with the outcome's fields; the rest nil or false.
    public init(outboxID: Int64, leaseToken: UUID, status: SMSStatus, deferrals: Int) {
        self.outboxID = outboxID
        self.leaseToken = leaseToken
        self.status = status
        self.failedAttempt = false
        self.deferrals = deferrals
        self.ledgerRow = false
    }
}

/// A notification's SMS fallback as `notifications show` and the API read it (never the phone).
public struct SMSReport: Sendable, Codable, Equatable {
    /// `pending`, `sending`, `queued`, `failed` or `unknown`.
    public var status: String
    /// `twilio` or `simulator`, once attempted.
    public var provider: String?
    /// The provider's message id (Twilio's SID).
    public var providerMessageID: String?
    public var errorCode: String?
    /// The provider's own code (Twilio 21211...).
    public var providerErrorCode: String?
    public var errorDetail: String?
    public var attempts: Int
    /// Segments the text takes (PushCore's `SMSSegments`), and their encoding.
    public var segments: Int?
    public var encoding: String?
    /// Test mode: the form body it would have sent (`To`, `From`, `Body`), until erased.
    public var request: String?
    public var queuedAt: Date
    public var sentAt: Date?
    public var finishedAt: Date?
    /// The phone and text were erased with the content.
    public var erased: Bool
}

/// The SMS outbox of sql/0012 on one connection (not thread-safe): claims through the generic
/// leased outbox (`OutboxStore`, kind `sms`, fair across apps), then `push_sms_begin` before any
/// request is written, `push_sms_record` after, `push_sms_rescue` for expired leases. Errors: `PGError`.
public final class SMSStore {
    /// The session every call runs on.
    public let connection: PGConnection

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// The outbox kind.
    public static let kind = "sms"

    /// Claims up to `limit` due SMS (at most `perApp` of one app in flight across the fleet), leased
    /// for `leaseSeconds`, and loads them: two round trips. A claimed outbox row whose SMS row is
    /// gone is settled `failed` (`SMS_GONE`) and not returned.
    public func claim(owner: String, limit: Int, perApp: Int, leaseSeconds: Double, now: Date? = nil) throws -> [ClaimedSMS] {
        let claims = try OutboxStore(connection: connection).claim(kind: Self.kind, owner: owner, limit: limit,
                                                                   perKey: perApp, leaseSeconds: leaseSeconds, now: now)
        if claims.isEmpty { return [] }
        let r = try connection.execPrepared(name: "sms_load", sql: SMSQueries.load, params: [.int64Array(claims.map(\.refID))])
        var rows: [Int64: Int] = [:]
        for i in r.rows { rows[try r.int64(i, "id")] = i }
        // An outbox row without its SMS (deleted with its notification) has nothing to send.
        let orphans = claims.filter { rows[$0.refID] == nil }
        if !orphans.isEmpty {
            _ = try OutboxStore(connection: connection).settle(kind: Self.kind, orphans.map {
                OutboxStore.Settlement(id: $0.id, leaseToken: $0.leaseToken, state: "failed", failed: false, error: "SMS_GONE")
            })
        }
        return try claims.compactMap { c in
            guard let i = rows[c.refID] else { return nil }
            guard let mode = Mode(rawValue: try r.string(i, "mode")),
                  let status = SMSStatus(rawValue: try r.string(i, "status")) else {
                throw PGError(code: .decode, message: "push_sms_outbox \(c.refID): unknown mode or status")
            }
            return ClaimedSMS(outboxID: c.id, leaseToken: c.leaseToken, failures: c.failures, smsID: c.refID,
                              notificationID: try r.uuid(i, "notification_id"), appID: try r.uuid(i, "app_id"), mode: mode,
                              phone: try r.decode(i, "phone"), text: try r.decode(i, "text"), status: status,
                              attempts: try r.int(i, "attempts"), deferrals: try r.int(i, "deferrals"),
                              queuedAt: try r.date(i, "created_at"), notificationExpiresAt: try r.date(i, "expires_at"))
        }
    }

    /// Marks the SMS of `claims` `sending` (committed), where the lease is still held and the SMS
    /// pending. Returns the outbox ids begun: only those may be sent.
    ///
    /// The mark is made in a transaction of its own, committed by a `COMMIT` this process sends
    /// after the mark's answer (three round trips): a worker that dies while its mark waits for a
    /// lock never has it committed (the server rolls back the session of a client that is gone), so
    /// its SMS is claimed again, not taken for one that may have been sent.
    public func begin(_ claims: [ClaimedSMS], now: Date? = nil) throws -> Set<Int64> {
        if claims.isEmpty { return [] }
        return try connection.transaction { c in
            let r = try c.execPrepared(name: "sms_begin", sql: SMSQueries.begin, params: [
                .int64Array(claims.map(\.outboxID)), .uuidArray(claims.map(\.leaseToken)), now.map(PGValue.date),
            ])
            return Set(try r.rows.map { try r.int64($0, "outbox_id") })
        }
    }

    /// Records the outcomes in one statement, each guarded by its lease token. Returns the outbox
    /// ids recorded; a missing one had lost its lease.
    public func record(_ attempts: [SMSAttemptRecord], now: Date? = nil) throws -> Set<Int64> {
        if attempts.isEmpty { return [] }
        let r = try connection.execPrepared(name: "sms_record", sql: SMSQueries.record, params: [
            .text(try Self.json(attempts)), now.map(PGValue.date),
        ])
        return Set(try r.rows.map { try r.int64($0, "outbox_id") })
    }

    /// Expired leases: SMS that were `sending` become `unknown` (never sent again); the others are
    /// available again. At most `limit` of each.
    public func rescue(limit: Int = 1000, now: Date? = nil) throws -> (unknown: Int, rescued: Int) {
        let r = try connection.execPrepared(name: "sms_rescue", sql: SMSQueries.rescue, params: [
            .int(max(1, limit)), now.map(PGValue.date),
        ])
        return (try r.int(0, "unknown"), try r.int(0, "rescued"))
    }

    /// SMS fallbacks waiting to be sent or being sent (outbox rows of kind `sms` available or
    /// running): `pushfleet worker --until-drained` waits for them too.
    public func openCount() throws -> Int {
        try connection.exec(SMSQueries.open).int(0, "n")
    }

    /// The SMS fallback of notification `id`, or nil when it has none (yet).
    public func report(notificationID id: UUID) throws -> SMSReport? {
        let r = try connection.exec(SMSQueries.byNotification, [.uuid(id)])
        return r.rowCount == 0 ? nil : try Self.report(r, 0)
    }

    /// The SMS fallback in row `i` of a result holding `SMSQueries.reportColumns` (nil when its
    /// `sms_status` is NULL: no SMS). The one decoder of `notifications show` and the API's
    /// notification answers. The segment count of a pending SMS is computed from its text
    /// (PushCore), until the text is erased.
    public static func report(_ r: PGResult, _ i: Int) throws -> SMSReport? {
        guard let status: String = try r.decode(i, "sms_status") else { return nil }
        let text: String? = try r.decode(i, "sms_text")
        let measured = text.map(SMSSegments.init)
        let request: [UInt8]? = try r.decode(i, "sms_request")
        return SMSReport(status: status, provider: try r.decode(i, "sms_provider"),
                         providerMessageID: try r.decode(i, "sms_provider_message_id"),
                         errorCode: try r.decode(i, "sms_error_code"),
                         providerErrorCode: try r.decode(i, "sms_provider_error_code"),
                         errorDetail: try r.decode(i, "sms_error_detail"), attempts: try r.int(i, "sms_attempts"),
                         segments: try r.decode(i, "sms_segments") ?? measured?.count,
                         encoding: try r.decode(i, "sms_encoding") ?? measured?.encoding.rawValue,
                         request: request.map { String(decoding: $0, as: UTF8.self) },
                         queuedAt: try r.date(i, "sms_created_at"), sentAt: try r.decode(i, "sms_sent_at"),
                         finishedAt: try r.decode(i, "sms_finished_at"), erased: try r.bool(i, "sms_erased"))
    }

    /// The JSON array `push_sms_record` reads (the fields of the `push_sms_attempt` type).
    static func json(_ attempts: [SMSAttemptRecord]) throws -> String {
        let array: [[String: Any]] = attempts.map { a in
            var o: [String: Any] = [
                "outbox_id": a.outboxID, "lease_token": a.leaseToken.uuidString.lowercased(), "status": a.status.rawValue,
                "failed": a.failedAttempt, "deferrals": a.deferrals, "ledger": a.ledgerRow,
            ]
            o["run_at"] = a.runAt.map(PGTimestamp.format)
            o["provider"] = a.provider
            o["provider_message_id"] = a.providerMessageID
            o["error_code"] = a.errorCode
            o["provider_error_code"] = a.providerErrorCode
            o["error_detail"] = a.errorDetail
            o["segments"] = a.segments?.count
            o["encoding"] = a.segments?.encoding.rawValue
            o["request"] = a.request.map { Data($0).base64EncodedString() }
            o["credentials"] = a.credentials?.rawValue
            o["credentials_version"] = a.credentialsVersion
            return o
        }
        let data = try JSONSerialization.data(withJSONObject: array, options: [.withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
