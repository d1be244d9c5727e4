import Foundation
import PushCore
import PushStore

/// One worker's side of the fleet-wide provider pauses (R-KIND-4). Before a batch's pushes are
/// sent, `admit` says for each one whether it goes out, is the scope's probe, or is held back;
/// after, `report` feeds every answer to the scope's detection (`HostHealth`) and a probe's
/// answer to its pause. The decisions are PushCore's (`PauseRules`, `HostHealth`); the state is
/// shared through a `PauseStore` (`push_provider_pauses`) with compare-and-set, read again at
/// most every `refreshInterval`. Used from the worker's thread only.
public final class ProviderGate {
    /// What to do with one push.
    public enum Decision: Sendable, Equatable {
        /// Send it.
        case send
        /// Send it as the probe of this scope (this worker holds the probe).
        case probe(scope: String)
        /// Defer it without counting an attempt until this instant.
        case hold(until: Date)
    }

    public let thresholds: OutageThresholds
    /// Seconds between reads of the shared pauses (this worker's own changes apply at once).
    public let refreshInterval: TimeInterval
    private let store: PauseStore
    private let owner: String
    private let metrics: WorkerMetrics?
    private let log: Log
    private var cache: [String: ProviderPause] = [:]
    private var refreshedAt = Date.distantPast
    private var health: [String: HostHealth] = [:]
    private var storeFailures = 0
    /// Scopes this worker has seen paused: their gauge reads 0 once resumed, not absent.
    private var seenPaused = Set<String>()

    /// - Parameters:
    ///   - store: where the fleet shares pauses (`PGPauseStore`; `MemoryPauseStore` for one process).
    ///   - owner: this worker's name in probe leases.
    public init(store: PauseStore, owner: String, thresholds: OutageThresholds = .default, refreshInterval: TimeInterval = 1,
                metrics: WorkerMetrics? = nil, log: Log = .shared) {
        self.store = store
        self.owner = owner
        self.thresholds = thresholds
        self.refreshInterval = max(0, refreshInterval)
        self.metrics = metrics
        self.log = log
    }

    /// The pauses this worker knows of now (tests, `pushfleet stats` reads the table itself).
    public var knownPauses: [ProviderPause] { cache.values.sorted { $0.scope < $1.scope } }

    // MARK: - Before sending

    /// One decision per push, from its scopes (`ProviderRouter.pauseScopes`). At most one push per
    /// scope becomes the probe, and only when this worker won it by compare-and-set; a push of
    /// several scopes (an FCM host and its project) is held when any of them holds it.
    public func admit(_ scopes: [[String]], now: Date) -> [Decision] {
        if scopes.allSatisfy(\.isEmpty) { return scopes.map { _ in .send } }
        refreshIfStale(now)
        var taken: Set<String> = []
        return scopes.map { pushScopes in
            var holdUntil: Date?
            var probeScope: String?
            for scope in pushScopes {
                switch PauseRules.admission(cache[scope], now: now, thresholds: thresholds) {
                case .send:
                    continue
                case .expired:
                    end(scope, now: now, by: "time")
                case .hold(let until):
                    holdUntil = max(holdUntil ?? until, until)
                case .probeDue:
                    if probeScope == nil && !taken.contains(scope) {
                        probeScope = scope
                    } else if let p = cache[scope] {
                        holdUntil = max(holdUntil ?? .distantPast, PauseRules.holdUntil(p, now: now, thresholds: thresholds))
                    }
                }
            }
            if let until = holdUntil { return .hold(until: until) }
            guard let scope = probeScope, let p = cache[scope] else { return .send }
            if takeProbe(p, now: now) {
                taken.insert(scope)
                return .probe(scope: scope)
            }
            return .hold(until: cache[scope].map { PauseRules.holdUntil($0, now: now, thresholds: thresholds) }
                         ?? now.addingTimeInterval(thresholds.initialProbeInterval))
        }
    }

    /// Takes `p`'s probe by compare-and-set; false when another worker changed the pause first
    /// (the cache then holds what it wrote) or the store cannot be reached.
    private func takeProbe(_ p: ProviderPause, now: Date) -> Bool {
        let taken = PauseRules.takeProbe(p, owner: owner, now: now, thresholds: thresholds)
        do {
            if let stored = try store.update(taken, expected: p.version) {
                cache[p.scope] = stored
                metrics?.providerProbes.increment([p.scope, "sent"])
                return true
            }
            reload()
            return false
        } catch {
            storeFailed(error)
            return false
        }
    }

    // MARK: - After sending

    /// Feeds one answer to the push's scopes: a probe's answer resumes or backs off its pause; any
    /// other answer goes to the detection of each scope not already paused (`host ...` scopes take
    /// connection and server failures, `fcm-project ...` scopes a quota's 429), which may start a
    /// pause (written for the fleet; if another worker wrote one first, that one stands).
    public func report(scopes: [String], signal: HostSignal, decision: Decision, detail: String, now: Date) {
        if case .probe(let scope) = decision { finishProbe(scope, signal: signal, now: now) }
        for scope in scopes where cache[scope] == nil {
            let s = Self.signal(signal, for: scope)
            if s == .neutral { continue }
            var h = health[scope] ?? HostHealth()
            let verdict = h.observe(s, now: now, thresholds: thresholds)
            health[scope] = h
            if case .pause(let cause, let retryAfter) = verdict {
                start(PauseRules.start(scope: scope, cause: cause, detail: detail, retryAfter: retryAfter, now: now,
                                       thresholds: thresholds))
            }
        }
    }

