import Foundation
import PushCore
import PushCrypto
import PushStore
import PushWorker

/// The routes a device calls with its preview token (issue 24 parts 3 and 5, R-IDS-2..4):
///
/// - `GET /v1/push/previews/{notification_id}`: the content, when the fetch's rule holds now
///   (`PreviewQueries.probe`): sealed to the device's current key as the push envelope (R-ENC-2)
///   (`{"object":"push_preview","notification_id","envelope":{"v":2,"kid","enc","ct"}}`, opening
///   to the R-ENC-3 plaintext), or for a keyless device as that plaintext in clear (`"content"`).
///   Only a notification sent `ids_only` is served (a sealed one's device opens its push). Every
///   refusal (unknown, malformed or another app's token, unknown or malformed id, sent sealed,
///   revoked, erased, never addressed, refused delivery, device deactivated or moved to another
///   user) is the same 404 with the same body after the same work: one SHA-256 and one statement.
///   A `HEAD` answers what the GET would, and confirms nothing.
/// - `POST /v1/push/receipts` with `{"notification_id"}`: confirms the delivery (R-IDS-4) and
///   answers 204 whatever the case (R-IDS-3).
///
/// Rate limits (`PreviewLimiter`) come before any database work. Nothing here logs or counts a
/// token, a notification id or content; answers carry `Cache-Control: no-store`.
final class PreviewHandler: @unchecked Sendable {
    let pool: PGPool
    let metrics: APIMetrics
    let limiter: PreviewLimiter
    let log: Log
    let sealer: EnvelopeSealer?
    /// Closed (503) while the readiness probe finds the schema behind this release.
    let schema: SchemaGate
    var poolWaitSeconds = 2.0

    init(pool: PGPool, metrics: APIMetrics, limits: PreviewLimiter.Limits, log: Log, schema: SchemaGate = SchemaGate()) {
        self.schema = schema
        self.pool = pool
        self.metrics = metrics
        limiter = PreviewLimiter(limits: limits)
        self.log = log
        sealer = try? EnvelopeSealer()
    }

