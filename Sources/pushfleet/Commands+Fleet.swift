import Foundation
import PushStore
import PushWorker
import PushCore

/// The worker's fleet options: the operators' HTTP endpoint and the simulator's delivery log.
extension Commands {
    /// Environment variable: when set, every push the simulator accepts is appended to this file
    /// (`SimulatorLogRouter`), so a fleet test counts the provider side independently.
    static let simulatorLogVariable = "PUSHFLEET_SIMULATOR_LOG"

    /// `--metrics-addr HOST:PORT` or `$PUSHFLEET_METRICS_ADDR` (default 0.0.0.0:9464; `off` disables).
    /// An address given explicitly must be bound; the default one, when taken (several workers on
    /// one host, e.g. scripts/demo), is skipped with a `metrics.unavailable` warning.
    /// - Throws: `MetricsServerError` (`METRICS_ADDR`, `METRICS_START`).
    static func startMetricsServer(_ args: Arguments, _ env: [String: String], metrics: WorkerMetrics) throws -> MetricsServer? {
        let explicit = args.value("metrics-addr") ?? env[MetricsAddress.environmentVariable]
        guard let address = try MetricsAddress.parse(explicit ?? MetricsAddress.defaultText) else { return nil }
        let server: MetricsServer
        do {
            server = try MetricsServer.start(address: address, metrics: metrics)
        } catch let e as MetricsServerError where explicit == nil {
            Log.shared.warn("metrics.unavailable", ["error": e.description, "hint": "set --metrics-addr or PUSHFLEET_METRICS_ADDR"])
            return nil
        }
        Log.shared.info("metrics.listen", ["port": Int(server.port), "loopback_only": address.loopbackOnly])
        return server
    }

    /// The SMS dispatcher for `pushfleet worker` (`SMSDispatcherConfig.fromEnvironment`), or nil when
    /// `PUSHFLEET_SMS=off`. Without `PUSHFLEET_CREDENTIALS_KEY`, live SMS fail `CREDENTIALS_INVALID`
    /// (no set can be opened); test mode needs no key.
    /// - Throws: `CLIError.usage` for a setting out of range or a malformed key.
    static func smsDispatcher(_ env: [String: String], owner: String, databaseURL: String,
                              metrics: WorkerMetrics) throws -> SMSDispatcher? {
        do {
            guard let config = try SMSDispatcherConfig.fromEnvironment(env, owner: owner) else { return nil }
            let keys = env[CredentialKeys.currentVariable]?.isEmpty == false ? try CredentialKeys.fromEnvironment(env) : nil
            return SMSDispatcher(config: config, databaseURL: databaseURL, keys: keys, metrics: metrics.sms)
        } catch let e as PushError {
            throw CLIError.usage(e.message)
        }
    }

    /// The webhook dispatcher for `pushfleet worker` (`WebhookDispatcherConfig.fromEnvironment`), or
    /// nil when `PUSHFLEET_WEBHOOKS=off` or when `PUSHFLEET_CREDENTIALS_KEY` is not set (endpoint
    /// secrets cannot be opened without it: deliveries wait, and `webhook.dispatcher.off` says why).
    /// - Throws: `CLIError.usage` for a setting out of range or a malformed key.
    static func webhookDispatcher(_ env: [String: String], owner: String, databaseURL: String,
                                  metrics: WorkerMetrics) throws -> WebhookDispatcher? {
        let config: WebhookDispatcherConfig?
        do {
            config = try WebhookDispatcherConfig.fromEnvironment(env, owner: owner)
        } catch let e as PushError {
            throw CLIError.usage(e.message)
        }
        guard let config else { return nil }
        guard env[CredentialKeys.currentVariable]?.isEmpty == false else {
            Log.shared.warn("webhook.dispatcher.off", ["reason": "\(CredentialKeys.currentVariable) is not set",
                                                      "effect": "webhook deliveries wait until a worker has the key"])
            return nil
        }
        let keys: CredentialKeys
        do {
            keys = try CredentialKeys.fromEnvironment(env)
        } catch let e as PushError {
            throw CLIError.usage(e.message)
        }
        return try WebhookDispatcher(config: config, databaseURL: databaseURL, keys: keys, metrics: metrics.webhooks)
    }

    /// Wraps `router` in a `SimulatorLogRouter` when `$PUSHFLEET_SIMULATOR_LOG` names a file.
    /// - Throws: `SimulatorLogError` when the file cannot be opened for appending.
    static func fleetRouter(_ router: ProviderRouter, _ env: [String: String]) throws -> ProviderRouter {
        guard let path = env[simulatorLogVariable], !path.isEmpty else { return router }
        return SimulatorLogRouter(inner: router, log: try AppendOnlyFile.open(path: path))
    }
}
