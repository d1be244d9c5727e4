import Foundation

/// A monotonically increasing counter (thread-safe).
public final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double = 0
    public init() {}
    public func increment(by n: Double = 1) { lock.withLock { value += n } }
    public var current: Double { lock.withLock { value } }
}

/// A value that goes up and down (thread-safe).
public final class Gauge: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double = 0
    public init() {}
    public func set(_ v: Double) { lock.withLock { value = v } }
    public func add(_ v: Double) { lock.withLock { value += v } }
    public var current: Double { lock.withLock { value } }
}

/// A Prometheus histogram with fixed upper bounds, in seconds (thread-safe).
public final class Histogram: @unchecked Sendable {
    public let bounds: [Double]
    private let lock = NSLock()
    private var counts: [UInt64]
    private var sum: Double = 0
    private var total: UInt64 = 0

    public init(bounds: [Double]) {
        self.bounds = bounds.sorted()
        counts = [UInt64](repeating: 0, count: bounds.count)
    }

    /// Records `count` observations of `value`.
    public func observe(_ value: Double, count: Int = 1) {
        lock.withLock {
            for (i, b) in bounds.enumerated() where value <= b { counts[i] += UInt64(count) }
            sum += value * Double(count)
            total += UInt64(count)
        }
    }

    /// (cumulative bucket counts, sum, count).
    public var snapshot: (buckets: [UInt64], sum: Double, count: UInt64) { lock.withLock { (counts, sum, total) } }
}

/// Counters keyed by label values (e.g. provider/status/error_code), thread-safe.
public final class LabeledCounter: @unchecked Sendable {
    public let labelNames: [String]
    private let lock = NSLock()
    private var values: [[String]: Double] = [:]

    public init(labelNames: [String]) { self.labelNames = labelNames }

    public func increment(_ labels: [String], by n: Double = 1) { lock.withLock { values[labels, default: 0] += n } }
    public var snapshot: [[String]: Double] { lock.withLock { values } }
    public func value(_ labels: [String]) -> Double { lock.withLock { values[labels] ?? 0 } }
}

/// Every metric a worker exports, by Prometheus conventions (units in names). The table in the
/// README lists them; `deploy/prometheus/alerts.yml` and the Grafana dashboard use these names.
public final class WorkerMetrics: @unchecked Sendable {
    public let jobsClaimed = Counter()
    public let deliveries = LabeledCounter(labelNames: ["provider", "status", "error_code"])
    public let refunds = Counter()
    public let retries = Counter()
    public let dbErrors = Counter()
    public let credentialsInvalid = LabeledCounter(labelNames: ["kind"])
    public let inflightRequests = Gauge()
    public let ready = Gauge()
    public let providerLatency = LabeledHistogram(labelName: "provider",
                                                  bounds: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
    public let sealLatency = Histogram(bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01])
    /// Queue gauges, refreshed from `push_queue_stats` by the worker loop.
    public let queueJobs = LabeledGauge(labelName: "state")
    public let queueDue = Gauge()
    public let queueOldestDueAge = Gauge()
    /// The SMS dispatcher's series (`SMSMetrics`).
    public let sms = SMSMetrics()
    /// The webhook dispatcher's series (`WebhookMetrics`).
    public let webhooks = WebhookMetrics()
    /// R-KIND-4: scopes this worker knows paused (1 each), pauses it started and ended, probes it
    /// sent and their results, deliveries it held back.
    public let providerPaused = LabeledGauge(labelName: "scope")
    public let providerPauses = LabeledCounter(labelNames: ["scope", "cause"])
    public let providerResumes = LabeledCounter(labelNames: ["scope", "cause"])
    public let providerProbes = LabeledCounter(labelNames: ["scope", "result"])
    public let deliveriesHeld = Counter()
    /// Pushes sent for apps with `confirm_deliveries` (R-IDS-4; the API counts the confirmed ones).
    public let pushesSent = ConfirmationMetrics.sent()

    public init() {}

    /// Records `count` seals whose mean duration was `seconds`.
    public func observeSeal(seconds: Double, count: Int) { sealLatency.observe(seconds, count: count) }