    /// The one refusal of the fetch (R-IDS-3): every case that is not a served preview.
    static let notFound = APIError.notFound("no such preview")
    static let headers = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]

    /// Answers a request on a preview route; `client` is the client's address (the peer, or the
    /// `X-Forwarded-For` hop a trusted proxy vouches for).
    func answer(_ route: PreviewRoute, id: String?, request: HTTPRequest, client: String) -> HTTPResponse {
        var response: HTTPResponse
        do {
            let wanted = request.method == "HEAD" ? "GET" : request.method
            guard wanted == route.method else {
                throw APIError.methodNotAllowed(route == .fetchPreview ? ["GET", "HEAD"] : ["POST"])
            }
            try RequestShape.check(request, template: route.template, takesBody: route == .postReceipt, takesQuery: false)
            switch route {
            case .fetchPreview: response = try fetch(id: id ?? "", request: request, client: client)
            case .postReceipt: response = try receipt(request: request, client: client)
            }
        } catch let e as APIError {
            response = HTTPResponse(status: e.status, headers: Self.headers + e.headers.map { ($0.name, $0.value) }, body: e.body)
        } catch let e as PGError {
            metrics.dbErrors.increment()
            let unavailable = e.isRetryableTransient || e.code == PGPool.timeoutCode
            let missingSchema = SchemaGate.isMissingSchema(e)
            if !unavailable && !missingSchema {
                log.error("api.preview_db_error", ["route": route.template, "code": e.code.rawValue, "sqlstate": e.sqlState ?? ""])
            }
            let err = missingSchema ? SchemaGate.refusal
                : unavailable ? APIError.unavailable("the database is unreachable; retry shortly") : APIError.internalError()
            response = HTTPResponse(status: err.status, headers: Self.headers + err.headers.map { ($0.name, $0.value) }, body: err.body)
        } catch {
            log.error("api.preview_internal_error", ["route": route.template, "error": String(describing: type(of: error))])
            let err = APIError.internalError()
            response = HTTPResponse(status: err.status, headers: Self.headers, body: err.body)
        }
        response.route = route.template
        return response
    }

    /// The bearer token's text, or the empty string when the header is absent or not `Bearer x`:
    /// hashed and looked up all the same, so a missing token costs what a wrong one does.
    static func token(_ request: HTTPRequest) -> String {
        guard let header = request.header("authorization") else { return "" }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return "" }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    /// The 429 of a preview route: a fetch has no key, and which limit tripped (the token's, the
    /// address's or the replica's) is not said.
    static let limitedMessage = "too many preview requests (limits per token, per client address and overall); retry after Retry-After seconds"

    /// The rate limits, before any database work. - Throws: 429 with `Retry-After`.
    func limit(_ hash: [UInt8], client: String) throws {
        if let (which, wait) = limiter.admit(tokenKey: Array(hash.prefix(16)), address: client, now: ConnectionTracker.now()) {
            metrics.previewLimited.increment([which.rawValue])
            throw APIError.rateLimited(retryAfterSeconds: wait, message: Self.limitedMessage)
        }
    }

    func fetch(id: String, request: HTTPRequest, client: String) throws -> HTTPResponse {
        let hash = try PreviewTokenFormat.hash(Self.token(request))
        try limit(hash, client: client)
        let notification = PrefixedID.parse(id, as: .notification) ?? PreviewStore.noNotification
        try schema.check()
        let found = try pool.withConnection(deadline: Date().addingTimeInterval(poolWaitSeconds)) { conn in
            // A HEAD delivers no content to the device: it confirms nothing (R-IDS-4), after the
            // same lookups and with the same answers as the GET.
            try PreviewStore(connection: conn).fetch(tokenHash: hash, notificationID: notification,
                                                     confirm: request.method != "HEAD")
        }
        guard let found else { throw Self.notFound }
        if found.newlyConfirmed {
            metrics.pushesConfirmed.add(app: PrefixedID.format(.app, found.appID), mode: found.mode, platform: found.platform)
        }
        let plaintext = SealedPlaintext.bytes(for: try Self.content(found))
        var out = Array(#"{"object":"push_preview","notification_id":""#.utf8)
        out += Array(PrefixedID.format(.notification, found.notificationID).utf8)
        if let raw = found.publicKey, let kid = found.kid {
            guard let sealer, let key = try? P256PublicKey(validatedStoredBytes: raw),
                  let (enc, ct) = try? sealer.seal(plaintext, to: key) else {
                // A stored key that does not decode: nothing can be sealed to it, and nothing is
                // answered in clear to a device that asked for sealing.
                log.error("api.preview_seal_failed", ["route": PreviewRoute.fetchPreview.template])
                throw Self.notFound
            }
            out += Array(#"","envelope":"#.utf8)
            Envelope(kid: kid, enc: enc, ct: ct).appendJSON(to: &out)
        } else {
            out += Array(#"","content":"#.utf8)
            out += plaintext
        }
        out.append(0x7d)
        return HTTPResponse(status: 200, headers: Self.headers, body: out)
    }

    func receipt(request: HTTPRequest, client: String) throws -> HTTPResponse {
        try APIHandler.requireJSON(request)
        var f = try JSONFields.parseBody(request.body)
        let id = try f.requiredString("notification_id")
        try f.finish()
        let hash = try PreviewTokenFormat.hash(Self.token(request))
        try limit(hash, client: client)
        let notification = PrefixedID.parse(id, as: .notification) ?? PreviewStore.noNotification
        try schema.check()
        let confirmed = try pool.withConnection(deadline: Date().addingTimeInterval(poolWaitSeconds)) { conn in
            try PreviewStore(connection: conn).receipt(tokenHash: hash, notificationID: notification)
        }
        if let c = confirmed {
            metrics.pushesConfirmed.add(app: PrefixedID.format(.app, c.appID), mode: c.mode, platform: c.platform)
        }
        return HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")])
    }

    /// The stored content as PushCore's value, for `SealedPlaintext` (the R-ENC-3 plaintext the
    /// worker seals: title, body, data, badge, sound, thread id, the loc keys and args).
    static func content(_ p: PreviewContent) throws -> NotificationContent {
        func strings(_ json: String?) throws -> [String]? {
            guard let json else { return nil }
            guard case .array(let items) = try JSONParser.parse(json) else { throw APIError.internalError() }
            return try items.map { item in
                guard case .string(let s) = item else { throw APIError.internalError() }
                return s
            }
        }
        return NotificationContent(
            title: p.title, body: p.body, data: try p.data.map { try JSONParser.parseDataObject($0) }, badge: p.badge,
            sound: p.sound, threadId: p.threadID,
            localization: LocalizedText(titleLocKey: p.titleLocKey, titleLocArgs: try strings(p.titleLocArgsJSON),
                                        bodyLocKey: p.bodyLocKey, bodyLocArgs: try strings(p.bodyLocArgsJSON)))
    }
}
