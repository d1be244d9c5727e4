import Foundation
import PushCore
import PushProviders
import PushStore
import PushWorker

/// The preview routes' rate limits (issue 24 part 3): requests per second and burst for one
/// preview token, one client address and the whole replica. Defaults in `PreviewLimiter.Limits`.
public struct PreviewRateLimits: Sendable, Equatable {
    public var perTokenRate = 5.0, perTokenBurst = 20.0
    public var perAddressRate = 50.0, perAddressBurst = 200.0
    public var overallRate = 2000.0, overallBurst = 4000.0

    /// The defaults.
    public init() {}

    var limits: PreviewLimiter.Limits {
        PreviewLimiter.Limits(perToken: .init(rate: perTokenRate, burst: perTokenBurst),
                              perAddress: .init(rate: perAddressRate, burst: perAddressBurst),
                              overall: .init(rate: overallRate, burst: overallBurst))
    }
}

/// `pushfleet api`: the API on one address and `/healthz`, `/readyz`, `/metrics` on a management
/// address (never the public one), over a bounded pool of database sessions. Stateless: any
/// number of replicas may run behind an ordinary load balancer (keys, rate-limit buckets and
/// everything else live in PostgreSQL). TLS is the ingress's.
public final class APIServer: @unchecked Sendable {
    /// The schema this build's API needs (sql/0008 holds accounts and keys).
    public static let requiredSchemaVersion = ReadinessGate.requiredSchemaVersion

    /// What to serve and how.
    public struct Config: Sendable {
        /// libpq URI or conninfo.
        public var databaseURL: String
        /// The API's own limits and threading (its address included).
        public var http: HTTPServer.Config
        /// The management address; nil: none.
        public var management: ListenAddress?
        /// Database sessions at most (`PUSHFLEET_API_POOL_SIZE`).
        public var poolSize = 16
        /// Seconds a drain waits for requests in flight.
        public var drainSeconds = 20.0
        /// Proxies whose `X-Forwarded-For` the access log believes.
        public var trustedProxies = TrustedProxies()
        /// The webhook endpoint routes' operator key and loopback switch.
        public var webhooks = WebhookSettings(keys: nil, allowLoopback: false)
        /// OAuth access tokens (issue 15 part 1); nil: API keys only.
        public var oauth: OAuthSettings?
        /// The preview routes' rate limits per token, per client address and overall (issue 24
        /// part 3), in requests per second with their bursts; `PUSHFLEET_PREVIEW_RATE_*`.
        public var previewLimits = PreviewRateLimits()

        /// A configuration with the defaults.
        public init(databaseURL: String, address: ListenAddress, management: ListenAddress?) {
            self.databaseURL = databaseURL
            http = HTTPServer.Config(address: address)
            self.management = management
        }
    }

    /// The API's server.
    public let api: HTTPServer
    /// The management server, when configured.
    public let managementServer: HTTPServer?
    /// The pool.
    public let pool: PGPool
    /// The metrics.
    public let metrics: APIMetrics
    let handler: APIHandler
    let readiness: ReadinessProbe

    private init(api: HTTPServer, management: HTTPServer?, pool: PGPool, metrics: APIMetrics, handler: APIHandler,
                 readiness: ReadinessProbe) {
        self.api = api
        managementServer = management
        self.pool = pool
        self.metrics = metrics
        self.handler = handler
        self.readiness = readiness
    }

