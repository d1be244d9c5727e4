import Foundation
import PushCore

/// The webhook dispatcher's metrics (issue 19), rendered with the worker's (`WorkerMetrics`):
///
/// | metric | type | labels | what |
/// |---|---|---|---|
/// | `pushfleet_webhook_attempts_total` | counter | `type`, `result` (`delivered`, `retry`, `failed`) | attempts recorded by this worker |
/// | `pushfleet_webhook_deliveries_total` | counter | `type`, `result` (`delivered`, `failed`) | deliveries that ended |
/// | `pushfleet_webhook_request_duration_seconds` | histogram | | attempt duration, DNS included |
/// | `pushfleet_webhook_inflight_requests` | gauge | | attempts under way in this worker |
/// | `pushfleet_webhook_endpoints_disabled_total` | counter | `reason` (`ENDPOINT_GONE`, `FAILING`) | endpoints this worker disabled |
/// | `pushfleet_webhook_endpoints_disabled` | gauge | `reason` | disabled endpoints in the database |
/// | `pushfleet_webhook_oldest_pending_age_seconds` | gauge | `endpoint` | age of each endpoint's oldest undelivered event (the 20 oldest) |
///
/// The two database gauges are the same on every worker (take `max()` across workers).
public final class WebhookMetrics: @unchecked Sendable {
    public let attempts = LabeledCounter(labelNames: ["type", "result"])
    public let deliveries = LabeledCounter(labelNames: ["type", "result"])
    public let requestDuration = Histogram(bounds: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
    public let inflight = Gauge()
    public let disabledTotal = LabeledCounter(labelNames: ["reason"])
    public let endpointsDisabled = LabeledGauge(labelName: "reason")
    public let oldestPendingAge = LabeledGauge(labelName: "endpoint")

    public init() {
        // Series that alerts watch with increase() exist from 0.
        for reason in [WebhookDisableReason.endpointGone, .failing] { disabledTotal.increment([reason.rawValue], by: 0) }
        for reason in WebhookDisableReason.allCases { endpointsDisabled.set(reason.rawValue, 0) }
    }

    /// The Prometheus text of these metrics.
    public func render() -> String {
        var out = ""
        func header(_ name: String, _ type: String, _ help: String) { out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n" }
        func num(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
        }
        func pairs(_ c: LabeledCounter, _ name: String) {
            for (labels, v) in c.snapshot.sorted(by: { $0.key.joined(separator: "\u{1}") < $1.key.joined(separator: "\u{1}") }) {
                let l = zip(c.labelNames, labels).map { "\($0)=\"\(esc($1))\"" }.joined(separator: ",")
                out += "\(name){\(l)} \(num(v))\n"
            }
        }
        header("pushfleet_webhook_attempts_total", "counter", "Webhook attempts recorded, by event type and result.")
        pairs(attempts, "pushfleet_webhook_attempts_total")
        header("pushfleet_webhook_deliveries_total", "counter", "Webhook deliveries that ended, by event type and result.")
        pairs(deliveries, "pushfleet_webhook_deliveries_total")
        header("pushfleet_webhook_request_duration_seconds", "histogram", "Webhook attempt duration (DNS included).")
        out += WorkerMetrics.histogramLines("pushfleet_webhook_request_duration_seconds", requestDuration, labels: "")
        header("pushfleet_webhook_inflight_requests", "gauge", "Webhook attempts under way in this worker.")
        out += "pushfleet_webhook_inflight_requests \(num(inflight.current))\n"
        header("pushfleet_webhook_endpoints_disabled_total", "counter", "Webhook endpoints this worker disabled, by reason.")
        pairs(disabledTotal, "pushfleet_webhook_endpoints_disabled_total")
        header("pushfleet_webhook_endpoints_disabled", "gauge", "Disabled webhook endpoints in the database, by reason.")
        for (reason, v) in endpointsDisabled.snapshot.sorted(by: { $0.key < $1.key }) {
            out += "pushfleet_webhook_endpoints_disabled{reason=\"\(esc(reason))\"} \(num(v))\n"
        }
        header("pushfleet_webhook_oldest_pending_age_seconds", "gauge",
               "Age of the oldest undelivered webhook event, per endpoint (the 20 oldest).")
        for (endpoint, v) in oldestPendingAge.snapshot.sorted(by: { $0.key < $1.key }) {
            out += "pushfleet_webhook_oldest_pending_age_seconds{endpoint=\"\(esc(endpoint))\"} \(v)\n"
        }
        return out
    }
}
