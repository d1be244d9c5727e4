import Foundation
import PushCore
import PushCrypto
import PushStore
import PushWorker

/// The API's request handler: route, credential, rate limit, permission, body, then the route's
/// work on one pooled database session, and one JSON answer. Every write goes through
/// `AcceptanceService` (the acceptance path the CLI shares, R-API-6); reads are scoped to the key's
/// account and mode (`APIReadStore`). No input yields a 5xx: a database that cannot be reached is
/// 503 within the pool's fail-fast window, and anything unexpected is a logged 500 (a bug).
public final class APIHandler: HTTPHandler, @unchecked Sendable {
    /// How long a request may wait for a database session (seconds) before its 503.
    public var poolWaitSeconds = 2.0
    /// Proxies whose `X-Forwarded-For` names the client in the access log.
    public var trustedProxies = TrustedProxies()
    /// What the webhook endpoint routes need (the operator key that seals their secrets).
    public var webhooks = WebhookSettings(keys: nil, allowLoopback: false)
    /// Verifies OAuth access tokens (issue 15 part 1); nil: the server takes API keys only.
    var tokens: AccessTokenVerifier?
    let pool: PGPool
    let metrics: APIMetrics
    let limiter = RateLimiter()
    let log: Log
    /// The preview fetch and receipts (issue 24), which take a device's preview token, not a key.
    var preview: PreviewHandler
    /// Closed (503) while the readiness probe finds the schema behind this release.
    let schema = SchemaGate()