    /// Starts both servers and the readiness probe.
    /// - Throws: `APIConfigError` `API_START` when an address cannot be bound.
    public static func start(_ config: Config, log: Log = .shared) throws -> APIServer {
        let pool = PGPool(config: PGPool.Config(conninfo: config.databaseURL, maxConnections: config.poolSize))
        let metrics = APIMetrics()
        let handler = APIHandler(pool: pool, metrics: metrics, log: log, previewLimits: config.previewLimits.limits)
        handler.trustedProxies = config.trustedProxies
        handler.webhooks = config.webhooks
        if let oauth = config.oauth {
            let verifier = AccessTokenVerifier(settings: oauth, log: log)
            // The first fetch before the first request; a failure is logged and retried by the
            // first token that needs a key (at most once a minute).
            verifier.keys.refreshNowIfAllowed()
            handler.tokens = verifier
        }
        var http = config.http
        http.logMinimum = log.minimum
        if case .eventLoop(let io, _) = http.threading { http.threading = .eventLoop(ioThreads: io, workers: config.poolSize) }
        let api = try HTTPServer.start(http, handler: handler)
        let readiness = ReadinessProbe(databaseURL: config.databaseURL, metrics: metrics, log: log, schema: handler.schema)
        var management: HTTPServer?
        if let address = config.management {
            var m = HTTPServer.Config(address: address)
            m.threading = .eventLoop(ioThreads: 1, workers: 2)
            m.connectionLimit = 256
            m.perAddressLimit = 32
            m.idleTimeoutSeconds = 5
            m.requestDeadlineSeconds = 3
            m.maxBodyBytes = 0
            m.logEvent = "api.management_http"
            m.logMinimum = log.minimum
            do { management = try HTTPServer.start(m, handler: ManagementHandler(metrics: metrics)) } catch {
                api.stop()
                throw error
            }
        }
        let server = APIServer(api: api, management: management, pool: pool, metrics: metrics, handler: handler,
                               readiness: readiness)
        metrics.bind(pool: { [weak pool] in pool?.stats },
                     server: { [weak api] in api.map { ($0.connectionCount, $0.inFlight, $0.deadlineClosures) } })
        readiness.start()
        log.info("api.start", ["addr": config.http.address.description, "port": Int(api.port),
                               "management_port": management.map { Int($0.port) } ?? 0, "pool_size": config.poolSize,
                               "threading": "\(http.threading)", "schema_required": requiredSchemaVersion,
                               "webhook_secrets": config.webhooks.keys == nil ? "no PUSHFLEET_CREDENTIALS_KEY: create and rotate answer 503" : "sealed",
                               "oauth": config.oauth.map { "issuer \($0.tokens.issuer), jwks \($0.jwks)" } ?? "off"])
        return server
    }

    /// SIGTERM: `/readyz` turns 503, the API stops accepting and closes idle connections, and
    /// requests in flight are answered (with `Connection: close`) until none is left or
    /// `drainSeconds` pass. Returns true when none was left.
    public func drain(seconds: Double) -> Bool {
        readiness.markDraining()
        api.beginDrain()
        return api.waitForInFlight(until: Date().addingTimeInterval(seconds))
    }

    /// Stops everything.
    public func stop() {
        readiness.stop()
        api.stop()
        managementServer?.stop()
        pool.close()
    }
}

/// `/readyz`'s verdict, probed every second on a session of its own (so a busy pool does not
/// make a replica look unready): the database answers, its schema is at least
/// `APIServer.requiredSchemaVersion`, it accepts writes, and the server is not draining.
final class ReadinessProbe: @unchecked Sendable {
    let databaseURL: String
    let metrics: APIMetrics
    let log: Log
    private let draining = AtomicFlag()
    private let stopped = AtomicFlag()
    /// Signalled by `stop()` to cut the probe's one-second pause short.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled once by the probe thread when it has left its loop and closed its session.
    private let finished = DispatchSemaphore(value: 0)
    private var verdict = "starting"
    private let lifecycle = NSLock()
    private var running = false
    /// The platforms the API's acceptance serves (its provider table's), told to the database
    /// (`push_platforms`, sql/0024) on the probe's first ready verdict.
    let platforms: [PlatformTraits]
    private var platformsServed = false
    /// The handlers' gate, closed while a verdict finds the schema behind (`SCHEMA_TOO_OLD`).
    let schema: SchemaGate

    init(databaseURL: String, metrics: APIMetrics, log: Log,
         platforms: [PlatformTraits] = ProviderTable.standard.servedPlatforms, schema: SchemaGate = SchemaGate()) {
        self.schema = schema
        self.platforms = platforms
        self.databaseURL = databaseURL
        self.metrics = metrics
        self.log = log
    }

