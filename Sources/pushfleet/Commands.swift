import Foundation
import PushCore
import PushCrypto
import PushStore
import PushWorker

/// The commands behind `main.swift`; each opens its own connection from DATABASE_URL.
enum Commands {
    static func databaseURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
            throw CLIError(code: "DB_CONFIG", message: "set DATABASE_URL (a libpq URI or conninfo string)", exitCode: 64)
        }
        return url
    }

    static func connect() throws -> PGConnection { try PGConnection.connect(try databaseURL()) }

    static func domainError(_ e: PGError) -> PushError? { StoreErrors.domainError(e) }

    // MARK: - migrate

    static func migrate(_ args: Arguments, _ out: Output) throws {
        var env = ProcessInfo.processInfo.environment
        if let dir = args.value("sql-dir") { env["PUSHFLEET_SQL_DIR"] = dir }
        let dir = try MigrationDirectory.require(environment: env)
        let conn = try connect()
        let report = try Migrator(connection: conn, migrations: try Migrator.loadMigrations(directory: dir)).migrate()
        if report.databaseIsAhead {
            FileHandle.standardError.write(Data("warning: the database schema (version \(report.databaseVersion)) is newer than this release knows (\(report.latestKnownVersion)); nothing applied\n".utf8))
        }
        out.emit(MigrateOutput(applied: report.applied, version: report.databaseVersion)) {
            report.applied.isEmpty ? "schema up to date (version \(report.databaseVersion))"
                : "applied migrations \(report.applied.map(String.init).joined(separator: ", ")); schema version \(report.databaseVersion)"
        }
    }

    // MARK: - worker

    static func worker(_ args: Arguments, _ out: Output) throws {
        let env = ProcessInfo.processInfo.environment
        var config = WorkerConfig()
        if let n = try args.int("claim-limit", in: 1...10_000) { config.claimLimit = n }
        else if let text = env["PUSHFLEET_CONCURRENCY"] {
            guard let n = Int(text), n >= 1, n <= 10_000 else {
                throw CLIError.usage("PUSHFLEET_CONCURRENCY must be a whole number from 1 to 10000, got \(text.prefix(40))")
            }
            config.claimLimit = n
        }
        if let n = try args.int("batch-size", in: 1...10_000) { config.batchSize = n }
        if let n = try args.int("split-chunk", in: 1...10_000) { config.split.chunkDevices = n }
        if let n = try args.int("split-pending", in: 1...1_000_000) { config.split.maxPendingBatches = n }
        if let s = try args.seconds("lease-seconds", in: 0.3...3_600) { config.leaseSeconds = s }
        if let s = try args.seconds("poll-interval", in: 0.01...3_600) { config.pollInterval = s }
        if let key = Maintainer.Config.invalidSetting(in: env) {
            throw CLIError.usage("\(key) must be a number of seconds (0 or more)"
                                 + (key == "PUSHFLEET_RETENTION_CONTENT" ? " or keep" : "") + ", got \((env[key] ?? "").prefix(40))")
        }
        if let text = env["PUSHFLEET_DRAIN_SECONDS"] {
            guard let s = Double(text), s.isFinite, s >= 0, s <= 3_600 else {
                throw CLIError.usage("PUSHFLEET_DRAIN_SECONDS must be a number of seconds from 0 to 3600, got \(text.prefix(40))")
            }
            config.drainSeconds = s
        }
        let url = try databaseURL()
        let drainSeconds = config.drainSeconds
        let metrics = WorkerMetrics()
        let router = try fleetRouter(try LiveRouter.fromEnvironment(databaseURL: url), env)
        let worker = try Worker(config: config, databaseURL: url, router: router, metrics: metrics)
        worker.webhookDispatcher = try webhookDispatcher(env, owner: config.owner, databaseURL: url, metrics: metrics)
        worker.smsDispatcher = try smsDispatcher(env, owner: config.owner, databaseURL: url, metrics: metrics)
        let metricsServer = try startMetricsServer(args, env, metrics: metrics)

        // Graceful shutdown: SIGTERM / SIGINT stop claiming; in-flight work finishes within the
        // drain deadline, then the process exits 0 (a second signal exits at once).
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        var sources: [DispatchSourceSignal] = []
        let signalQueue = DispatchQueue(label: "pushfleet.signals")
        for sig in [SIGTERM, SIGINT] {
            let s = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
            s.setEventHandler {
                if worker.isStopping { exit(1) }
                Log.shared.info("worker.signal", ["signal": Int(sig), "drain_seconds": drainSeconds])
                worker.requestStop()
                signalQueue.asyncAfter(deadline: .now() + drainSeconds) {
                    Log.shared.error("worker.drain_deadline", ["drain_seconds": drainSeconds])
                    exit(0)
                }
            }
            s.resume()
            sources.append(s)
        }
        if args.flag("until-drained") {
            Thread.detachNewThread {
                var idle = 0
                var conn: PGConnection?
                while !worker.isStopping {
                    Thread.sleep(forTimeInterval: 0.3)
                    do {
                        if conn == nil { conn = try PGConnection.connect(url) }
                        let s = try PGQueueStore(connection: conn!).queueStats()
                        let sms = worker.smsDispatcher == nil ? 0 : try SMSStore(connection: conn!).openCount()
                        let hooks = try WebhookDispatchStore(connection: conn!, keys: nil).dueOrRunning()
                        idle = (s.available == 0 && s.running == 0 && sms == 0 && hooks == 0) ? idle + 1 : 0
                        if idle >= 2 { worker.requestStop() }
                    } catch { conn = nil }
                }
            }
        }
        worker.run()
        metricsServer?.stop()
        withExtendedLifetime(sources) {}
    }

    // MARK: - stats and jobs

    static func stats(_ args: Arguments, _ out: Output) throws {
        let connection = try connect()
        let store = PGQueueStore(connection: connection)
        let pauses = PGPauseStore { connection }
        let interval = args.value("interval").flatMap(Double.init) ?? 1
        repeat {
            let now = Date()
            var s = StatsOutput(queue: try store.queueStats(), paused: try pauses.pauses().map { .init($0, now: now) })
            s.confirmations = try PreviewStore(connection: connection).confirmationRates(since: now.addingTimeInterval(-86_400))
            out.emit(s) {
                (args.flag("watch") ? "\u{1B}[2J\u{1B}[H" + iso(now) + "\n" : "") + s.text(now: now)
            }
            if args.flag("watch") { Thread.sleep(forTimeInterval: interval) }
        } while args.flag("watch")
    }

    static func jobs(_ sub: String, _ args: Arguments, _ out: Output) throws {
        switch sub {
        case "list":
            let text = try args.required("state")
            guard let state = JobState(rawValue: text) else {
                throw CLIError.usage("--state must be one of \(JobState.allCases.map(\.rawValue).joined(separator: ", ")), got \(text.prefix(40))")
            }
            let limit = try args.int("limit", in: 1...10_000) ?? 100
            let list = try PGQueueStore(connection: try connect()).jobList(state: state, limit: limit)
            out.emit(list) {
                list.isEmpty ? "no \(state.rawValue) jobs" : list.map {
                    "\($0.id)  \($0.kind.rawValue)  notification=\(PrefixedID.format(.notification, $0.notificationID))  attempt \($0.attempt)/\($0.maxAttempts)  devices=\($0.devices)  \($0.lastError ?? "")"
                }.joined(separator: "\n")
            }
        case "retry":
            guard args.positional.count > 2, let id = Int64(args.positional[2]) else { throw CLIError.usage("give the job id") }
            guard try PGQueueStore(connection: try connect()).jobRetry(id: id) else { throw PushError(.notFound, "no discarded job \(id)") }
            out.emit(RetryOutput(retried: id)) { "job \(id) is available again" }
        default:
            throw CLIError.usage("jobs \(sub.prefix(20)): unknown")
        }
    }

    // MARK: - test tooling

    static func tooling(_ command: String, _ sub: String, _ args: Arguments, _ out: Output) throws {
        switch (command, sub) {
        case ("keys", "generate"):
            let key = try P256PrivateKey.generate()
            let fields = ["private_key": Base64URL.encode(key.rawScalar), "public_key": key.publicKey.base64URL,
                          "kid": key.publicKey.kid]
            out.emit(KV(fields: fields)) { fields.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n") }
        case ("envelope", "open"):
            guard let scalar = Base64URL.decode(try args.required("private-key")) else {
                throw PushError(.validationError, "private-key: not base64url")
            }
            let envelope = try JSONParser.parse(try args.required("envelope"))
            guard case .object(let o) = envelope,
                  case .string(let enc)? = o["enc"],
                  case .string(let ct)? = o["ct"],
                  let encBytes = Base64URL.decode(enc), let ctBytes = Base64URL.decode(ct) else {
                throw PushError(.validationError, "envelope: expected {\"v\":2,\"kid\",\"enc\",\"ct\"}")
            }
            let plaintext = try EnvelopeSealer().open(enc: encBytes, ct: ctBytes, with: try P256PrivateKey(rawScalar: scalar))
            let text = String(decoding: plaintext, as: UTF8.self)
            out.emit(KV(fields: ["plaintext": text])) { text }
        default:
            throw CLIError.usage("\(command) \(sub.prefix(20)): unknown; see pushfleet keys --help")
        }
    }
}
