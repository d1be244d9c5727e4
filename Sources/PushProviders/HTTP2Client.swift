import Foundation
internal import CCurl

/// Sends batches of HTTPS requests concurrently over persistent, multiplexed HTTP/2 connections
/// (libcurl multi; Apple's "Sending notification requests to APNs" asks for kept-open connections). A
/// batch blocks the calling thread until every request has an outcome; the worker calls it from its own
/// thread, never from Swift's cooperative pool.
///
/// Connections live in the client (its multi handle) and are reused by later batches; connections
/// idle longer than `maxIdleSeconds` are closed before reuse (CURLOPT_MAXAGE_CONN), and none is kept
/// beyond `maxConnectionLifetimeSeconds`. TCP keepalive probes keep idle connections' NAT state.
/// (libcurl 7.88 runs HTTP/2 PING upkeep only for connections owned by an easy handle, not by a multi
/// handle, so no PING is sent between batches; APNs' `IdleTimeout` is avoided by the idle limit.)
///
/// Thread-safe: concurrent `perform` calls are serialized by a lock.
public final class HTTP2Client: @unchecked Sendable {
    /// Connection and safety limits; every field has a production default.
    public struct Configuration: Sendable {
        /// PEM file of trusted CAs (CURLOPT_CAINFO); nil = the system store. Verification is never disabled.
        public var caFile: String?
        /// Connections per host (CURLMOPT_MAX_HOST_CONNECTIONS). Default 1: one HTTP/2 connection carries
        /// up to the server's stream limit (about 1000 on APNs); requests beyond it wait for a free stream.
        /// A second connection starts with a burst before the server's SETTINGS arrive, which a strict
        /// server refuses (REFUSED_STREAM; libcurl then retries on a fresh connection).
        public var maxHostConnections: Int = 1
        /// Connections overall, all hosts (CURLMOPT_MAX_TOTAL_CONNECTIONS, also the idle cache size). Default 8.
        public var maxTotalConnections: Int = 8
        /// Streams per connection we open at most (CURLMOPT_MAX_CONCURRENT_STREAMS); the server's SETTINGS also apply. Default 100.
        public var maxStreamsPerConnection: Int = 100
        /// Connection setup limit in milliseconds (CURLOPT_CONNECTTIMEOUT_MS), capped by each request's deadline. Default 5000.
        public var connectTimeoutMillis: Int = 5_000
        /// Idle seconds after which a pooled connection is closed instead of reused (CURLOPT_MAXAGE_CONN). Default 50.
        public var maxIdleSeconds: Int = 50
        /// Seconds after which a connection is not reused at all (CURLOPT_MAXLIFETIME_CONN); 0 = no limit. Default 0.
        public var maxConnectionLifetimeSeconds: Int = 0
        /// TCP keepalive idle and probe interval in seconds. Default 30.
        public var tcpKeepAliveSeconds: Int = 30
        /// HTTP/2 upkeep interval in milliseconds (CURLOPT_UPKEEP_INTERVAL_MS). Default 30 000.
        public var upkeepIntervalMillis: Int = 30_000
        /// Longest wait (ms) for the first request on a new connection before the others follow. Default 1000.
        public var warmUpMillis: Int = 1_000
        /// Largest response body kept, in bytes; the rest is read and dropped. Default 64 KiB.
        public var maxResponseBodyBytes: Int = 64 * 1024
        /// Open a new connection for every request and close it after (CURLOPT_FRESH_CONNECT,
        /// CURLOPT_FORBID_REUSE). Default false. For requests that must never be written twice
        /// (an SMS): on a reused connection that the server closed as the request went out, libcurl
        /// writes the request again on a new one, which only the sender can know to be unsafe.
        public var freshConnectionPerRequest: Bool = false

        /// Defaults, with an optional CA file (tests pass their fake CA).
        public init(caFile: String? = nil) { self.caFile = caFile }
    }

    /// Limits in force.
    public let configuration: Configuration
    private let multi: CurlMulti
    private let lock = NSLock()
    private var openedConnections = 0
    /// Per host: until when (monotonic ms) a connection is believed open and past its first request.
    private var warmUntil: [String: UInt64] = [:]

    private init(configuration: Configuration, multi: CurlMulti) {
        self.configuration = configuration
        self.multi = multi
    }

    /// Creates a client with its own connection pool.
    /// - Throws: `HTTPClientError.caFileUnreadable` when `caFile` is set but unreadable,
    ///   `HTTPClientError.curlInit` when libcurl cannot be initialised.
    public static func make(configuration: Configuration = Configuration()) throws -> HTTP2Client {
        if let ca = configuration.caFile, !FileManager.default.isReadableFile(atPath: ca) {
            throw HTTPClientError.caFileUnreadable(ca)
        }
        let multi = try CurlMulti.make(maxHostConnections: max(1, configuration.maxHostConnections),
                                       maxTotalConnections: max(1, configuration.maxTotalConnections),
                                       maxStreamsPerConnection: max(1, configuration.maxStreamsPerConnection))
        return HTTP2Client(configuration: configuration, multi: multi)
    }

    /// Number of connections this client has opened since it was created (CURLINFO_NUM_CONNECTS summed).
    public var connectionsOpened: Int {
        lock.lock()
        defer { lock.unlock() }
        return openedConnections
    }

