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
/// Cost per request (issue 18, docs/bench.md): a batch goes out in chunks that fit the connections'
/// stream limit (`maxStreamsPerConnection` per connection, `maxHostConnections` connections per
/// host): at most that many requests of a host are handed to libcurl at a time, the next starting as
/// soon as one ends, so libcurl never queues transfers of its own (its per-wake-up work grows with
/// every transfer it holds). Easy handles are kept and reused, and the frames of the requests started
/// together are written under TCP_CORK so that they leave in full segments.
///
/// Thread-safe: concurrent `perform` calls are serialized by a lock.
public final class HTTP2Client: HTTPTransport, @unchecked Sendable {
    /// Connection and safety limits (shared with `NGHTTP2Client`; see `HTTPClientConfiguration`).
    public typealias Configuration = HTTPClientConfiguration

    /// Counters since the client was created (see `HTTPTransportStatistics`).
    public typealias Statistics = HTTPTransportStatistics

    /// Limits in force.
    public let configuration: Configuration
    private let multi: CurlMulti
    private let lock = NSLock()
    private var stats = Statistics()
    /// Easy handles not in use (reused by the next transfers).
    private var idleHandles: [CurlEasy] = []
    /// Per host: until when (monotonic ms) its connections are believed open and past their first
    /// request, and how many (each was warmed up by a request of its own).
    private var warm: [String: (until: UInt64, connections: Int)] = [:]

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
                                       maxStreamsPerConnection: configuration.curlStreamsPerConnection)
        return HTTP2Client(configuration: configuration, multi: multi)
    }

    /// Number of connections this client has opened since it was created (CURLINFO_NUM_CONNECTS summed).
    public var connectionsOpened: Int { lock.withLock { stats.connectionsOpened } }

    /// Counters since creation.
    public var statistics: Statistics { lock.withLock { stats } }

    /// Sends all `requests` concurrently and waits for each to end.
    ///
    /// Chunks and warm-up (Apple's "Sending notification requests to APNs"): a host gets at most `maxStreamsPerConnection` requests
    /// in flight per warm connection; the next request starts when one ends. A server may allow a
    /// single stream on a new connection until it has seen a valid request (APNs), and libcurl assumes
    /// 100 streams until the server's SETTINGS arrive, so a connection is opened by one request alone:
    /// for a host without a recently used connection, the first request goes alone and the others
    /// start when it ends or after `warmUpMillis`, whichever comes first (their own deadlines count
    /// from then); with `maxHostConnections > 1`, a host whose connections are all full gets one more
    /// request, which opens the next connection, and its chunk follows once that request was answered.
    /// - Returns: one outcome per request, in the same order. Never throws: a request libcurl
    ///   refuses to set up comes back as `.notSent`.
    public func perform(_ requests: [HTTPRequest]) -> [HTTPOutcome] {
        lock.lock()
        defer { lock.unlock() }
        stats.requests += requests.count
        var run = Batch(client: self, requests: requests)
        run.start()
        return run.finish()
    }

    // MARK: - One batch

    /// The state of one `perform` call (requests per host, transfers in flight, outcomes).
    private struct Batch {
        let client: HTTP2Client
        let requests: [HTTPRequest]
        var outcomes: [HTTPOutcome?]
        var hosts: [HostState] = []
        var hostOf: [Int]
        var active: [UnsafeMutableRawPointer: (index: Int, easy: CurlEasy)] = [:]
        var startedSinceWrite = false
        let releaseAt: UInt64
        let giveUpAt: UInt64

        /// One host's queue: requests not started yet (in order), transfers in flight, connections.
        struct HostState {
            var key: String
            var pending: [Int] = []
            var next = 0
            var inFlight = 0
            /// Warm connections we may fill; 0 while the first request is out alone.
            var connections: Int
            /// Index of the request opening a connection (alone), if one is out.
            var opener: Int?
            /// The first request ended or `warmUpMillis` passed: a cold host gets a full chunk.
            var released = false
        }

        init(client: HTTP2Client, requests: [HTTPRequest]) {
            self.client = client
            self.requests = requests
            outcomes = [HTTPOutcome?](repeating: nil, count: requests.count)
            hostOf = [Int](repeating: 0, count: requests.count)
            let now = HTTP2Client.monotonicMillis()
            var slot: [String: Int] = [:]
            for (i, request) in requests.enumerated() {
                let key = HTTP2Client.hostKey(request.url)
                if let h = slot[key] {
                    hostOf[i] = h
                } else {
                    let known = client.warm[key]
                    let connections = known.map { $0.until > now ? $0.connections : 0 } ?? 0
                    slot[key] = hosts.count
                    hostOf[i] = hosts.count
                    hosts.append(HostState(key: key, connections: connections))
                }
                hosts[hostOf[i]].pending.append(i)
            }
            releaseAt = now + UInt64(max(0, client.configuration.warmUpMillis))
            // Safety net beyond libcurl's own per-request timers.
            giveUpAt = releaseAt + UInt64((requests.map(\.timeoutMillis).max() ?? 0) + 5_000)
        }

        /// Requests of host `h` allowed in flight now.
        func window(_ h: Int) -> Int {
            if client.configuration.freshConnectionPerRequest { return max(1, client.configuration.maxHostConnections) }
            let perConnection = client.configuration.curlStreamsPerConnection
            let host = hosts[h]
            if host.connections == 0 { return host.released ? perConnection : 1 }
            return perConnection * host.connections
        }

        mutating func start() {
            for h in hosts.indices { refill(h) }
        }

        /// Starts host `h`'s next requests while its window allows; opens one more connection when
        /// the host's connections are full, requests are waiting and the host may have more.
        mutating func refill(_ h: Int) {
            while hosts[h].next < hosts[h].pending.count, hosts[h].inFlight < window(h) {
                let i = hosts[h].pending[hosts[h].next]
                hosts[h].next += 1
                if hosts[h].connections == 0 && !hosts[h].released { hosts[h].opener = i }
                launch(i, h)
            }
            let host = hosts[h]
            let full = host.connections > 0 && host.inFlight >= window(h)
            if full, host.opener == nil, host.next < host.pending.count,
               host.connections < max(1, client.configuration.maxHostConnections) {
                let i = host.pending[host.next]
                hosts[h].next += 1
                hosts[h].opener = i
                launch(i, h)
            }
        }

        mutating func launch(_ i: Int, _ h: Int) {
            do {
                let easy = try client.checkOutHandle()
                do {
                    try easy.prepare(requests[i])
                    try client.multi.add(easy)
                } catch {
                    client.checkIn(easy)
                    throw error
                }
                active[easy.key] = (i, easy)
                hosts[h].inFlight += 1
                client.stats.transfersStarted += 1
                client.stats.maxInFlightPerHost = max(client.stats.maxInFlightPerHost, hosts[h].inFlight)
                startedSinceWrite = true
            } catch {
                outcomes[i] = .notSent("\(error)")
            }
        }

        var unfinished: Bool { !active.isEmpty || hosts.contains { $0.next < $0.pending.count } }

        mutating func finish() -> [HTTPOutcome] {
            var released = false
            var spins = 0  // performs in a row without a wait (bounded: never a busy loop)
            while unfinished {
                // Corked on every round with several transfers: libcurl writes a stream's HEADERS when
                // it starts and its DATA on a later round, so later rounds write as much as the first.
                // A lone transfer writes one or two small frames a round: two setsockopt calls a round
                // would cost it more than the segment they save.
                if client.configuration.corkWrites && active.count > 1 {
                    client.multi.cork(true)
                    _ = client.multi.perform()
                    client.multi.cork(false)
                } else {
                    _ = client.multi.perform()
                }
                startedSinceWrite = false
                while let done = client.multi.nextFinished() {
                    guard let entry = active.removeValue(forKey: done.easy) else { continue }
                    complete(entry.index, entry.easy, result: done.result)
                }
                let clock = HTTP2Client.monotonicMillis()
                if !released && clock >= releaseAt {
                    released = true
                    for h in hosts.indices where !hosts[h].released {
                        hosts[h].released = true
                        refill(h)
                    }
                }
                if !unfinished { break }
                if clock > giveUpAt {
                    for (_, entry) in active {
                        client.multi.remove(entry.easy)
                        client.checkIn(entry.easy)
                        outcomes[entry.index] = .timeout("deadline passed without an answer")
                    }
                    active.removeAll()
                    break
                }
                if startedSinceWrite { continue }  // send what was just started before waiting
                // A transfer that read its last frame ends on the next perform: libcurl asks for it
                // with a zero timeout, and a poll would only return at once.
                if spins < 2, client.multi.timeoutMillis() == 0 {
                    spins += 1
                    continue
                }
                spins = 0
                client.stats.waits += 1
                client.multi.poll(timeoutMillis: 20)
            }
            return outcomes.map { $0 ?? .notSent("not started") }
        }

        mutating func complete(_ i: Int, _ easy: CurlEasy, result: CURLcode) {
            let opened = easy.newConnections
            client.stats.connectionsOpened += opened
            let outcome = HTTP2Client.classify(result, easy: easy)
            client.multi.remove(easy)
            client.checkIn(easy)
            outcomes[i] = outcome
            let h = hostOf[i]
            hosts[h].inFlight -= 1
            let key = hosts[h].key
            let idle = UInt64(max(0, client.configuration.maxIdleSeconds - 1)) * 1000
            if case .response = outcome {
                if hosts[h].connections == 0 {
                    hosts[h].connections = 1
                } else if hosts[h].opener == i && opened > 0 {
                    hosts[h].connections += 1  // it opened the next connection: fill it too
                }
                client.warm[key] = (HTTP2Client.monotonicMillis() + idle, hosts[h].connections)
            } else {
                // The connection may be gone: the next batch starts with one request alone; this one
                // goes on with full chunks (probing one request at a time would serialize failures).
                hosts[h].connections = 0
                client.warm[key] = nil
            }
            if hosts[h].opener == i { hosts[h].opener = nil }
            hosts[h].released = true
            refill(h)
        }
    }

    // MARK: - Handles

    private func checkOutHandle() throws -> CurlEasy {
        if let easy = idleHandles.popLast() { return easy }
        stats.handlesCreated += 1
        return try CurlEasy.make(config: configuration, sockets: multi.sockets)
    }

    private func checkIn(_ easy: CurlEasy) {
        // Keep as many handles as a full batch uses at most; the rest are freed.
        let keep = configuration.curlStreamsPerConnection * max(1, configuration.maxHostConnections) + 1
        if idleHandles.count < keep { idleHandles.append(easy) }
    }

    // MARK: - Helpers

    /// `scheme://authority` of an absolute URL, as written (the key for chunks and warm-up
    /// bookkeeping only; libcurl parses the URL itself). The whole text when it has no `://`.
    static func hostKey(_ url: String) -> String {
        let utf8 = url.utf8
        var i = utf8.startIndex
        var colons = 0
        while i != utf8.endIndex {
            let byte = utf8[i]
            if colons == 0 {
                if byte == UInt8(ascii: ":") { colons = 1 }
            } else if colons < 3 {
                guard byte == UInt8(ascii: "/") else { return url }
                colons += 1
            } else if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                return String(url[..<i])
            }
            i = utf8.index(after: i)
        }
        return url
    }

    fileprivate static func monotonicMillis() -> UInt64 { DispatchTime.now().uptimeNanoseconds / 1_000_000 }

    /// Maps a finished transfer to an outcome (a reset, refused stream or GOAWAY is retryable on a new
    /// connection). Shared with `HTTPTransferPool`.
    static func classify(_ result: CURLcode, easy: CurlEasy) -> HTTPOutcome {
        if result == CURLE_OK || (result == CURLE_WRITE_ERROR && easy.bodyTruncated && easy.status > 0
                                  && easy.stopsPastResponseCap) {
            // A transfer stopped past the answer cap still has its status and first bytes.
            return .response(HTTPResponse(status: easy.status, headers: easy.responseHeaders(), body: easy.body,
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

extension HTTPClientConfiguration {
    /// The libcurl client's streams per connection and chunk size: `maxStreamsPerConnection`, or 100.
    var curlStreamsPerConnection: Int { max(1, maxStreamsPerConnection ?? 100) }
}