    func start() {
        lifecycle.withLock { running = true }
        let t = Thread { [self] in
            var connection: PGConnection?
            while !stopped.current {
                var now = "ready"
                var detail: [String: Any] = [:]
                do {
                    let session: PGConnection
                    if let open = connection, open.isHealthy {
                        session = open
                    } else {
                        session = try PGConnection.connect(databaseURL, connectTimeoutSeconds: 2)
                        try session.setStatementTimeout(milliseconds: 2_000)
                        connection = session
                    }
                    let h = try HealthStore(connection: session).healthProbe(required: ReadinessGate.requiredMigrations)
                    let verdict = ReadinessGate.verdict(h, requiredVersion: APIServer.requiredSchemaVersion)
                    if case .schemaTooOld = verdict { schema.set(behind: true) } else { schema.set(behind: false) }
                    if verdict != .ready {
                        now = verdict.reason
                    } else if !platformsServed {
                        do {
                            try PlatformStore(connection: session).serve(platforms)
                            platformsServed = true
                        } catch let e as PGError where e.sqlState != nil && !e.isConnectionLost {
                            // The database answered and refused the write (a privilege missing on
                            // push_platforms): not ready, said as such, and tried at the next probe.
                            now = "PLATFORMS_NOT_SERVED"
                            detail = ["sqlstate": e.sqlState ?? "", "message": String(e.message.prefix(300)),
                                      "hint": "grant the API's role INSERT, UPDATE on push_platforms"]
                        }
                    }
                } catch {
                    connection = nil
                    now = "DATABASE_UNREACHABLE"
                }
                if draining.current { now = "DRAINING" }
                metrics.ready.set(now == "ready" ? 1 : 0)
                if now != verdict {
                    verdict = now
                    if now == "ready" { log.info("api.ready", [:]) } else { log.warn("api.not_ready", detail.merging(["reason": now]) { $1 }) }
                }
                _ = wake.wait(timeout: .now() + 1)
            }
            connection = nil
            finished.signal()
        }
        t.name = "pushfleet.api.readiness"
        t.start()
    }

    func markDraining() {
        draining.set(true)
        metrics.ready.set(0)
    }

    /// Ends the probe loop and waits (at most `seconds`: one probe's connect and statement
    /// timeouts) until its thread has closed its session, so that the process's `exit` never runs
    /// libpq's and OpenSSL's teardown under a probe still using them (which aborted the process at
    /// SIGTERM now and then). Returns false when the thread did not finish in time.
    @discardableResult
    func stop(seconds: Double = 5) -> Bool {
        let wasRunning = lifecycle.withLock { () -> Bool in
            defer { running = false }
            return running
        }
        stopped.set(true)
        guard wasRunning else { return true }
        wake.signal()
        return finished.wait(timeout: .now() + seconds) == .success
    }
}

/// The management address: `GET|HEAD /healthz` (200 while the process runs), `/readyz` (200 when
/// ready, else 503), `/metrics`; 404 for any other path, 405 for any other method. No database
/// call: readiness comes from `ReadinessProbe`.
final class ManagementHandler: HTTPHandler, @unchecked Sendable {
    let metrics: APIMetrics

    init(metrics: APIMetrics) { self.metrics = metrics }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        func text(_ status: Int, _ body: String, _ type: String = "text/plain") -> HTTPResponse {
            HTTPResponse(status: status, headers: [("Content-Type", type)], body: Array(body.utf8), route: request.path)
        }
        if let refused = refusal(method: request.method, path: request.path) { return refused }
        switch request.path {
        case "/healthz": return text(200, "ok\n")
        case "/readyz": return metrics.ready.current == 1 ? text(200, "ready\n") : text(503, "not ready\n")
        default: return text(200, metrics.render(), "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    /// 404 for a path other than the three, 405 for a method other than GET and HEAD, whatever
    /// the body (the management address takes none).
    func refusal(method: String, path: String) -> HTTPResponse? {
        guard ["/healthz", "/readyz", "/metrics"].contains(path) else {
            return HTTPResponse(status: 404, headers: [("Content-Type", "text/plain")], body: Array("not found\n".utf8))
        }
        guard method == "GET" || method == "HEAD" else {
            return HTTPResponse(status: 405, headers: [("Allow", "GET, HEAD"), ("Content-Type", "text/plain")],
                                body: Array("method not allowed\n".utf8), route: path)
        }
        return nil
    }

    func serverError(status: Int, code: String, message: String, field: String?, requestID: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain")], body: Array("\(code): \(message)\n".utf8))
    }

    func completed(_ exchange: HTTPExchange) {}
}
