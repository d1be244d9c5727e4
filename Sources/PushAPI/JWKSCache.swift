import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushWorker

/// The signing keys of the operator's authorization server (issue 15 part 1), read from its JWKS
/// (`JWKSFetcher`: an https URL or a file) and kept in memory: fetched when the server starts,
/// again on a schedule (`refreshSeconds`, in the background: the request that notices it is due
/// does not wait), and at once when a token names a `kid` the cache does not hold, at most once per
/// `minRefreshSeconds` (60) so that tokens with made-up kids cannot turn the API into a JWKS
/// flooder. A failed fetch keeps the keys held before. Keys of a type or algorithm this API does
/// not verify (`oct`, RSA-PSS, other curves), or marked `use` other than `sig`, are skipped.
public final class JWKSCache: @unchecked Sendable {
    /// One usable key of the set.
    struct Entry {
        var kid: String?
        var key: JWKPublicKey
    }

    let fetch: @Sendable () throws -> [UInt8]
    let now: @Sendable () -> Date
    let refreshSeconds: Double
    let minRefreshSeconds: Double
    let log: Log
    private let lock = NSLock()
    /// Held while a fetch runs, so concurrent requests with the same unknown kid fetch once.
    private let fetchLock = NSLock()
    private var entries: [Entry] = []
    private var fetchedAt: Date?
    private var lastAttempt: Date?
    private var backgroundRunning = false
    /// Fetches done (successful or not), for tests and logs.
    public private(set) var fetches = 0

    /// A cache over `fetch`.
    init(fetch: @escaping @Sendable () throws -> [UInt8], refreshSeconds: Double, minRefreshSeconds: Double,
         now: @escaping @Sendable () -> Date, log: Log) {
        self.fetch = fetch
        self.refreshSeconds = refreshSeconds
        self.minRefreshSeconds = minRefreshSeconds
        self.now = now
        self.log = log
    }

    /// The keys that may have signed a token with `kid` and `algorithm`: the one of that kid, or
    /// (no kid in the token) every key of the algorithm. An unknown kid refreshes the set first
    /// when the last fetch was at least `minRefreshSeconds` ago.
    /// - Throws: `AccessTokenRefusal` `keys_unavailable` when no key set was ever read, or
    ///   `unknown_key` when none matches after the refresh the rate allows.
    func keys(kid: String?, algorithm: JWTSigner.Algorithm) throws -> [JWKPublicKey] {
        refreshInBackgroundIfDue()
        if let found = match(kid: kid, algorithm: algorithm), !found.isEmpty { return found }
        refreshNowIfAllowed()
        if let found = match(kid: kid, algorithm: algorithm), !found.isEmpty { return found }
        if lock.withLock({ fetchedAt == nil }) {
            throw AccessTokenRefusal("keys_unavailable", "the authorization server's keys could not be read yet; retry shortly")
        }
        throw AccessTokenRefusal("unknown_key", "the token was not signed by a key of the authorization server's JWKS")
    }

    private func match(kid: String?, algorithm: JWTSigner.Algorithm) -> [JWKPublicKey]? {
        lock.withLock {
            entries.filter { $0.key.algorithm == algorithm && (kid == nil || $0.kid == kid) }.map(\.key)
        }
    }

    /// Fetches now unless the last attempt is under `minRefreshSeconds` old; a fetch already
    /// running is waited for instead.
    func refreshNowIfAllowed() {
        fetchLock.withLock {
            let t = now()
            let allowed = lock.withLock { lastAttempt.map { t.timeIntervalSince($0) >= minRefreshSeconds } ?? true }
            if allowed { load(at: t) }
        }
    }

    /// The scheduled refresh: once `refreshSeconds` passed since the last good fetch (and the rate
    /// allows), one background fetch; requests go on with the keys held.
    private func refreshInBackgroundIfDue() {
        let t = now()
        let due = lock.withLock { () -> Bool in
            guard !backgroundRunning, let at = fetchedAt, t.timeIntervalSince(at) >= refreshSeconds,
                  lastAttempt.map({ t.timeIntervalSince($0) >= minRefreshSeconds }) ?? true else { return false }
            backgroundRunning = true
            return true
        }
        guard due else { return }
        DispatchQueue.global().async { [self] in
            refreshNowIfAllowed()
            lock.withLock { backgroundRunning = false }
        }
    }

    /// One fetch and parse; the keys are replaced only when the set was read.
    private func load(at t: Date) {
        lock.withLock {
            lastAttempt = t
            fetches += 1
        }
        do {
            let parsed = try Self.parse(try fetch())
            lock.withLock {
                entries = parsed.entries
                fetchedAt = t
            }
            log.info("api.jwks_loaded", ["keys": parsed.entries.count, "skipped": parsed.skipped])
        } catch {
            log.warn("api.jwks_failed", ["error": String(String(describing: error).prefix(300)),
                                            "keys_kept": lock.withLock { entries.count }])
        }
    }

    /// The usable keys of a JWKS document (RFC 7517 §5), and how many were skipped.
    /// - Throws: `JWKSFetchError` `jwks.malformed` unless it is a JSON object with a `keys` array
    ///   of at most 100 objects.
    static func parse(_ bytes: [UInt8]) throws -> (entries: [Entry], skipped: Int) {
        guard case .object(let doc)? = try? JSONParser.parse(utf8: bytes), case .array(let keys)? = doc["keys"],
              keys.count <= 100 else {
            throw JWKSFetchError(code: "jwks.malformed", message: "not a JWKS: a JSON object with a keys array of at most 100 keys")
        }
        var entries: [Entry] = []
        var skipped = 0
        for k in keys {
            guard case .object(let o) = k, let key = try? Self.key(o) else { skipped += 1; continue }
            var kid: String?
            if case .string(let s)? = o["kid"] { kid = s }
            entries.append(Entry(kid: kid, key: key))
        }
        return (entries, skipped)
    }

    /// One JWK as a verifying key, or nil when this API does not verify its kind.
    static func key(_ o: JSONObject) throws -> JWKPublicKey? {
        func text(_ name: String) -> String? { if case .string(let s)? = o[name] { return s } else { return nil } }
        func bytes(_ name: String) -> [UInt8]? { text(name).flatMap(Base64URL.decode) }
        if let use = text("use"), use != "sig" { return nil }
        let alg = text("alg")
        switch text("kty") {
        case "RSA":
            guard alg == nil || alg == "RS256", let n = bytes("n"), let e = bytes("e") else { return nil }
            return try JWKPublicKey.rsa(modulus: n, exponent: e)
        case "EC":
            guard alg == nil || alg == "ES256", text("crv") == "P-256", let x = bytes("x"), let y = bytes("y") else { return nil }
            return try JWKPublicKey.p256(x: x, y: y)
        default:
            return nil
        }
    }
}