    /// Until when a push of `scopes` that just failed for its host waits instead of counting a
    /// failed attempt: the hold of a scope paused now (by this answer, or before), nil when none is.
    public func holdAfterFailure(scopes: [String], now: Date) -> Date? {
        var until: Date?
        for scope in scopes {
            guard let p = cache[scope], p.cause.probes else { continue }
            let u = PauseRules.holdUntil(p, now: now, thresholds: thresholds)
            until = max(until ?? u, u)
        }
        return until
    }

    /// A host scope sees a quota 429 as the host answering; a project scope sees only quota 429s.
    static func signal(_ s: HostSignal, for scope: String) -> HostSignal {
        let project = scope.hasPrefix(PauseScope.fcmProject(""))
        if case .quotaExceeded = s { return project ? s : .answered }
        return project ? .neutral : s
    }

    private func finishProbe(_ scope: String, signal: HostSignal, now: Date) {
        guard let p = cache[scope], p.probeOwner == owner else { return }
        switch PauseRules.afterProbe(p, signal: Self.signal(signal, for: scope), now: now, thresholds: thresholds) {
        case .resume:
            metrics?.providerProbes.increment([scope, "resumed"])
            end(scope, now: now, by: "probe")
        case .backOff(let next):
            metrics?.providerProbes.increment([scope, "failed"])
            do {
                if let stored = try store.update(next, expected: p.version) { cache[scope] = stored } else { reload() }
            } catch {
                storeFailed(error)
            }
            log.debug("provider.probe_failed", ["scope": scope, "next_probe_in_s": next.probeInterval, "probes": next.probes])
        }
    }

    // MARK: - Pauses starting and ending

    private func start(_ pause: ProviderPause) {
        health[pause.scope] = nil
        do {
            let (stored, inserted) = try store.insert(pause)
            cache[pause.scope] = stored
            guard inserted else { return }
        } catch {
            storeFailed(error)
            cache[pause.scope] = pause  // this worker still holds back; the fleet learns it once the store is back
        }
        metrics?.providerPauses.increment([pause.scope, pause.cause.rawValue])
        publishGauge()
        var fields: [String: Any] = ["scope": pause.scope, "cause": pause.cause.rawValue, "detail": pause.detail]
        if let end = pause.resumeAt {
            fields["resume_in_s"] = end.timeIntervalSince(pause.pausedAt)
        } else {
            fields["first_probe_in_s"] = pause.probeInterval
        }
        log.warn("provider.paused", fields)
    }

    /// Ends the pause of `scope` (a probe answered, or a quota pause's time is over), once for the fleet.
    private func end(_ scope: String, now: Date, by: String) {
        guard let p = cache[scope] else { return }
        cache[scope] = nil
        health[scope] = nil
        var ended = true
        do { ended = try store.delete(scope: scope, expected: p.version) } catch { storeFailed(error) }
        publishGauge()
        guard ended else { return }  // another worker ended it (or changed it: the next refresh tells)
        metrics?.providerResumes.increment([scope, p.cause.rawValue])
        log.info("provider.resumed", ["scope": scope, "cause": p.cause.rawValue, "by": by, "probes": p.probes,
                                      "paused_s": (now.timeIntervalSince(p.pausedAt) * 1000).rounded() / 1000])
    }

    // MARK: - The shared state

    private func refreshIfStale(_ now: Date) {
        if now.timeIntervalSince(refreshedAt) < refreshInterval && now >= refreshedAt { return }
        refreshedAt = now
        reload()
    }

    private func reload() {
        do {
            let all = try store.pauses()
            var next: [String: ProviderPause] = [:]
            for p in all { next[p.scope] = p }
            for scope in cache.keys where next[scope] == nil { health[scope] = nil }
            cache = next
            storeFailures = 0
            publishGauge()
        } catch {
            storeFailed(error)
        }
    }

    private func storeFailed(_ error: Error) {
        storeFailures += 1
        if storeFailures == 1 || storeFailures % 100 == 0 {
            log.warn("provider.pause_store_error", ["error": String(describing: error).prefix(200), "failures": storeFailures,
                                                    "effect": "pauses known to this worker still apply"])
        }
    }

    /// `pushfleet_provider_paused`: 1 for each scope paused now, 0 for each one seen paused since the
    /// worker started (a series that vanished on resume broke alerts and graphs; at most 1,000 kept).
    private func publishGauge() {
        seenPaused.formUnion(cache.keys)
        if seenPaused.count > 1_000 { seenPaused = Set(cache.keys) }
        metrics?.providerPaused.replaceAll(Dictionary(uniqueKeysWithValues: seenPaused.map { ($0, cache[$0] == nil ? 0.0 : 1.0) }))
    }
}
