import Foundation
import PushCore
import PushStore

/// The webhook dispatcher's settings (issue 19), with production defaults.
public struct WebhookDispatcherConfig: Sendable {
    /// This worker's name in leases.
    public var owner: String
    /// Attempts of one endpoint under way at once across the fleet (default 8): a slow or dead
    /// endpoint holds at most this many, whatever its backlog (R-HOOK-2).
    public var perEndpoint: Int = 8
    /// Attempts under way in this worker at once (default 128).
    public var maxInFlight: Int = 128
    /// Rows claimed per round trip at most (default 64).
    public var claimBatch: Int = 64
    /// Lease of a claimed delivery, seconds (default 60: more than a DNS lookup and a request of
    /// 10 s each). A delivery whose worker dies goes out again once its lease expires.
    public var leaseSeconds: Double = 60
    /// Longest idle wait between claims, seconds (default 1); NOTIFY wakes the dispatcher sooner.
    public var pollInterval: Double = 1
    /// How often expired leases are rescued, seconds (default 5).
    public var rescueInterval: Double = 5
    /// How often the database gauges are refreshed, seconds (default 15).
    public var statsInterval: Double = 15
    /// The retry schedule (R-HOOK-2; `WebhookRetryPolicy.default`).
    public var retry: WebhookRetryPolicy = .default
    /// Admit loopback endpoints (and http to them in test mode): local testing only.
    public var allowLoopback: Bool = false
    /// Trusted CAs for https endpoints (nil: the system store). For local fakes.
    public var caFile: String?
    /// Longest wait for a host name's addresses, seconds (default 10).
    public var lookupTimeout: Double = 10
    /// How long a host's checked addresses are reused, seconds (default 5).
    public var lookupCacheSeconds: Double = 5

    /// Defaults for `owner`.
    public init(owner: String) { self.owner = owner }

    /// The environment variables `fromEnvironment` reads.
    public static let environmentKeys = ["PUSHFLEET_WEBHOOKS", "PUSHFLEET_WEBHOOKS_PER_ENDPOINT",
                                         "PUSHFLEET_WEBHOOKS_MAX_IN_FLIGHT", "PUSHFLEET_WEBHOOKS_LEASE_SECONDS",
                                         WebhookEndpointStore.allowLoopbackVariable, "PUSHFLEET_WEBHOOKS_CA_FILE"]

    /// Reads `PUSHFLEET_WEBHOOKS` (`off` disables the dispatcher: nil), `PUSHFLEET_WEBHOOKS_PER_ENDPOINT`
    /// (1...64), `PUSHFLEET_WEBHOOKS_MAX_IN_FLIGHT` (1...4096), `PUSHFLEET_WEBHOOKS_LEASE_SECONDS`
    /// (5...3600), `PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK` (`1`) and `PUSHFLEET_WEBHOOKS_CA_FILE`.
    /// - Throws: `PushError` `VALIDATION_ERROR` naming the variable whose value is out of range
    ///   (a setting is never ignored).
    public static func fromEnvironment(_ env: [String: String], owner: String) throws -> WebhookDispatcherConfig? {
        switch env["PUSHFLEET_WEBHOOKS"] {
        case nil, "on": break
        case "off": return nil
        case let other?: throw PushError(.validationError, "PUSHFLEET_WEBHOOKS must be on or off, got \(other.prefix(40))")
        }
        var c = WebhookDispatcherConfig(owner: owner)
        func number(_ key: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let text = env[key] else { return nil }
            guard let v = Double(text), v.isFinite, range.contains(v) else {
                throw PushError(.validationError, "\(key) must be a number from \(range.lowerBound) to \(range.upperBound), got \(text.prefix(40))")
            }
            return v
        }
        if let v = try number("PUSHFLEET_WEBHOOKS_PER_ENDPOINT", 1...64) { c.perEndpoint = Int(v) }
        if let v = try number("PUSHFLEET_WEBHOOKS_MAX_IN_FLIGHT", 1...4096) { c.maxInFlight = Int(v) }
        if let v = try number("PUSHFLEET_WEBHOOKS_LEASE_SECONDS", 5...3600) { c.leaseSeconds = v }
        c.allowLoopback = WebhookEndpointStore.allowLoopback(env)
        if let ca = env["PUSHFLEET_WEBHOOKS_CA_FILE"], !ca.isEmpty { c.caFile = ca }
        return c
    }
}
