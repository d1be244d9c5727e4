import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import PushStore
import PushWorker
import PushAPI

// pushfleet command line. Exit codes: 0 ok, 1 refused / failed (stable code on stderr), 64 usage.

setvbuf(stdout, nil, _IOLBF, 0)
/// The arguments, each checked as UTF-8 (Swift's own decoding would turn invalid bytes into
/// U+FFFD, so two different user ids could become one); the index of the first invalid one.
let (argv, invalidArgument) = RawArguments.read()

/// Writes the error on stderr, as `error: CODE: message`, or with `--json` as the API's error
/// object, written by the API's own code (`APIError.body`): `{"error":{"code","message","field"
/// (null when none)[,"bytes_to_cut"]}}`, and exits with `status`.
func fail(_ code: String, _ message: String, field: String? = nil, bytesToCut: Int? = nil,
          exit status: Int32 = 1) -> Never {
    if argv.contains("--json") {
        let body = APIError(status: 0, code: code, message: message, field: field, bytesToCut: bytesToCut).body
        FileHandle.standardError.write(Data(body + Array("\n".utf8)))
    } else {
        FileHandle.standardError.write(Data("error: \(code): \(message)\n".utf8))
    }
    exit(status)
}

if let bad = invalidArgument {
    let option = bad > 0 && argv[bad - 1].hasPrefix("--") ? argv[bad - 1] : "argument \(bad + 1)"
    fail("VALIDATION_ERROR", "\(option): not valid UTF-8")
}

do {
    let args = try Arguments(argv)
    let out = Output(json: args.flag("json"))
    let words = args.positional
    if args.flag("version") && words.isEmpty {
        print("pushfleet: needs database schema version \(ReadinessGate.requiredSchemaVersion) or later (sql/)")
        exit(0)
    }
    guard let command = words.first else {
        print(Help.main)
        exit(args.flag("help") || args.flag("h") ? 0 : 64)
    }
    let sub = words.count > 1 ? words[1] : nil
    /// Options each command knows; anything else is a usage error.
    let known: [String: Set<String>] = [
        "migrate": ["sql-dir"],
        "worker": ["claim-limit", "batch-size", "lease-seconds", "poll-interval", "until-drained", "metrics-addr", "split-chunk", "split-pending"],
        "apps": ["account", "name", "require-encryption", "placeholder-title", "placeholder-body", "placeholder-title-loc-key",
                 "placeholder-body-loc-key", "content-mode", "app", "kind", "team-id", "key-id",
                 "topic", "p8-file", "service-account-file", "apns-base-url-production", "apns-base-url-sandbox",
                 "fcm-base-url", "fcm-token-uri", "subject", "account-sid", "api-key-sid", "auth-token-file",
                 "api-key-secret-file", "from", "messaging-service-sid", "twilio-base-url"],
        "devices": ["app", "mode", "platform", "token", "user", "apns-environment", "encryption-public-key", "remove-key", "endpoint", "p256dh", "auth", "allow-loopback-endpoints", "active"],
        "send": ["app", "mode", "user", "device", "title", "body", "data", "badge", "sound", "thread-id", "collapse-key", "priority", "send-at", "ttl", "idempotency-key", "sms-phone", "sms-text",
                 "push-type", "interruption-level", "relevance-score", "category", "target-content-id", "critical-sound",
                 "critical-volume", "title-loc-key", "title-loc-arg", "body-loc-key", "body-loc-arg", "channel-id",
                 "audience", "platform"],
        "notifications": ["user"],
        "stats": ["watch", "interval"],
        "jobs": ["state", "limit"],
        "webhooks": ["app", "mode", "url", "events", "endpoint", "event", "limit"],
        "keys": ["private-key", "envelope"], "envelope": ["private-key", "envelope"],
        "api": ["addr", "management-addr"],
        "accounts": ["name"],
        "api-keys": ["account", "mode", "permissions", "name", "rate-limit", "apps"],
        "audit": ["account", "app", "limit"],
        "usage": ["account", "app", "mode", "from", "to", "starting-after"],
        "users": ["app", "mode"],
    ]
    if let allowed = known[command] { try args.allowOnly(allowed) }
    switch command {
    case "help", "--help":
        print(Help.main)
    case "migrate":
        if args.flag("help") { print("Usage: pushfleet migrate [--sql-dir DIR]"); break }
        try Commands.migrate(args, out)
    case "worker":
        if args.flag("help") { print(Help.worker); break }
        try Commands.worker(args, out)
    case "apps":
        if sub == "credentials" { try Commands.credentials(args, out); break }
        if sub == "vapid" { try Commands.vapid(args, out); break }
        if args.flag("help") || sub == nil { print(Help.apps); break }
        try Commands.apps(sub!, args, out)
    case "devices":
        if args.flag("help") || sub == nil { print(Help.devices); break }
        try Commands.devices(sub!, args, out)
    case "send":
        if args.flag("help") { print(Help.send); break }
        try Commands.send(args, out)
    case "notifications":
        if args.flag("help") || sub == nil { print(Help.notifications); break }
        try Commands.notifications(sub!, args, out)
    case "stats":
        if args.flag("help") { print("Usage: pushfleet stats [--watch] [--interval S]"); break }
        try Commands.stats(args, out)
    case "ledger":
        if args.flag("help") || sub == nil { print(Commands.ledgerHelp); break }
        try Commands.ledger(sub!, args, out)
    case "webhooks":
        if args.flag("help") || sub == nil { print(Commands.webhooksHelp); break }
        try Commands.webhooks(sub!, args, out)
    case "jobs":
        if args.flag("help") || sub == nil { print(Help.jobs); break }
        try Commands.jobs(sub!, args, out)
    case "bench":
        if args.flag("help") || sub == nil { print(BenchCommands.usage); break }
        try BenchCommands.run(sub!, args, out)
    case "api":
        if args.flag("help") { print(Help.api); break }
        try Commands.api(args, out)
    case "accounts":
        if args.flag("help") || sub == nil { print(Help.accounts); break }
        try Commands.accounts(sub!, args, out)
    case "api-keys":
        if args.flag("help") || sub == nil { print(Help.apiKeys); break }
        try Commands.apiKeys(sub!, args, out)
    case "audit":
        if args.flag("help") { print(Commands.accessHelp); break }
        try Commands.audit(args, out)
    case "usage":
        if args.flag("help") { print(Commands.accessHelp); break }
        try Commands.usage(args, out)
    case "users":
        if args.flag("help") || sub == nil { print(Commands.accessHelp); break }
        try Commands.users(sub!, args, out)
    case "keys", "envelope":
        if args.flag("help") || sub == nil { print(Help.keys); break }
        try Commands.tooling(command, sub!, args, out)
    default:
        fail("USAGE", "unknown command \(command.prefix(40)); see pushfleet --help", exit: 64)
    }
} catch let e as CLIError {
    fail(e.code, e.message, exit: e.exitCode)
} catch let e as AcceptanceError {
    fail(e.code.rawValue, e.message, field: e.field, bytesToCut: e.bytesToCut)
} catch let e as PushError {
    fail(e.code.rawValue, e.message, field: e.field)
} catch let e as PGError {
    if let domain = Commands.domainError(e) { fail(domain.code.rawValue, domain.message, field: domain.field) }
    fail(e.code.rawValue, e.message)
} catch let e as MetricsServerError {
    fail(e.code, e.message)
} catch let e as APIConfigError {
    fail(e.code, e.message, exit: e.code == "USAGE" ? 64 : 1)
} catch let e as CryptoError {
    fail(e.code.rawValue, e.message)
} catch {
    fail("ERROR", String(describing: error))
}