    /// A handler on `pool`, recording into `metrics`.
    init(pool: PGPool, metrics: APIMetrics, log: Log = .shared, previewLimits: PreviewLimiter.Limits = .init()) {
        self.pool = pool
        self.metrics = metrics
        self.log = log
        preview = PreviewHandler(pool: pool, metrics: metrics, limits: previewLimits, log: log, schema: schema)
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let client = trustedProxies.client(peer: request.peer, forwardedFor: request.header("x-forwarded-for"))
        var response: HTTPResponse
        if let (route, id) = PreviewRoute.match(path: request.path) {
            preview.poolWaitSeconds = poolWaitSeconds
            response = preview.answer(route, id: id, request: request, client: client)
        } else {
            response = answer(request)
        }
        response.client = client
        return response
    }

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        var route = "unmatched"
        var keyPrefix: String?
        do {
            let (r, id, kind): (APIRoute, String?, String?)
            switch APIRouter.match(method: request.method, path: request.path) {
            case .notFound: throw APIError.notFound("no such path")
            case .methodNotAllowed(let allowed): throw APIError.methodNotAllowed(allowed)
            case .route(let matched, let raw, let rawKind): (r, id, kind) = (matched, raw, rawKind)
            }
            route = r.template
            try RequestShape.check(request, template: r.template, takesBody: r.acceptsBody, takesQuery: r.takesQuery)
            let key: String
            switch try Self.credential(request, tokens: tokens != nil) {
            case .key(let k): key = k
            case .token(let token):
                guard let tokens else { throw APIError.unauthorized("unknown or revoked API key") }
                return try answerToken(token, verifier: tokens, route: r, id: id, kind: kind, request: request,
                                       keyPrefix: &keyPrefix)
            }
            keyPrefix = APIKeyFormat.displayPrefix(key)
            let hash = try APIKeyFormat.hash(key)
            // The body is read before the database is (pure), so the app it names can be checked
            // in the same round trip as the key; its errors are answered after the key's.
            let body = Result { try Self.body(r, request, kind: kind) }
            let appToCheck = Self.appNamed(r, body, request)
            try schema.check()
            return try pool.withConnection(deadline: Date().addingTimeInterval(poolWaitSeconds)) { conn in
                if let read = try keyedRead(r, id: id, key: key, hash: hash, conn: conn) {
                    var answer = read
                    answer.route = route
                    answer.keyPrefix = keyPrefix
                    return answer
                }
                var principal = try admit(try AccountStore(connection: conn).authenticate(keyHash: hash, appID: appToCheck),
                                          key: key, route: r, conn: conn)
                principal.actor = APIKeyFormat.displayPrefix(key)
                let routes = APIRoutes(connection: conn, principal: principal, request: request, webhooks: webhooks)
                try routes.preflight(r, id: id)
                var answer = try routes.run(r, id: id, kind: kind, body: try body.get())
                answer.route = route
                answer.keyPrefix = keyPrefix
                return answer
            }
        } catch let e as APIError {
            return respond(e, route: route, keyPrefix: keyPrefix)
        } catch let e as PGError {
            return respond(databaseError(e, route: route, request: request), route: route, keyPrefix: keyPrefix)
        } catch let e as PushError {
            return respond(AcceptanceMapping.apiError(e), route: route, keyPrefix: keyPrefix)
        } catch {
            log.error("api.internal_error", ["route": route, "request_id": request.requestID, "error": String(describing: error)])
            return respond(.internalError(), route: route, keyPrefix: keyPrefix)
        }
    }

    /// A request whose credential is an OAuth access token: the token is verified without the
    /// database (signature, then claims), then the app it names is checked in one statement, and
    /// the request runs as a key's would. A refused token is 401 `UNAUTHORIZED` with
    /// `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1).
    func answerToken(_ token: String, verifier: AccessTokenVerifier, route r: APIRoute, id: String?, kind: String?,
                     request: HTTPRequest, keyPrefix: inout String?) throws -> HTTPResponse {
        var principal: APIPrincipal
        do { principal = try verifier.principal(token) } catch let refusal as AccessTokenRefusal {
            throw tokenRefused(refusal, route: r, request: request)
        }
        keyPrefix = String(principal.actor.prefix(64))
        let body = Result { try Self.body(r, request, kind: kind) }
        let appToCheck = Self.appNamed(r, body, request)
        let prefix = keyPrefix
        try schema.check()
        return try pool.withConnection(deadline: Date().addingTimeInterval(poolWaitSeconds)) { conn in
            // A well-signed token naming no account is refused like any other bad token.
            guard try verifier.knownAccounts.exists(principal.accountID, lookup: {
                try AccountStore(connection: conn).account(id: $0) != nil
            }) else {
                throw tokenRefused(AccessTokenRefusal("unknown_account", "the token's pushfleet_account names no account"),
                                   route: r, request: request)
            }
            if let app = appToCheck {
                principal.appOwned = try AccountStore(connection: conn).appOwned(appID: app, accountID: principal.accountID,
                                                                                 appIDs: principal.appIDs)
            }
            try admit(principal, key: nil, route: r, conn: conn)
            let routes = APIRoutes(connection: conn, principal: principal, request: request, webhooks: webhooks)
            try routes.preflight(r, id: id)
            var answer = try routes.run(r, id: id, kind: kind, body: try body.get())
            answer.route = r.template
            answer.keyPrefix = prefix
            return answer
        }
    }

    /// The 401 of a refused token (RFC 6750 §3.1), logged with its reason.
    func tokenRefused(_ refusal: AccessTokenRefusal, route r: APIRoute, request: HTTPRequest) -> APIError {
        log.info("api.token_refused", ["route": r.template, "request_id": request.requestID, "reason": refusal.reason])
        return APIError(status: 401, code: "UNAUTHORIZED", message: refusal.message,
                        headers: [.init(name: "WWW-Authenticate", value: "Bearer realm=\"pushfleet\", error=\"invalid_token\"")])
    }

    public func serverError(status: Int, code: String, message: String, field: String?, requestID: String) -> HTTPResponse {
        respond(APIError(status: status, code: code, message: message, field: field), route: "unmatched", keyPrefix: nil)
    }

    /// The access log line and the request metrics (issue 14 part 8): method, route template,
    /// status, duration, request id, key prefix; never a key, token, encryption key or content.
    public func completed(_ x: HTTPExchange) {
        let method = Self.knownMethods.contains(x.method) ? x.method : "OTHER"
        metrics.observe(route: x.route, method: method, status: x.status, seconds: x.seconds)
        if log.minimum <= .info { AccessLog.write(x, method: method) }
    }

    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// The key's checks, in order: known, not revoked and of the mode its text says (401), within
    /// its rate (429, R-API part 6), holding the route's permission (403, R-API-2). `key` is nil
    /// for an access token (verified before, its mode is its claim's).
    @discardableResult
    func admit(_ principal: APIPrincipal?, key: String?, route: APIRoute, conn: PGConnection) throws -> APIPrincipal {
        guard let principal, !principal.revoked, key.map({ principal.mode == APIKeyFormat.mode(of: $0) }) ?? true else {
            throw APIError.unauthorized("unknown or revoked API key")
        }
        if case .limited(let wait) = try limiter.admit(keyID: principal.keyID, rate: principal.rateLimitPerSecond,
                                                       now: ConnectionTracker.now(), take: { want in
            let t = try AccountStore(connection: conn).takeTokens(
                keyID: principal.keyID, want: want, ratePerSecond: Double(principal.rateLimitPerSecond),
                burst: Double(principal.rateLimitPerSecond))
            return (t.granted, t.retryAfterSeconds)
        }) {
            metrics.rateLimited.increment()
            throw APIError.rateLimited(retryAfterSeconds: wait)
        }
        for (resource, access) in [route.permission] + (route.alsoNeeds.map { [$0] } ?? []) {
            guard principal.permissions.allows(resource, access) else {
                guard key == nil, let scope = AccessTokenRules.scope(granting: .init(resource, access)) else {
                    throw APIError.forbidden("this key lacks \(resource.rawValue):\(access.rawValue)")
                }
                throw APIError.forbidden("this token's scope lacks \(scope) (\(resource.rawValue):\(access.rawValue))")
            }
        }
        return principal
    }

    /// GET of a device, an app or a notification by a well-formed id: the key and the object in one
    /// round trip (`APIKeyedReads`), the key's checks (`admit`) before the object is answered. Nil
    /// for every other request.
    func keyedRead(_ route: APIRoute, id: String?, key: String, hash: [UInt8], conn: PGConnection) throws -> HTTPResponse? {
        let reads = APIKeyedReads(connection: conn)
        let encoded: JSONValue?
        switch route {
        case .getDevice:
            guard let uuid = id.flatMap({ PrefixedID.parse($0, as: .device) }) else { return nil }
            let r = try reads.device(keyHash: hash, id: uuid)
            try admit(r.principal, key: key, route: route, conn: conn)
            encoded = r.object.map(ResponseBodies.device)
        case .getApp:
            guard let uuid = id.flatMap({ PrefixedID.parse($0, as: .app) }) else { return nil }
            let r = try reads.app(keyHash: hash, id: uuid)
            try admit(r.principal, key: key, route: route, conn: conn)
            encoded = r.object.map(ResponseBodies.app)
        case .getNotification:
            guard let uuid = id.flatMap({ PrefixedID.parse($0, as: .notification) }) else { return nil }
            let r = try reads.notification(keyHash: hash, id: uuid)
            try admit(r.principal, key: key, route: route, conn: conn)
            encoded = r.object.map(ResponseBodies.notification)
        default:
            return nil
        }
        guard let encoded else {
            throw APIError.notFound(route == .getApp ? "no such push app" : route == .getDevice ? "no such device" : "no such notification")
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: JSONWriter.bytes(encoded))
    }

    // MARK: - Pieces

    /// What a request presents: an API key, or an OAuth access token.
    enum Credential {
        case key(String)
        case token(String)
    }

    /// The credential of `Authorization: Bearer mk_...` (a key), or of `Bearer` a JWS when the
    /// server takes access tokens. - Throws: 401 when absent or malformed.
    static func credential(_ request: HTTPRequest, tokens: Bool) throws -> Credential {
        guard let header = request.header("authorization") else {
            throw APIError.unauthorized("send Authorization: Bearer mk_test_... or mk_live_...")
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError.unauthorized("the Authorization header must be Bearer followed by the key")
        }
        let key = parts[1].trimmingCharacters(in: .whitespaces)
        if tokens, APIKeyFormat.mode(of: key) == nil, AccessTokenVerifier.looksLikeToken(key) { return .token(key) }
        guard APIKeyFormat.mode(of: key) != nil else { throw APIError.unauthorized("unknown or revoked API key") }
        return .key(key)
    }

    /// The route's typed body (nil for routes without one), after the content type check.
    /// A route without a body (cancel, rotate) takes none or `{}`: a member is refused like any
    /// unknown field, so a caller expecting it to mean something learns it does not.
    static func body(_ route: APIRoute, _ request: HTTPRequest, kind: String? = nil) throws -> RouteBody {
        let bodiless = !route.takesBody
        if route == .revokeNotification {
            if !request.body.isEmpty { try Self.requireJSON(request) }
            return .revoke(try RevokeBody.decode(request.body))
        }
        // A body on a route that takes none (a GET, a DELETE) never gets here: RequestShape.check
        // refused it before the key was read.
        if bodiless && request.body.isEmpty { return .none }
        try requireJSON(request)
        if bodiless {
            try JSONFields.parseBody(request.body).finish()
            return .none
        }
        switch route {
        case .registerDevice: return .device(try DeviceBody.decode(request.body))
        case .createApp: return .app(try AppBody.decode(request.body, creating: true))
        case .updateApp: return .app(try AppBody.decode(request.body, creating: false))
        case .sendNotification: return .notification(try NotificationBody.decode(request.body))
        case .createWebhookEndpoint: return .webhookEndpoint(try WebhookEndpointBody.decode(request.body, creating: true))
        case .updateWebhookEndpoint: return .webhookEndpoint(try WebhookEndpointBody.decode(request.body, creating: false))
        case .setCredentials: return .credentials(try CredentialBody.decode(request.body, kind: try CredentialBody.kind(kind)))
        default: return .none
        }
    }

    /// 415 unless the body is `application/json` (charset utf-8 at most).
    static func requireJSON(_ request: HTTPRequest) throws {
        let type = request.header("content-type")?.lowercased() ?? ""
        let media = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let params = type.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        guard media == "application/json", params.allSatisfy({ $0 == "charset=utf-8" || $0 == "charset=\"utf-8\"" }) else {
            throw APIError.unsupportedMediaType()
        }
    }

    /// The app a request names (body `app_id`, or the `app_id` filter of a list), checked for
    /// ownership in the key's round trip; nil when none or malformed (the route refuses those).
    static func appNamed(_ route: APIRoute, _ body: Result<RouteBody, Error>, _ request: HTTPRequest) -> UUID? {
        switch (route, body) {
        case (.registerDevice, .success(.device(let b))): return PrefixedID.parse(b.appID, as: .app)
        case (.sendNotification, .success(.notification(let b))): return PrefixedID.parse(b.appID, as: .app)
        case (.createWebhookEndpoint, .success(.webhookEndpoint(let b))): return b.appID.flatMap { PrefixedID.parse($0, as: .app) }
        case (.listDevices, _), (.listNotifications, _), (.listWebhookEndpoints, _), (.listAuditEvents, _), (.usage, _),
             (.eraseUser, _):
            return request.query.last(where: { $0.name == "app_id" })?.value.flatMap { PrefixedID.parse($0, as: .app) }
        default: return nil
        }
    }

    /// 503 for an unreachable or busy database or a schema not yet migrated (a missing table or
    /// function), the stable code of the SQL functions' own refusals (`CODE: message`), 500 for
    /// anything else (logged: a bug).
    func databaseError(_ e: PGError, route: String, request: HTTPRequest) -> APIError {
        if let domain = StoreErrors.domainError(e) { return AcceptanceMapping.apiError(domain) }
        // PostgreSQL text cannot hold NUL: refused before anything is sent.
        if e.code == .encode { return .validation("text fields may not contain NUL (\\u0000)", field: nil) }
        metrics.dbErrors.increment()
        if SchemaGate.isMissingSchema(e) { return SchemaGate.refusal }
        if e.isRetryableTransient || e.code == PGPool.timeoutCode {
            return .unavailable(e.code == PGPool.timeoutCode ? "every database session is busy; retry shortly"
                                                             : "the database is unreachable; retry shortly")
        }
        log.error("api.db_error", ["route": route, "request_id": request.requestID, "code": e.code.rawValue,
                                   "sqlstate": e.sqlState ?? "", "message": e.message, "constraint": e.constraint ?? ""])
        return .internalError()
    }

    func respond(_ e: APIError, route: String, keyPrefix: String?) -> HTTPResponse {
        HTTPResponse(status: e.status, headers: [("Content-Type", "application/json")] + e.headers.map { ($0.name, $0.value) },
                     body: e.body, route: route, keyPrefix: keyPrefix)
    }
}

/// A route's decoded body.
enum RouteBody {
    case none
    case device(DeviceBody)
    case app(AppBody)
    case notification(NotificationBody)
    case webhookEndpoint(WebhookEndpointBody)
    case credentials(CredentialBody)
    case revoke(RevokeBody)
}
