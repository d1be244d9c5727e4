import Foundation
import PushCore
import PushProviders

/// The confirmation rate's two series (issue 24 part 5, R-IDS-4), by app, mode and platform:
/// `pushfleet_pushes_sent_total` (a worker: deliveries its providers accepted, for apps with
/// `confirm_deliveries`) and `pushfleet_pushes_confirmed_total` (the API: first preview fetches
/// and receipts). Prometheus sums them over the fleet, so the rate is one division:
///
///     sum by (app_id, mode, platform) (rate(pushfleet_pushes_confirmed_total[1h]))
///       / sum by (app_id, mode, platform) (rate(pushfleet_pushes_sent_total[1h]))
///
/// Bounded cardinality: `platform` is a platform of the provider table the process serves
/// (`serve`; the standard table's until told) or `other`, `mode` `test` or `live`,
/// and at most `maxApps` app ids get a series of their own per process (only opted-in apps are
/// counted at all); later ones share `app_id="other"`.
public final class ConfirmationMetrics: @unchecked Sendable {
    /// App ids with their own series, per process.
    public static let maxApps = 200
    /// Label value of the apps past `maxApps`, and of a platform this release does not know.
    public static let other = "other"

    private let lock = NSLock()
    private var apps: Set<String> = []
    private var platforms: Set<String> = Set(ProviderTable.standard.platforms.map(\.rawValue))
    /// Sent (worker) or confirmed (API) pushes by [app_id, mode, platform].
    public let counts = LabeledCounter(labelNames: ["app_id", "mode", "platform"])
    /// The series name: `pushfleet_pushes_sent_total` or `pushfleet_pushes_confirmed_total`.
    public let name: String
    let help: String

    /// The sent series (a worker's).
    public static func sent() -> ConfirmationMetrics {
        ConfirmationMetrics(name: "pushfleet_pushes_sent_total",
                            help: "Pushes providers accepted for apps with confirm_deliveries, by app, mode and platform.")
    }

    /// The confirmed series (the API's).
    public static func confirmed() -> ConfirmationMetrics {
        ConfirmationMetrics(name: "pushfleet_pushes_confirmed_total",
                            help: "Deliveries confirmed by their device's first preview fetch or receipt, by app, mode and platform.")
    }

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// Labels `platforms` (the process's provider table's) by name from now on; any other `other`.
    public func serve(_ platforms: Set<Platform>) {
        lock.withLock { self.platforms = Set(platforms.map(\.rawValue)) }
    }

    /// Counts `n` pushes of app `appID` (its `papp_` text) in `mode` on `platform`.
    public func add(app appID: String, mode: String, platform: String, _ n: Double = 1) {
        let (app, known) = lock.withLock { () -> (String, Bool) in
            let known = platforms.contains(platform)
            if apps.contains(appID) { return (appID, known) }
            guard apps.count < Self.maxApps else { return (Self.other, known) }
            apps.insert(appID)
            return (appID, known)
        }
        let shownMode = mode == "test" || mode == "live" ? mode : Self.other
        let shownPlatform = known ? platform : Self.other
        counts.increment([app, shownMode, shownPlatform], by: n)
    }

    /// The series' exposition lines (format 0.0.4), header included.
    public func render() -> String {
        var out = "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        for (labels, v) in counts.snapshot.sorted(by: { $0.key.joined(separator: " ") < $1.key.joined(separator: " ") }) {
            out += "\(name){app_id=\"\(labels[0])\",mode=\"\(labels[1])\",platform=\"\(labels[2])\"} \(Int64(v))\n"
        }
        return out
    }
}
