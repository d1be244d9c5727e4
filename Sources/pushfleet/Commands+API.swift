import Foundation
import PushAPI
import PushCore
import PushProviders
import PushStore
import PushWorker

/// `pushfleet api`, `pushfleet accounts`, `pushfleet api-keys` (issue 14).
extension Commands {
    // MARK: - api

    /// Runs the HTTP API until SIGTERM / SIGINT, then drains and exits 0.
    static func api(_ args: Arguments, _ out: Output) throws {
        let env = ProcessInfo.processInfo.environment
        let url = try databaseURL()
        let address = try ListenAddress.parse(args.value("addr") ?? env["PUSHFLEET_API_ADDR"] ?? "0.0.0.0:8080")
        let managementText = args.value("management-addr") ?? env["PUSHFLEET_API_MANAGEMENT_ADDR"] ?? "0.0.0.0:9465"
        let management = managementText.lowercased() == "off" ? nil : try ListenAddress.parse(managementText)
        var config = APIServer.Config(databaseURL: url, address: address, management: management)
        func number(_ name: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let text = env[name] else { return nil }
            guard let v = Double(text), v.isFinite, range.contains(v) else {
                throw CLIError.usage("\(name) must be a number from \(range.lowerBound) to \(range.upperBound), got \(text.prefix(40))")
            }
            return v
        }
        if let n = try number("PUSHFLEET_API_POOL_SIZE", 1...512) { config.poolSize = Int(n) }
        if let s = try number("PUSHFLEET_API_DRAIN_SECONDS", 0...3600) { config.drainSeconds = s }
        if let s = try number("PUSHFLEET_API_REQUEST_DEADLINE_SECONDS", 0.5...300) { config.http.requestDeadlineSeconds = s }
        if let n = try number("PUSHFLEET_API_MAX_BODY_BYTES", 1024...1_048_576) { config.http.maxBodyBytes = Int(n) }
        if let n = try number("PUSHFLEET_API_CONNECTION_LIMIT", 1...65_536) { config.http.connectionLimit = UInt32(n) }
        if let n = try number("PUSHFLEET_API_PER_ADDRESS_LIMIT", 1...65_536) { config.http.perAddressLimit = UInt32(n) }
        if let n = try number("PUSHFLEET_API_IDLE_TIMEOUT_SECONDS", 1...3600) { config.http.idleTimeoutSeconds = UInt32(n) }
        let io = try number("PUSHFLEET_API_IO_THREADS", 1...64).map(Int.init) ?? 2
        switch env["PUSHFLEET_API_THREADING"] ?? "event-loop" {
        case "event-loop": config.http.threading = .eventLoop(ioThreads: io, workers: config.poolSize)
        case "thread-per-connection": config.http.threading = .threadPerConnection
        case let other: throw CLIError.usage("PUSHFLEET_API_THREADING must be event-loop or thread-per-connection, got \(other.prefix(40))")
        }
        if let text = env["PUSHFLEET_API_TRUSTED_PROXIES"] { config.trustedProxies = try TrustedProxies(parsing: text) }
        // The preview routes' limits (issue 24 part 3): requests per second and bursts.
        if let v = try number("PUSHFLEET_PREVIEW_RATE_PER_TOKEN", 0.01...1e6) { config.previewLimits.perTokenRate = v }
        if let v = try number("PUSHFLEET_PREVIEW_BURST_PER_TOKEN", 1...1e6) { config.previewLimits.perTokenBurst = v }
        if let v = try number("PUSHFLEET_PREVIEW_RATE_PER_ADDRESS", 0.01...1e6) { config.previewLimits.perAddressRate = v }
        if let v = try number("PUSHFLEET_PREVIEW_BURST_PER_ADDRESS", 1...1e6) { config.previewLimits.perAddressBurst = v }
        if let v = try number("PUSHFLEET_PREVIEW_RATE_OVERALL", 0.01...1e7) { config.previewLimits.overallRate = v }
        if let v = try number("PUSHFLEET_PREVIEW_BURST_OVERALL", 1...1e7) { config.previewLimits.overallBurst = v }
        // Webhook endpoint secrets are sealed with the operator key, as the CLI and the worker do; a
        // server without one still serves everything else (creating or rotating answers 503).
        let keys = env[CredentialKeys.currentVariable].map { !$0.isEmpty } == true ? try CredentialKeys.fromEnvironment(env) : nil
        config.webhooks = WebhookSettings(keys: keys, allowLoopback: WebhookEndpointStore.allowLoopback(env))
        config.oauth = try oauthSettings(env, number: number)

        let server = try APIServer.start(config)
        let drainSeconds = config.drainSeconds
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let queue = DispatchQueue(label: "pushfleet.api.signals")
        let done = DispatchSemaphore(value: 0)
        let stopping = AtomicBool()
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            let s = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            s.setEventHandler {
                if stopping.swap(true) { exit(1) }
                Log.shared.info("api.signal", ["signal": Int(sig), "drain_seconds": drainSeconds])
                DispatchQueue.global().async {
                    let clean = server.drain(seconds: drainSeconds)
                    Log.shared.info("api.drained", ["in_flight_left": server.api.inFlight, "clean": clean])
                    server.stop()
                    done.signal()
                }
            }
            s.resume()
            sources.append(s)
        }
        done.wait()
        withExtendedLifetime(sources) {}
        exit(0)
    }

    /// OAuth access tokens (issue 15 part 1): all of `PUSHFLEET_OAUTH_ISSUER`, `..._AUDIENCE` and
    /// `..._JWKS_URL`, or none (API keys only).
    static func oauthSettings(_ env: [String: String],
                              number: (String, ClosedRange<Double>) throws -> Double?) throws -> OAuthSettings? {
        let issuer = env["PUSHFLEET_OAUTH_ISSUER"].flatMap { $0.isEmpty ? nil : $0 }
        let audience = env["PUSHFLEET_OAUTH_AUDIENCE"].flatMap { $0.isEmpty ? nil : $0 }
        let jwks = env["PUSHFLEET_OAUTH_JWKS_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if issuer == nil && audience == nil && jwks == nil { return nil }
        guard let issuer, let audience, let jwks else {
            throw CLIError.usage("OAuth access tokens need PUSHFLEET_OAUTH_ISSUER, PUSHFLEET_OAUTH_AUDIENCE and PUSHFLEET_OAUTH_JWKS_URL together")
        }
        let source: JWKSSource
        do { source = try JWKSSource.parse(jwks, caFile: env["PUSHFLEET_OAUTH_JWKS_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }) }
        catch let e as JWKSFetchError { throw CLIError.usage("PUSHFLEET_OAUTH_JWKS_URL: \(e.message)") }
        var settings = OAuthSettings(tokens: AccessTokenSettings(issuer: issuer, audience: audience,
                                                                 leewaySeconds: try number("PUSHFLEET_OAUTH_LEEWAY_SECONDS", 0...300) ?? 30),
                                     jwks: source)
        if let s = try number("PUSHFLEET_OAUTH_JWKS_REFRESH_SECONDS", 60...86_400) { settings.refreshSeconds = s }
        if let n = try number("PUSHFLEET_OAUTH_RATE_LIMIT", 1...1_000_000) { settings.rateLimitPerSecond = Int(n) }
        return settings
    }

    // MARK: - accounts

    struct AccountOut: Encodable {
        var id: String
        var name: String
        var isDefault: Bool
        var createdAt: Date
        init(_ a: Account) {
            id = PrefixedID.format(.account, a.id)
            name = a.name
            isDefault = a.isDefault
            createdAt = a.createdAt
        }
    }

    static func accounts(_ sub: String, _ args: Arguments, _ out: Output) throws {
        guard sub == "create" else { throw CLIError.usage("accounts \(sub.prefix(20)): unknown; see pushfleet accounts --help") }
        let account = try AccountStore(connection: try connect()).createAccount(name: args.value("name") ?? "account")
        out.emit(AccountOut(account)) { PrefixedID.format(.account, account.id) }
    }

    // MARK: - api-keys

    struct KeyOut: Encodable {
        var key: String?
        var id: String
        var accountId: String
        var mode: String
        var name: String?
        var prefix: String
        var permissions: String
        var rateLimitPerSecond: Int
        var createdAt: Date
        var revokedAt: Date?
        var appIds: [String]?
        init(_ r: APIKeyRecord, key: String? = nil) {
            self.key = key
            id = PrefixedID.format(.apiKey, r.id)
            accountId = PrefixedID.format(.account, r.accountID)
            mode = r.mode
            name = r.name
            prefix = r.prefix
            permissions = r.permissions
            rateLimitPerSecond = r.rateLimitPerSecond
            createdAt = r.createdAt
            revokedAt = r.revokedAt
            appIds = r.appIDs.map { $0.map { PrefixedID.format(.app, $0) } }
        }
        enum CodingKeys: String, CodingKey {
            case key, id, accountId, mode, name, prefix, permissions, rateLimitPerSecond, createdAt, revokedAt, appIds
        }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(key, forKey: .key)
            try c.encode(id, forKey: .id)
            try c.encode(accountId, forKey: .accountId)
            try c.encode(mode, forKey: .mode)
            try c.encode(name, forKey: .name)
            try c.encode(prefix, forKey: .prefix)
            try c.encode(permissions, forKey: .permissions)
            try c.encode(rateLimitPerSecond, forKey: .rateLimitPerSecond)
            try c.encode(createdAt, forKey: .createdAt)
            try c.encode(revokedAt, forKey: .revokedAt)
            try c.encode(appIds, forKey: .appIds)
        }
    }

    static func apiKeys(_ sub: String, _ args: Arguments, _ out: Output) throws {
        func account() throws -> UUID {
            let text = try args.required("account")
            guard let id = PrefixedID.parseLenient(text, as: .account) else {
                throw CLIError.usage("--account must be an account id (pacc_... or a UUID)")
            }
            return id
        }
        switch sub {
        case "create":
            let accountID = try account()
            guard let mode = Mode(rawValue: try args.required("mode")) else { throw CLIError.usage("--mode must be test or live") }
            let permissions = try APIPermissions(parsing: try args.required("permissions"))
            // --apps papp_...,papp_...: the key sees those apps only (issue 15 part 3).
            let apps = try args.value("apps").map { text -> [UUID] in
                try text.split(separator: ",", omittingEmptySubsequences: false).map { part in
                    guard let id = PrefixedID.parseLenient(String(part), as: .app) else {
                        throw CLIError.usage("--apps takes app ids separated by commas (papp_... or UUIDs), got \(part.prefix(40))")
                    }
                    return id
                }
            }
            let store = AccountStore(connection: try connect())
            let (key, record) = try store.issueKey(accountID: accountID, mode: mode, permissions: permissions,
                                                   name: args.value("name"),
                                                   rateLimitPerSecond: try args.int("rate-limit", in: 1...1_000_000),
                                                   appIDs: apps, actor: AuditStore.cliActor())
            out.emit(KeyOut(record, key: key)) { key }
            if !out.json {
                FileHandle.standardError.write(Data("key \(PrefixedID.format(.apiKey, record.id)) (\(mode.rawValue), \(record.permissions)): shown once, only its hash is stored\n".utf8))
            }
        case "list":
            let list = try AccountStore(connection: try connect()).listKeys(accountID: try account()).map { KeyOut($0) }
            out.emit(list) {
                list.isEmpty ? "no keys" : list.map {
                    "\($0.id)  \($0.prefix)…  \($0.mode)  \($0.permissions)  \($0.rateLimitPerSecond)/s  \($0.revokedAt == nil ? "active" : "revoked")\($0.appIds.map { "  apps " + $0.joined(separator: ",") } ?? "")\($0.name.map { "  \($0)" } ?? "")"
                }.joined(separator: "\n")
            }
        case "revoke":
            guard args.positional.count > 2, let id = PrefixedID.parseLenient(args.positional[2], as: .apiKey) else {
                throw CLIError.usage("give the key id (pkey_... or a UUID; see pushfleet api-keys list)")
            }
            guard let record = try AccountStore(connection: try connect()).revokeKey(id: id, actor: AuditStore.cliActor()) else {
                throw PushError(.notFound, "no API key \(PrefixedID.format(.apiKey, id))")
            }
            out.emit(KeyOut(record)) { "revoked \(PrefixedID.format(.apiKey, id)) (\(record.prefix)…); refused from the next request on" }
        default:
            throw CLIError.usage("api-keys \(sub.prefix(20)): unknown; see pushfleet api-keys --help")
        }
    }
}

/// A flag set once, read from any thread.
final class AtomicBool: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    /// Sets it; returns the value before.
    func swap(_ v: Bool) -> Bool { lock.withLock { defer { value = v }; return value } }
}
