import Foundation
import PushWorker

/// The worker's fleet options: the operators' HTTP endpoint and the simulator's delivery log.
extension Commands {
    /// Environment variable: when set, every push the simulator accepts is appended to this file
    /// (`SimulatorLogRouter`), so a fleet test counts the provider side independently.
    static let simulatorLogVariable = "PUSHFLEET_SIMULATOR_LOG"

    /// `--metrics-addr HOST:PORT` or `$PUSHFLEET_METRICS_ADDR` (default 0.0.0.0:9464; `off` disables).
    /// - Throws: `MetricsServerError` (`METRICS_ADDR`, `METRICS_START`).
    static func startMetricsServer(_ args: Arguments, _ env: [String: String], metrics: WorkerMetrics) throws -> MetricsServer? {
        let text = args.value("metrics-addr") ?? env[MetricsAddress.environmentVariable] ?? MetricsAddress.defaultText
        guard let address = try MetricsAddress.parse(text) else { return nil }
        let server = try MetricsServer.start(address: address, metrics: metrics)
        Log.shared.info("metrics.listen", ["port": Int(server.port), "loopback_only": address.loopbackOnly])
        return server
    }

    /// Wraps `router` in a `SimulatorLogRouter` when `$PUSHFLEET_SIMULATOR_LOG` names a file.
    /// - Throws: `SimulatorLogError` when the file cannot be opened for appending.
    static func fleetRouter(_ router: ProviderRouter, _ env: [String: String]) throws -> ProviderRouter {
        guard let path = env[simulatorLogVariable], !path.isEmpty else { return router }
        return SimulatorLogRouter(inner: router, log: try AppendOnlyFile.open(path: path))
    }
}
