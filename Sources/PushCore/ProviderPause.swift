import struct Foundation.Date
import typealias Foundation.TimeInterval

/// R-KIND-4: a provider host failing as a whole, or a provider-wide 429, pauses sending to it
/// fleet-wide. This file holds the shared state of one pause (`ProviderPause`, stored in
/// `push_provider_pauses` and read by every worker) and the pure decisions about it
/// (`PauseRules`): whether a delivery to a paused scope is held, sent as the probe or sent; when
/// the next probe is due; when sending resumes. No I/O and no clock: `now` is a parameter, so the
/// rules are tested with a fake clock. PostgreSQL only shares the state (compare-and-set on
/// `version`); it decides nothing.
///
/// Thresholds (the defaults of `OutageThresholds`, product decisions):
///
/// | what | default |
/// |---|---|
/// | consecutive connection failures or timeouts of a host (refused, reset, TLS, no answer) | 3 |
/// | or, within a 10 s window, at least 20 requests of which 90 % failed (5xx, connection, timeout) | 20 / 0.9 / 10 s |
/// | FCM 429 `QUOTA_EXCEEDED` from distinct devices of one project within 10 s | 3 |
/// | first probe interval, doubling after each failed probe, up to | 1 s → 60 s |
/// | a probe in flight longer than this is given up (its worker died) | 30 s |
/// | a quota pause without `Retry-After` lasts | 60 s |
public struct OutageThresholds: Sendable, Hashable {
    /// Consecutive connection failures or timeouts that pause a host.
    public var consecutiveFailures: Int
    /// The failure-ratio window, seconds.
    public var windowSeconds: TimeInterval
    /// Requests within the window below which the ratio is not judged.
    public var windowMinimumRequests: Int
    /// Share of failed requests within the window that pauses a host (0...1).
    public var windowFailureRatio: Double
    /// Distinct devices answered 429 `QUOTA_EXCEEDED` within `windowSeconds` that pause a project.
    public var quotaDistinctDevices: Int
    /// First probe interval, seconds.
    public var initialProbeInterval: TimeInterval
    /// Largest probe interval, seconds.
    public var maxProbeInterval: TimeInterval
    /// How long a probe may stay in flight before another worker may take the next one, seconds
    /// (longer than a provider request's deadline).
    public var probeLeaseSeconds: TimeInterval
    /// A quota pause's length when the 429 gave no `Retry-After`, seconds.
    public var quotaDefaultPause: TimeInterval
    /// Held deliveries come back this long after the next probe is due, seconds, so that the
    /// probe's answer (a resume) is known when they do.
    public var holdSlack: TimeInterval

    /// The product defaults (see the table above).
    public static let `default` = OutageThresholds(
        consecutiveFailures: 3, windowSeconds: 10, windowMinimumRequests: 20, windowFailureRatio: 0.9,
        quotaDistinctDevices: 3, initialProbeInterval: 1, maxProbeInterval: 60, probeLeaseSeconds: 30,
        quotaDefaultPause: 60, holdSlack: 0.5)

    /// Makes thresholds, clamped to sane minimums (counts ≥ 1, intervals > 0, max ≥ initial).
    public init(consecutiveFailures: Int, windowSeconds: TimeInterval, windowMinimumRequests: Int,
                windowFailureRatio: Double, quotaDistinctDevices: Int, initialProbeInterval: TimeInterval,
                maxProbeInterval: TimeInterval, probeLeaseSeconds: TimeInterval, quotaDefaultPause: TimeInterval,
                holdSlack: TimeInterval) {
        self.consecutiveFailures = max(1, consecutiveFailures)
        self.windowSeconds = max(0.001, windowSeconds)
        self.windowMinimumRequests = max(1, windowMinimumRequests)
        self.windowFailureRatio = min(max(windowFailureRatio, 0), 1)
        self.quotaDistinctDevices = max(1, quotaDistinctDevices)
        self.initialProbeInterval = max(0.001, initialProbeInterval)
        self.maxProbeInterval = max(self.initialProbeInterval, maxProbeInterval)
        self.probeLeaseSeconds = max(0.001, probeLeaseSeconds)
        self.quotaDefaultPause = max(0.001, quotaDefaultPause)
        self.holdSlack = max(0, holdSlack)
    }

