import Foundation
import PushStore
import PushWorker

/// What the API exports on its management address (`/metrics`, Prometheus text format 0.0.4).
/// The README's metric table lists them; `deploy/prometheus/alerts.yml` and the dashboard use them.
public final class APIMetrics: @unchecked Sendable {
    /// Requests by route template, method and status.
    public let requests = LabeledCounter(labelNames: ["route", "method", "status"])
    /// Latency by route template (request line to last byte handed to the kernel).
    public let latency = LabeledHistogram(labelName: "route",
                                          bounds: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
    /// Requests refused with 429.
    public let rateLimited = Counter()
    /// Database errors answered 503 or 500.
    public let dbErrors = Counter()
    /// 1 when the database is reachable with a recent enough schema and the server is not draining.
    public let ready = Gauge()
    /// Deliveries confirmed by a first preview fetch or receipt (R-IDS-4); the workers count the sent ones.
    public let pushesConfirmed = ConfirmationMetrics.confirmed()
    /// Preview fetches and receipts refused by their rate limits, by which limit (token, address, overall).
    public let previewLimited = LabeledCounter(labelNames: ["limit"])
    private let lock = NSLock()
    private var sources: (() -> PGPool.Stats?, () -> (connections: Int, inFlight: Int, deadlineClosures: Int)?) = ({ nil }, { nil })

    /// Metrics with no data yet.
    public init() {}

    /// Where the pool and server gauges are read at render time.
    func bind(pool: @escaping () -> PGPool.Stats?, server: @escaping () -> (connections: Int, inFlight: Int, deadlineClosures: Int)?) {
        lock.withLock { sources = (pool, server) }
    }

    /// Records one finished request.
    func observe(route: String, method: String, status: Int, seconds: Double) {
        requests.increment([route, method, String(status)])
        latency.observe(route, seconds)
    }

    /// The text exposition.
    public func render() -> String {
        var out = ""
        func header(_ name: String, _ type: String, _ help: String) { out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n" }
        func num(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }
        header("pushfleet_api_requests_total", "counter", "API requests answered, by route template, method and status.")
        for (labels, v) in requests.snapshot.sorted(by: { $0.key.joined(separator: " ") < $1.key.joined(separator: " ") }) {
            out += "pushfleet_api_requests_total{route=\"\(labels[0])\",method=\"\(labels[1])\",status=\"\(labels[2])\"} \(num(v))\n"
        }
        header("pushfleet_api_request_duration_seconds", "histogram", "API request latency by route template.")
        for (route, h) in latency.snapshot.sorted(by: { $0.key < $1.key }) {
            out += WorkerMetrics.histogramLines("pushfleet_api_request_duration_seconds", h, labels: "route=\"\(route)\",")
        }
        header("pushfleet_api_rate_limited_total", "counter", "API requests refused with 429.")
        out += "pushfleet_api_rate_limited_total \(num(rateLimited.current))\n"
        header("pushfleet_api_db_errors_total", "counter", "API requests that met a database error (503 or 500).")
        out += "pushfleet_api_db_errors_total \(num(dbErrors.current))\n"
        let (poolSource, serverSource) = lock.withLock { sources }
        let pool = poolSource()
        header("pushfleet_api_db_pool_connections", "gauge", "Database sessions of the API's pool, by state.")
        out += "pushfleet_api_db_pool_connections{state=\"in_use\"} \(pool?.inUse ?? 0)\n"
        out += "pushfleet_api_db_pool_connections{state=\"idle\"} \(max(0, (pool?.open ?? 0) - (pool?.inUse ?? 0)))\n"
        header("pushfleet_api_db_pool_max_connections", "gauge", "The pool's bound.")
        out += "pushfleet_api_db_pool_max_connections \(pool?.max ?? 0)\n"
        header("pushfleet_api_db_pool_waiting", "gauge", "Requests waiting for a database session.")
        out += "pushfleet_api_db_pool_waiting \(pool?.waiting ?? 0)\n"
        let server = serverSource()
        header("pushfleet_api_connections", "gauge", "Open client connections.")
        out += "pushfleet_api_connections \(server?.connections ?? 0)\n"
        header("pushfleet_api_inflight_requests", "gauge", "Requests between their request line and their answer.")
        out += "pushfleet_api_inflight_requests \(server?.inFlight ?? 0)\n"
        header("pushfleet_api_deadline_closed_total", "counter", "Connections closed because a request missed its absolute deadline.")
        out += "pushfleet_api_deadline_closed_total \(server?.deadlineClosures ?? 0)\n"
        out += pushesConfirmed.render()
        header("pushfleet_api_preview_rate_limited_total", "counter", "Preview fetches and receipts refused with 429, by limit.")
        for (labels, v) in previewLimited.snapshot.sorted(by: { $0.key.joined() < $1.key.joined() }) {
            out += "pushfleet_api_preview_rate_limited_total{limit=\"\(labels[0])\"} \(num(v))\n"
        }
        header("pushfleet_api_ready", "gauge", "1 when the database is reachable with a recent enough schema and the server is not draining.")
        out += "pushfleet_api_ready \(num(ready.current))\n"
        return out
    }
}