    /// The Prometheus text exposition (format 0.0.4).
    public func render() -> String {
        var out = ""
        func header(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func num(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
        }
        header("pushfleet_queue_jobs", "gauge", "Jobs in the queue by state.")
        for (state, v) in queueJobs.snapshot.sorted(by: { $0.key < $1.key }) {
            out += "pushfleet_queue_jobs{state=\"\(esc(state))\"} \(num(v))\n"
        }
        header("pushfleet_queue_due_jobs", "gauge", "Available jobs whose run time has come.")
        out += "pushfleet_queue_due_jobs \(num(queueDue.current))\n"
        header("pushfleet_queue_oldest_due_age_seconds", "gauge", "Age of the oldest due job.")
        out += "pushfleet_queue_oldest_due_age_seconds \(queueOldestDueAge.current)\n"
        header("pushfleet_jobs_claimed_total", "counter", "Jobs claimed by this worker.")
        out += "pushfleet_jobs_claimed_total \(num(jobsClaimed.current))\n"
        header("pushfleet_deliveries_total", "counter", "Delivery attempts recorded, by provider, status and error code.")
        for (labels, v) in deliveries.snapshot.sorted(by: { $0.key.joined() < $1.key.joined() }) {
            out += "pushfleet_deliveries_total{provider=\"\(esc(labels[0]))\",status=\"\(esc(labels[1]))\",error_code=\"\(esc(labels[2]))\"} \(num(v))\n"
        }
        header("pushfleet_refunds_total", "counter", "Refund ledger rows this worker caused.")
        out += "pushfleet_refunds_total \(num(refunds.current))\n"
        header("pushfleet_retries_total", "counter", "Deliveries scheduled for another attempt.")
        out += "pushfleet_retries_total \(num(retries.current))\n"
        header("pushfleet_db_errors_total", "counter", "Database errors seen by the worker loop.")
        out += "pushfleet_db_errors_total \(num(dbErrors.current))\n"
        header("pushfleet_credentials_invalid_total", "counter", "Credential sets marked invalid, by kind.")
        for (labels, v) in credentialsInvalid.snapshot.sorted(by: { $0.key.joined() < $1.key.joined() }) {
            out += "pushfleet_credentials_invalid_total{kind=\"\(esc(labels[0]))\"} \(num(v))\n"
        }
        header("pushfleet_inflight_requests", "gauge", "Provider requests in flight.")
        out += "pushfleet_inflight_requests \(num(inflightRequests.current))\n"
        header("pushfleet_ready", "gauge", "1 when connected to a writable database with a recent enough schema.")
        out += "pushfleet_ready \(num(ready.current))\n"
        header("pushfleet_provider_request_duration_seconds", "histogram", "Provider request latency.")
        for (label, h) in providerLatency.snapshot.sorted(by: { $0.key < $1.key }) {
            out += Self.histogramLines("pushfleet_provider_request_duration_seconds", h,
                                       labels: "provider=\"\(esc(label))\",")
        }
        header("pushfleet_seal_duration_seconds", "histogram", "Time to seal one envelope (HPKE).")
        out += Self.histogramLines("pushfleet_seal_duration_seconds", sealLatency, labels: "")
        header("pushfleet_provider_paused", "gauge", "1 per provider scope (host or FCM project) this worker knows paused, 0 once resumed (R-KIND-4).")
        for (scope, v) in providerPaused.snapshot.sorted(by: { $0.key < $1.key }) {
            out += "pushfleet_provider_paused{scope=\"\(esc(scope))\"} \(num(v))\n"
        }
        for (name, counter, second, help) in [
            ("pushfleet_provider_pauses_total", providerPauses, "cause", "Provider scopes this worker paused for the fleet, by cause."),
            ("pushfleet_provider_resumes_total", providerResumes, "cause", "Provider pauses this worker ended (probe answered or quota time over)."),
            ("pushfleet_provider_probes_total", providerProbes, "result", "Probes this worker sent to paused scopes, by result (sent, resumed, failed)."),
        ] {
            header(name, "counter", help)
            for (labels, v) in counter.snapshot.sorted(by: { $0.key.joined() < $1.key.joined() }) {
                out += "\(name){scope=\"\(esc(labels[0]))\",\(second)=\"\(esc(labels[1]))\"} \(num(v))\n"
            }
        }
        header("pushfleet_deliveries_held_total", "counter", "Deliveries deferred without an attempt because their provider scope was paused.")
        out += "pushfleet_deliveries_held_total \(num(deliveriesHeld.current))\n"
        out += pushesSent.render()
        out += sms.render()
        out += webhooks.render()
        return out
    }

    /// The `_bucket`, `_sum` and `_count` lines of histogram `name`; `labels` is `k="v",` text put
    /// before `le` (empty for none).
    public static func histogramLines(_ name: String, _ h: Histogram, labels: String) -> String {
        let s = h.snapshot
        var out = ""
        for (i, b) in h.bounds.enumerated() { out += "\(name)_bucket{\(labels)le=\"\(b)\"} \(s.buckets[i])\n" }
        out += "\(name)_bucket{\(labels)le=\"+Inf\"} \(s.count)\n"
        let l = labels.isEmpty ? "" : "{\(labels.dropLast())}"
        out += "\(name)_sum\(l) \(s.sum)\n\(name)_count\(l) \(s.count)\n"
        return out
    }
}

/// Gauges keyed by one label value.
public final class LabeledGauge: @unchecked Sendable {
    public let labelName: String
    private let lock = NSLock()
    private var values: [String: Double] = [:]
    public init(labelName: String) { self.labelName = labelName }
    public func set(_ label: String, _ v: Double) { lock.withLock { values[label] = v } }
    /// Replaces every series at once (labels not in `all` disappear).
    public func replaceAll(_ all: [String: Double]) { lock.withLock { values = all } }
    public var snapshot: [String: Double] { lock.withLock { values } }
}

/// Histograms keyed by one label value.
public final class LabeledHistogram: @unchecked Sendable {
    public let labelName: String
    public let bounds: [Double]
    private let lock = NSLock()
    private var values: [String: Histogram] = [:]
    public init(labelName: String, bounds: [Double]) {
        self.labelName = labelName
        self.bounds = bounds
    }
    public func observe(_ label: String, _ v: Double) {
        let h = lock.withLock { () -> Histogram in
            if let h = values[label] { return h }
            let h = Histogram(bounds: bounds)
            values[label] = h
            return h
        }
        h.observe(v)
    }
    public var snapshot: [String: Histogram] { lock.withLock { values } }
}