    /// Every duration multiplied by `factor` (counts and ratio unchanged): the compressed clock of
    /// the outage tests (1/50: a 5-minute outage in 6 s).
    public func scaled(by factor: Double) -> OutageThresholds {
        OutageThresholds(consecutiveFailures: consecutiveFailures, windowSeconds: windowSeconds * factor,
                         windowMinimumRequests: windowMinimumRequests, windowFailureRatio: windowFailureRatio,
                         quotaDistinctDevices: quotaDistinctDevices, initialProbeInterval: initialProbeInterval * factor,
                         maxProbeInterval: maxProbeInterval * factor, probeLeaseSeconds: probeLeaseSeconds * factor,
                         quotaDefaultPause: quotaDefaultPause * factor, holdSlack: holdSlack * factor)
    }
}

/// Why a scope was paused (`push_provider_pauses.cause`, the `cause` label of the metrics).
public enum PauseCause: String, Sendable, Hashable, CaseIterable {
    /// `consecutiveFailures` connection failures or timeouts in a row.
    case connectionFailures = "connection_failures"
    /// The failure ratio within the window (5xx, connection failures, timeouts).
    case failureRatio = "failure_ratio"
    /// FCM's project-wide 429 `QUOTA_EXCEEDED` from several devices.
    case quotaExceeded = "quota_exceeded"

    /// True for the causes that end by a successful probe (an outage); false for a quota pause,
    /// which ends when its time is over.
    public var probes: Bool { self != .quotaExceeded }
}

/// One pause as every worker sees it (a row of `push_provider_pauses`).
public struct ProviderPause: Sendable, Hashable {
    /// What is paused: `host <origin>` (an APNs host, the FCM host, a Web Push origin) or
    /// `fcm-project <project id>` (`PauseScope`).
    public var scope: String
    public var cause: PauseCause
    /// Operator detail (the last answer that tipped it: transport, status, reason); never content.
    public var detail: String
    public var pausedAt: Date
    /// Quota pauses: the instant sending resumes; nil for outages (a probe resumes them).
    public var resumeAt: Date?
    /// The current probe interval, seconds (doubles after a failed probe, bounded).
    public var probeInterval: TimeInterval
    /// When the next probe may be sent.
    public var nextProbeAt: Date
    /// The worker holding the probe in flight, and until when (nil: none in flight).
    public var probeOwner: String?
    public var probeLeaseUntil: Date?
    /// Probes sent so far.
    public var probes: Int
    /// Compare-and-set version: every change writes `version + 1` where the version read still holds.
    public var version: Int64

    /// Memberwise initializer.
    public init(scope: String, cause: PauseCause, detail: String, pausedAt: Date, resumeAt: Date?, probeInterval: TimeInterval,
                nextProbeAt: Date, probeOwner: String? = nil, probeLeaseUntil: Date? = nil, probes: Int = 0, version: Int64 = 1) {
        self.scope = scope
        self.cause = cause
        self.detail = detail
        self.pausedAt = pausedAt
        self.resumeAt = resumeAt
        self.probeInterval = probeInterval
        self.nextProbeAt = nextProbeAt
        self.probeOwner = probeOwner
        self.probeLeaseUntil = probeLeaseUntil
        self.probes = probes
        self.version = version
    }
}

/// The scope names of `ProviderPause.scope`.
public enum PauseScope {
    /// A provider host by its origin (`https://api.push.apple.com`): APNs production or sandbox,
    /// FCM, one Web Push service.
    public static func host(_ origin: String) -> String { "host \(origin)" }
    /// The host scope of a URL: `host ` + its scheme and authority, lower-cased, without path,
    /// query or user info (`https://api.push.apple.com/3/device/x` -> `host https://api.push.apple.com`).
    public static func host(ofURL url: String) -> String {
        let lower = url.lowercased()
        guard let sep = lower.range(of: "://") else { return host(String(lower.prefix(200))) }
        let rest = lower[sep.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return host(String((lower[..<sep.upperBound] + authority).prefix(200)))
    }
    /// One FCM project (its quota is project-wide).
    public static func fcmProject(_ projectID: String) -> String { "fcm-project \(projectID)" }
}

/// The pure decisions about pauses (R-KIND-4).
public enum PauseRules {
    /// What to do with one delivery whose scope may be paused.
    public enum Admission: Sendable, Hashable {
        /// Not paused: send as usual.
        case send
        /// Paused, and a probe is due with none in flight: this worker may take the probe (by
        /// compare-and-set on the pause's version) and send this one delivery.
        case probeDue
        /// Paused: defer the delivery, without counting an attempt, until this instant.
        case hold(until: Date)
        /// A quota pause whose time is over: sending resumes (the pause row is removed).
        case expired
    }

