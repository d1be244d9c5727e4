import Foundation

/// The preview routes' rate limits (issue 24 part 3): token buckets per preview token, per client
/// address and overall, all in this replica's memory and all checked before any database work, so a
/// flood of random tokens costs no round trip. Checked in that order, address first: a flood from
/// one address is refused by its own bucket and never drains the overall one, so devices elsewhere
/// keep being served. Each map is bounded (`maxKeys`; full buckets are dropped first).
final class PreviewLimiter: @unchecked Sendable {
    /// One bucket's rate (tokens per second) and burst (its capacity).
    struct Limit: Sendable, Equatable {
        var rate: Double
        var burst: Double
    }

    /// The three limits. Defaults: a token 5/s (burst 20: a device that just got many
    /// notifications), an address 50/s (burst 200: a carrier's NAT), overall 2,000/s (burst 4,000).
    struct Limits: Sendable, Equatable {
        var perToken = Limit(rate: 5, burst: 20)
        var perAddress = Limit(rate: 50, burst: 200)
        var overall = Limit(rate: 2000, burst: 4000)
    }

    /// Which limit refused a request (the label of `pushfleet_api_preview_rate_limited_total`).
    enum Refusal: String { case token, address, overall }

    private struct Bucket {
        var level: Double
        var at: Double
    }

    /// Keys kept per map at most.
    static let maxKeys = 100_000

    let limits: Limits
    private let lock = NSLock()
    private var tokens: [[UInt8]: Bucket] = [:]
    private var addresses: [String: Bucket] = [:]
    private var overall: Bucket

    init(limits: Limits = Limits()) {
        self.limits = limits
        overall = Bucket(level: limits.overall.burst, at: 0)
    }

    /// Admits a request of `tokenKey` (a prefix of the token's hash) from `address` at `now`
    /// (monotonic seconds): nil when admitted, else the limit that refused it and the seconds until
    /// that bucket has a token again.
    func admit(tokenKey: [UInt8], address: String, now: Double) -> (Refusal, retryAfter: Double)? {
        lock.withLock {
            var a = Self.refilled(addresses[address], limits.perAddress, now)
            guard a.level >= 1 else {
                addresses[address] = a
                return (.address, (1 - a.level) / limits.perAddress.rate)
            }
            var t = Self.refilled(tokens[tokenKey], limits.perToken, now)
            guard t.level >= 1 else {
                tokens[tokenKey] = t
                return (.token, (1 - t.level) / limits.perToken.rate)
            }
            var o = Self.refilled(overall, limits.overall, now)
            guard o.level >= 1 else {
                overall = o
                return (.overall, (1 - o.level) / limits.overall.rate)
            }
            a.level -= 1
            t.level -= 1
            o.level -= 1
            Self.store(&addresses, address, a, limits.perAddress, now)
            Self.store(&tokens, tokenKey, t, limits.perToken, now)
            overall = o
            return nil
        }
    }

    private static func refilled(_ b: Bucket?, _ limit: Limit, _ now: Double) -> Bucket {
        guard let b else { return Bucket(level: limit.burst, at: now) }
        return Bucket(level: min(limit.burst, b.level + max(0, now - b.at) * limit.rate), at: now)
    }

    /// Stores `b`, first dropping the buckets that are full again (they hold nothing a new bucket
    /// would not) when the map is at its bound, then any half of it if that freed nothing.
    private static func store<K: Hashable>(_ map: inout [K: Bucket], _ key: K, _ b: Bucket, _ limit: Limit, _ now: Double) {
        if map[key] == nil, map.count >= maxKeys {
            map = map.filter { refilled($0.value, limit, now).level < limit.burst }
            if map.count >= maxKeys { map = Dictionary(uniqueKeysWithValues: map.prefix(maxKeys / 2).map { ($0.key, $0.value) }) }
        }
        map[key] = b
    }
}
