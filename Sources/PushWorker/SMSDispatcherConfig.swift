import Foundation
import PushCore

/// The SMS dispatcher's settings (R-SMS-1); every field has a production default.
public struct SMSDispatcherConfig: Sendable {
    /// This dispatcher's name in leases (the worker's owner).
    public var owner: String
    /// SMS claimed per round trip (default 16).
    public var claimBatch: Int = 16
    /// SMS of one app in flight at once across the fleet (default 4): one app's slow provider holds
    /// its own slots, not the others'.
    public var perApp: Int = 4
    /// Lease of a claimed SMS, seconds (default 60: well beyond a request's deadline, so a lease
    /// expires only when its worker is gone; it then becomes `unknown` if it was being sent).
    public var leaseSeconds: Double = 60
    /// Longest sleep between claims when idle, seconds (default 1; NOTIFY `pushfleet_sms` wakes sooner).
    public var pollInterval: Double = 1
    /// How often expired leases are rescued, seconds (default 5).
    public var rescueInterval: Double = 5
    /// A provider request's deadline, milliseconds (default 10,000).
    public var requestTimeoutMillis: Int = 10_000
    /// Backoff of retries (connection refused before anything was written; 429 / 503 without a delay).
    public var retry: RetryPolicy = .default
    /// CA bundle for the providers' TLS (`PUSHFLEET_PROVIDER_CA_FILE`); nil = the system store.
    public var caFile: String?

    /// Defaults for `owner`.
    public init(owner: String) { self.owner = owner }

    /// The settings `pushfleet worker` uses, or nil when `PUSHFLEET_SMS=off`:
    /// `PUSHFLEET_SMS_LEASE_SECONDS` (1 to 3600), `PUSHFLEET_SMS_POLL_INTERVAL` (0.01 to 60),
    /// `PUSHFLEET_SMS_RESCUE_INTERVAL` (0.1 to 3600),
    /// `PUSHFLEET_SMS_PER_APP` (1 to 1000), `PUSHFLEET_SMS_REQUEST_TIMEOUT_MS` (100 to 120000),
    /// `PUSHFLEET_PROVIDER_CA_FILE`.
    /// - Throws: `VALIDATION_ERROR` naming the variable for a value out of range.
    public static func fromEnvironment(_ env: [String: String], owner: String) throws -> SMSDispatcherConfig? {
        if env["PUSHFLEET_SMS"] == "off" { return nil }
        var c = SMSDispatcherConfig(owner: owner)
        func number(_ name: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let text = env[name], !text.isEmpty else { return nil }
            guard let v = Double(text), v.isFinite, range.contains(v) else {
                throw PushError(.validationError, "\(name) must be a number from \(range.lowerBound) to \(range.upperBound), got \(text.prefix(40))")
            }
            return v
        }
        if let v = try number("PUSHFLEET_SMS_LEASE_SECONDS", 1...3_600) { c.leaseSeconds = v }
        if let v = try number("PUSHFLEET_SMS_POLL_INTERVAL", 0.01...60) { c.pollInterval = v }
        if let v = try number("PUSHFLEET_SMS_RESCUE_INTERVAL", 0.1...3_600) { c.rescueInterval = v }
        if let v = try number("PUSHFLEET_SMS_PER_APP", 1...1_000) { c.perApp = Int(v) }
        if let v = try number("PUSHFLEET_SMS_REQUEST_TIMEOUT_MS", 100...120_000) { c.requestTimeoutMillis = Int(v) }
        c.caFile = env["PUSHFLEET_PROVIDER_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        return c
    }
}

/// The SMS dispatcher's metrics, rendered with the worker's (`WorkerMetrics`):
///
/// | metric | type | labels | what |
/// |---|---|---|---|
/// | `pushfleet_sms_total` | counter | `provider`, `status` (`queued`, `failed`, `unknown`), `error_code` | SMS that ended in this worker |
/// | `pushfleet_sms_retries_total` | counter | | SMS attempts to be made again (nothing written, 429, 503) |
/// | `pushfleet_sms_request_duration_seconds` | histogram | | provider request duration |
///
/// `unknown` is alerted on (`PushfleetSMSOutcomeUnknown`): such an SMS may have been sent and is
/// not sent again; an operator looks it up with the provider.
public final class SMSMetrics: @unchecked Sendable {
    public let finished = LabeledCounter(labelNames: ["provider", "status", "error_code"])
    public let retries = Counter()
    public let requestDuration = Histogram(bounds: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])

    public init() {
        // The alert's series exists from 0.
        for provider in ["twilio", "simulator"] { finished.increment([provider, SMSStatus.unknown.rawValue, ""], by: 0) }
    }

    /// The Prometheus text of these metrics.
    public func render() -> String {
        var out = "# HELP pushfleet_sms_total SMS fallbacks that ended in this worker, by provider, status and error code.\n"
        out += "# TYPE pushfleet_sms_total counter\n"
        for (labels, v) in finished.snapshot.sorted(by: { $0.key.joined(separator: "\u{1}") < $1.key.joined(separator: "\u{1}") }) {
            out += "pushfleet_sms_total{provider=\"\(labels[0])\",status=\"\(labels[1])\",error_code=\"\(labels[2])\"} \(Int64(v))\n"
        }
        out += "# HELP pushfleet_sms_retries_total SMS attempts to be made again (nothing written, 429, 503).\n"
        out += "# TYPE pushfleet_sms_retries_total counter\npushfleet_sms_retries_total \(Int64(retries.current))\n"
        out += "# HELP pushfleet_sms_request_duration_seconds SMS provider request duration.\n"
        out += "# TYPE pushfleet_sms_request_duration_seconds histogram\n"
        out += WorkerMetrics.histogramLines("pushfleet_sms_request_duration_seconds", requestDuration, labels: "")
        return out
    }
}