    /// Sends all `requests` concurrently and waits for each to end.
    ///
    /// Warm-up (Apple's "Sending notification requests to APNs"): a server may allow a single stream on
    /// a new connection until it has seen a valid request, and libcurl assumes 100 streams until the
    /// server's SETTINGS arrive. So for a host without a recently used connection, the first request
    /// goes alone; the host's other requests start when it finishes or after `warmUpMillis`, whichever
    /// comes first (their own deadlines count from then).
    /// - Returns: one outcome per request, in the same order. Never throws: a request libcurl
    ///   refuses to set up comes back as `.notSent`.
    public func perform(_ requests: [HTTPRequest]) -> [HTTPOutcome] {
        lock.lock()
        defer { lock.unlock() }
        var outcomes = [HTTPOutcome?](repeating: nil, count: requests.count)
        var active: [UnsafeMutableRawPointer: (index: Int, easy: CurlEasy)] = [:]
        let now = Self.monotonicMillis()
        let hosts = requests.map { Self.hostKey($0.url) }
        var deferred: [String: [Int]] = [:]   // cold host -> requests waiting for its warm-up request
        var warmUps: [Int: String] = [:]      // warm-up request index -> host
        // With a connection per request there is nothing to warm up.
        for (i, host) in hosts.enumerated() where !configuration.freshConnectionPerRequest && (warmUntil[host] ?? 0) <= now {
            if deferred[host] == nil {
                deferred[host] = []
                warmUps[i] = host
            } else {
                deferred[host, default: []].append(i)
            }
        }
        let deferredSet = Set(deferred.values.joined())
        func start(_ i: Int) {
            do {
                let easy = try CurlEasy.make(for: requests[i], config: configuration)
                try multi.add(easy)
                active[easy.withUnsafeHandle { $0 }] = (i, easy)
            } catch {
                outcomes[i] = .notSent("\(error)")
            }
        }
        func release(_ host: String) {
            deferred.removeValue(forKey: host)?.forEach(start)
        }
        requests.indices.filter { !deferredSet.contains($0) }.forEach(start)
        let releaseAll = now + UInt64(max(0, configuration.warmUpMillis))
        // Safety net beyond libcurl's own per-request timers.
        let giveUp = releaseAll + UInt64((requests.map(\.timeoutMillis).max() ?? 0) + 5_000)
        while !active.isEmpty || !deferred.isEmpty {
            let running = multi.perform()
            while let done = multi.nextFinished() {
                guard let entry = active.removeValue(forKey: done.easy) else { continue }
                let outcome = finish(entry.easy, result: done.result)
                outcomes[entry.index] = outcome
                let host = hosts[entry.index]
                if case .response = outcome {
                    warmUntil[host] = Self.monotonicMillis() + UInt64(max(0, configuration.maxIdleSeconds - 1)) * 1000
                } else {
                    warmUntil[host] = nil
                }
                if let warmed = warmUps.removeValue(forKey: entry.index) { release(warmed) }
            }
            let clock = Self.monotonicMillis()
            if clock >= releaseAll { deferred.keys.forEach(release) }
            if active.isEmpty && deferred.isEmpty { break }
            if clock > giveUp {
                for (_, entry) in active {
                    multi.remove(entry.easy)
                    outcomes[entry.index] = .timeout("deadline passed without an answer")
                }
                active.removeAll()
                break
            }
            if running > 0 || !active.isEmpty { multi.poll(timeoutMillis: 20) }
        }
        return outcomes.map { $0 ?? .notSent("not started") }
    }

    /// `host:port` of an absolute URL (the pool key for warm-up bookkeeping).
    static func hostKey(_ url: String) -> String {
        guard let parsed = URL(string: url) else { return url }
        return "\(parsed.host ?? ""):\(parsed.port ?? (parsed.scheme == "http" ? 80 : 443))"
    }

    private static func monotonicMillis() -> UInt64 { DispatchTime.now().uptimeNanoseconds / 1_000_000 }

    private func finish(_ easy: CurlEasy, result: CURLcode) -> HTTPOutcome {
        openedConnections += easy.newConnections
        let outcome = Self.classify(result, easy: easy)
        multi.remove(easy)
        return outcome
    }

    /// Maps a finished transfer to an outcome (a reset, refused stream or GOAWAY is retryable on a new
    /// connection).
    private static func classify(_ result: CURLcode, easy: CurlEasy) -> HTTPOutcome {
        if result == CURLE_OK {
            return .response(HTTPResponse(status: easy.status, headers: easy.headers, body: easy.body,
                                          bodyTruncated: easy.bodyTruncated, httpVersion: easy.httpVersion))
        }
        let text = easy.errorText(result)
        switch result {
        case CURLE_OPERATION_TIMEDOUT:
            // Before the request went out (connect, TLS, waiting for a stream), nothing reached the server.
            return easy.reachedPretransfer ? .timeout(text) : .notSent(text)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT,
             CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ISSUER_ERROR, CURLE_OUT_OF_MEMORY:
            return .notSent(text)
        default:
            // CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE,
            // CURLE_GOT_NOTHING, ...: the request may have reached the server.
            return .connectionError(text)
        }
    }
}