    /// The admission of a delivery to a scope with `pause` (nil: not paused) at `now`.
    public static func admission(_ pause: ProviderPause?, now: Date, thresholds: OutageThresholds) -> Admission {
        guard let p = pause else { return .send }
        if !p.cause.probes {
            guard let end = p.resumeAt, end > now else { return .expired }
            return .hold(until: end)
        }
        let probeInFlight = p.probeOwner != nil && (p.probeLeaseUntil.map { $0 > now } ?? false)
        if p.nextProbeAt <= now && !probeInFlight { return .probeDue }
        return .hold(until: holdUntil(p, now: now, thresholds: thresholds))
    }

    /// Until when a held delivery waits: the next probe's time (or, with the probe in flight, one
    /// interval from now), plus `holdSlack` so that the probe's answer is known by then.
    public static func holdUntil(_ p: ProviderPause, now: Date, thresholds: OutageThresholds) -> Date {
        if !p.cause.probes, let end = p.resumeAt { return end }
        let base = p.nextProbeAt > now ? p.nextProbeAt : now.addingTimeInterval(p.probeInterval)
        return base.addingTimeInterval(thresholds.holdSlack)
    }

    /// The instant a held delivery is scheduled at: `until`, but never past the notification's
    /// expiry (it then ends `EXPIRED` by its own expiry, R-SEND-10) nor before `now`.
    public static func scheduled(_ until: Date, expiresAt: Date, now: Date) -> Date {
        max(now, min(until, expiresAt))
    }

    /// A new pause of `scope` at `now`. An outage's first probe is due one initial interval later; a
    /// quota pause lasts the `Retry-After` given (at least the minimum), or `quotaDefaultPause`.
    public static func start(scope: String, cause: PauseCause, detail: String, retryAfter: TimeInterval?, now: Date,
                             thresholds: OutageThresholds) -> ProviderPause {
        let first = thresholds.initialProbeInterval
        var resumeAt: Date?
        if !cause.probes {
            let given = retryAfter.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? thresholds.quotaDefaultPause
            resumeAt = now.addingTimeInterval(given)
        }
        return ProviderPause(scope: scope, cause: cause, detail: String(detail.prefix(300)), pausedAt: now, resumeAt: resumeAt,
                             probeInterval: first, nextProbeAt: resumeAt ?? now.addingTimeInterval(first))
    }

    /// `p` with its probe taken by `owner` at `now` (version + 1): what the compare-and-set writes.
    public static func takeProbe(_ p: ProviderPause, owner: String, now: Date, thresholds: OutageThresholds) -> ProviderPause {
        var q = p
        q.probeOwner = owner
        q.probeLeaseUntil = now.addingTimeInterval(thresholds.probeLeaseSeconds)
        q.probes += 1
        q.version += 1
        return q
    }

    /// What a probe's answer does to the pause.
    public enum ProbeResult: Sendable, Hashable {
        /// The host answered: the pause ends for the fleet.
        case resume
        /// Still failing: the next probe after the doubled interval (bounded), probe released.
        case backOff(ProviderPause)
    }

    /// The pause after a probe answered with `signal` at `now`. Only a host failure backs off; any
    /// answer of the host itself (a 2xx, a token's 4xx, a 429) resumes it; a neutral answer (the
    /// request was refused before reaching the host) releases the probe without backing off.
    public static func afterProbe(_ p: ProviderPause, signal: HostSignal, now: Date, thresholds: OutageThresholds) -> ProbeResult {
        var q = p
        q.probeOwner = nil
        q.probeLeaseUntil = nil
        q.version += 1
        switch signal {
        case .answered, .quotaExceeded:
            return .resume
        case .neutral:
            q.nextProbeAt = now
            return .backOff(q)
        case .connectionFailure, .serverError:
            q.probeInterval = min(thresholds.maxProbeInterval, p.probeInterval * 2)
            q.nextProbeAt = now.addingTimeInterval(q.probeInterval)
            q.detail = p.detail
            return .backOff(q)
        }
    }
}
