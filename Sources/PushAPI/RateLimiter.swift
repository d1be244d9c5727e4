import Foundation

/// Per-key rate limits that hold across replicas (issue 14 part 6): the shared state is one token
/// bucket per key in PostgreSQL (`push_api_take_tokens`, sql/0008), refilled at the key's rate
/// with a burst of one second's worth. A replica takes a chunk of tokens (a tenth of a second's
/// worth, at least one) and spends them locally, one per request, going back to PostgreSQL only
/// when its stock is used up; so replicas together never admit more than the bucket grants, and
/// under-admission is bounded by the chunks replicas hold unspent (stock expires after a
/// second). A bucket found empty is remembered until its next token is due, so a flood of
/// refused requests costs no database round trip.
final class RateLimiter: @unchecked Sendable {
    /// The verdict for one request.
    enum Decision: Equatable {
        case admitted
        case limited(retryAfterSeconds: Double)
    }

    private struct Stock {
        var tokens = 0
        var expiresAt = 0.0
        var emptyUntil = 0.0
    }

    /// Fraction of a second's rate taken per trip to the shared bucket.
    static let chunkFraction = 0.1
    /// Seconds a replica may hold tokens before they lapse.
    static let stockLifetime = 1.0

    private let lock = NSLock()
    private var stocks: [UUID: Stock] = [:]

    /// Tokens taken per trip for `rate` requests per second.
    static func chunk(rate: Int) -> Int { max(1, Int((Double(rate) * chunkFraction).rounded(.up))) }

    /// Admits or refuses one request of `keyID` at `now` (monotonic seconds). `take(want)` asks the
    /// shared bucket for tokens: (granted, seconds until the next token when none).
    func admit(keyID: UUID, rate: Int, now: Double, take: (Int) throws -> (granted: Int, retryAfter: Double)) rethrows -> Decision {
        let local = lock.withLock { () -> Decision? in
            var s = stocks[keyID] ?? Stock()
            if s.tokens > 0 && now < s.expiresAt {
                s.tokens -= 1
                stocks[keyID] = s
                return .admitted
            }
            if now < s.emptyUntil { return .limited(retryAfterSeconds: s.emptyUntil - now) }
            return nil
        }
        if let local { return local }
        let (granted, retryAfter) = try take(Self.chunk(rate: rate))
        return lock.withLock {
            var s = stocks[keyID] ?? Stock()
            if s.expiresAt <= now { s.tokens = 0 }
            if granted > 0 {
                s.tokens += granted - 1
                s.expiresAt = now + Self.stockLifetime
                s.emptyUntil = 0
                stocks[keyID] = s
                return .admitted
            }
            // Requests of this replica that went to the bucket at the same time may have taken what
            // it had: their stock is this request's too, and only an empty bucket with no stock
            // here refuses.
            if s.tokens > 0 && now < s.expiresAt {
                s.tokens -= 1
                stocks[keyID] = s
                return .admitted
            }
            s.emptyUntil = now + max(retryAfter, 0.01)
            stocks[keyID] = s
            return .limited(retryAfterSeconds: max(retryAfter, 0.01))
        }
    }

    /// Forgets keys whose stock lapsed (called now and then, so the map stays small).
    func prune(now: Double) {
        lock.withLock { stocks = stocks.filter { $0.value.expiresAt > now || $0.value.emptyUntil > now } }
    }
}
