import Dispatch
import Foundation
internal import CNGHTTP2

/// Sends batches of HTTPS requests over persistent, multiplexed HTTP/2 connections, driving nghttp2
/// (the HTTP/2 library libcurl itself uses) over OpenSSL 3.0 directly: issue 18 measured libcurl's
/// per-transfer machinery (an HTTP/1 request built and re-parsed per transfer, a URL parse, a poll of
/// every transfer per round, one TLS record and `send` per frame) at about ten times the cost of the
/// HTTP/2 work itself (docs/bench.md "Provider clients"). APNs and FCM use this client; Web Push stays
/// on `HTTP2Client` (libcurl, pinned resolutions), which is also the fallback
/// (`HTTPClientConfiguration.transport`).
///
/// Same contract as `HTTP2Client`: `perform` blocks the calling thread (a `poll` loop, never Swift's
/// cooperative pool) until every request has an outcome, in order; the outcomes mean the same
/// (`HTTPOutcome`). What it does (RFC 9113; Apple's "Sending notification requests to APNs"):
/// - TLS 1.2+ with ALPN `h2`, the chain verified against `caFile` or the system store and the host
///   name (or IP) checked; never switched off (`H2TLSContext`).
/// - A pool per `https://authority`: at most `maxHostConnections` connections (`maxTotalConnections`
///   over all hosts, the least recently used idle one of another host closed to make room), closed
///   when idle for `maxIdleSeconds`, given no new stream after `maxConnectionLifetimeSeconds`; a
///   background upkeep every `upkeepIntervalMillis` sends HTTP/2 PINGs on idle connections and closes
///   those whose PING went unanswered (`DispatchSourceTimer`; it skips a tick while a batch runs).
/// - The server's real SETTINGS_MAX_CONCURRENT_STREAMS per connection (one stream until the server's
///   SETTINGS came; APNs raises its limit after the first request with a valid token), capped by
///   `maxStreamsPerConnection`; chunks on several connections when a batch is larger (`H2Batch`).
/// - GOAWAY: streams above its last-stream-id are sent again on a new connection, the others finish
///   on the old one; REFUSED_STREAM likewise; other resets and a lost connection are
///   `.connectionError`; deadlines per request; response bodies capped at `maxResponseBodyBytes`.
/// - Per request no allocation of its own beyond the answer it returns: headers are written into
///   one reused buffer (nghttp2 copies them with the stream), bodies are copied straight into
///   nghttp2's frames, every frame of a round goes out in one TLS write and one `send`.
///
/// Thread-safe: concurrent `perform` calls are serialized by a lock. Connects directly (no proxy).
public final class NGHTTP2Client: HTTPTransport, @unchecked Sendable {
    /// Connection and safety limits (see `HTTPClientConfiguration`).
    public typealias Configuration = HTTPClientConfiguration

    /// The stream flow-control window this client announces (SETTINGS_INITIAL_WINDOW_SIZE, 1 MiB;
    /// the connection window is 16 MiB): answers are small, and a window that never closes saves
    /// WINDOW_UPDATE round trips.
    public static let streamWindowBytes = 1 << 20

    /// Limits in force.
    public let configuration: Configuration
    private let lock = NSLock()
    private let tls: H2TLSContext
    private let template: H2SessionTemplate
    private var pools: [H2HostPool] = []
    private var upkeepTimer: DispatchSourceTimer?
    private var nextConnectionID = 0
    /// Counters (updated by `H2Batch` under the lock).
    var stats = HTTPTransportStatistics()

    // Scratch reused by every batch (guarded by the lock).
    private let scratchCapacity = 64 * 1024
    private let readScratch: UnsafeMutableRawPointer
    private let plainScratch: UnsafeMutableRawPointer
    private var headerBytes = ByteBuffer(capacity: 4096)
    private var spans: [(name: Int, nameCount: Int, value: Int, valueCount: Int)] = []
    private(set) var nva: UnsafeMutablePointer<nghttp2_nv>
    private var nvaCapacity = 32
    var pollFDs: [pollfd] = []
    var pollConnections: [H2Connection] = []

    private init(configuration: Configuration, tls: H2TLSContext, template: H2SessionTemplate) {
        self.configuration = configuration
        self.tls = tls
        self.template = template
        readScratch = .allocate(byteCount: scratchCapacity, alignment: 16)
        plainScratch = .allocate(byteCount: scratchCapacity, alignment: 16)
        nva = .allocate(capacity: nvaCapacity)
    }

    deinit {
        upkeepTimer?.cancel()
        for pool in pools { for conn in pool.connections { conn.close(graceful: true) } }
        readScratch.deallocate()
        plainScratch.deallocate()
        headerBytes.deallocate()
        nva.deallocate()
    }

    /// Creates a client with its own connection pool (and its upkeep timer).
    /// - Throws: `HTTPClientError.caFileUnreadable` / `.caFileInvalid` for a bad `caFile`,
    ///   `.tlsInit` when OpenSSL or nghttp2 cannot be set up.
    public static func make(configuration: Configuration = Configuration()) throws -> NGHTTP2Client {
        let client = NGHTTP2Client(configuration: configuration, tls: try H2TLSContext(caFile: configuration.caFile),
                                   template: try H2SessionTemplate())
        let interval = configuration.upkeepIntervalMillis
        if interval > 0 {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pushfleet.nghttp2.upkeep"))
            timer.schedule(deadline: .now() + .milliseconds(interval), repeating: .milliseconds(interval),
                           leeway: .milliseconds(max(1, interval / 10)))
            timer.setEventHandler { [weak client] in client?.upkeep() }
            timer.resume()
            client.upkeepTimer = timer
        }
        return client
    }

    /// Connections opened since the client was created.
    public var connectionsOpened: Int { lock.withLock { stats.connectionsOpened } }

    /// Counters since creation.
    public var statistics: HTTPTransportStatistics { lock.withLock { stats } }

    /// Sends all `requests` concurrently and waits until each has an outcome (see the type's doc).
    /// - Returns: one outcome per request, in the same order. Never throws.
    public func perform(_ requests: [HTTPRequest]) -> [HTTPOutcome] {
        guard !requests.isEmpty else { return [] }
        lock.lock()
        defer { lock.unlock() }
        stats.requests += requests.count
        let now = h2Millis()
        tidy(now: now, keepAlive: false)
        let batch = H2Batch(client: self, requests: requests, now: now)
        batch.run()
        return batch.outcomes.map { $0 ?? .notSent("not started") }
    }

    // MARK: - Pools and connections (called by H2Batch under the lock)

    /// The pool of `authority`, made on first use; nil for an authority that names no host.
    func pool(for authority: UnsafeBufferPointer<UInt8>) -> H2HostPool? {
        if let pool = pools.first(where: { $0.matches(authority) }) { return pool }
        guard let pool = H2HostPool(authority: authority, tls: tls, template: template) else { return nil }
        pools.append(pool)
        return pool
    }

    func openConnection(in pool: H2HostPool, now: UInt64) -> H2Connection {
        nextConnectionID += 1
        stats.connectionsOpened += 1
        let conn = H2Connection(id: nextConnectionID, pool: pool, configuration: configuration, now: now)
        pool.connections.append(conn)
        return conn
    }

    /// True when one more connection fits `maxTotalConnections`, after closing the least recently
    /// used idle connection of another host if that is what it takes.
    func makeRoomForConnection(besides pool: H2HostPool) -> Bool {
        let open = pools.reduce(0) { $0 + $1.connections.filter { $0.state != .closed }.count }
        if open < max(1, configuration.maxTotalConnections) { return true }
        var victim: H2Connection?
        for other in pools where other !== pool {
            for conn in other.connections where conn.state == .ready && conn.inFlight == 0 && conn.batch == nil {
                if victim.map({ conn.lastUsedAt < $0.lastUsedAt }) ?? true { victim = conn }
            }
        }
        guard let victim else { return false }
        victim.close(graceful: true)
        victim.pool.compact()
        return true
    }

    /// Polls `pollFDs` (filled by the batch); true when some socket is ready.
    func pollReady(timeoutMillis: Int32) -> Bool {
        pollFDs.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMillis) } > 0
    }

    /// Reads what `conn`'s socket holds, through TLS into its session.
    func read(_ conn: H2Connection, now: UInt64) {
        conn.readable(now: now, scratch: readScratch, plainScratch: plainScratch, capacity: scratchCapacity)
    }

    // MARK: - Upkeep

    /// The background tick: reads what idle connections received (a GOAWAY, a PING), closes the
    /// idle, old, failed or silent ones, and PINGs those that read nothing for an interval.
    private func upkeep() {
        guard lock.try() else { return }  // a batch is running: it services its connections itself
        defer { lock.unlock() }
        tidy(now: h2Millis(), keepAlive: true)
    }

    /// Between batches: see `upkeep`; `keepAlive` sends the PINGs.
    private func tidy(now: UInt64, keepAlive: Bool) {
        let idle = UInt64(max(0, configuration.maxIdleSeconds)) * 1000
        let lifetime = UInt64(max(0, configuration.maxConnectionLifetimeSeconds)) * 1000
        let interval = UInt64(max(0, configuration.upkeepIntervalMillis))
        pollFDs.removeAll(keepingCapacity: true)
        pollConnections.removeAll(keepingCapacity: true)
        for pool in pools {
            for conn in pool.connections where conn.state == .ready && conn.failure == nil {
                guard let (fd, _) = conn.pollEvents else { continue }
                pollFDs.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
                pollConnections.append(conn)
            }
        }
        if !pollFDs.isEmpty && pollReady(timeoutMillis: 0) {
            for k in pollConnections.indices where pollFDs[k].revents != 0 { read(pollConnections[k], now: now) }
        }
        for pool in pools {
            for conn in pool.connections where conn.state != .closed {
                if conn.state != .ready {  // left connecting by an earlier batch
                    if conn.failure != nil || now >= conn.connectDeadline { conn.close(graceful: false) }
                    continue
                }
                if conn.failure != nil {
                    conn.close(graceful: false)
                    continue
                }
                guard conn.inFlight == 0 else { continue }
                let silent = conn.pingSentAt.map { now - $0 >= interval } ?? false
                if conn.draining || silent || now - conn.lastUsedAt >= idle || (lifetime > 0 && now - conn.openedAt >= lifetime) {
                    conn.close(graceful: !silent)
                    continue
                }
                if keepAlive && interval > 0 && conn.pingSentAt == nil && now - conn.lastReadAt >= interval { conn.ping(now: now) }
                conn.flush()
                if conn.failure != nil { conn.close(graceful: false) }
            }
            pool.compact()
        }
    }

    // MARK: - Request headers

    /// Writes `request`'s header block (pseudo-headers, its headers with names lower-cased, a
    /// `content-length` for a body unless it has one) into the reused buffer and fills `nva`.
    /// - Returns: the number of `nva` entries.
    func buildHeaders(_ request: HTTPRequest, path: Range<Int>, authority: [UInt8]) -> Int {
        headerBytes.count = 0
        spans.removeAll(keepingCapacity: true)
        field(":method") { $0.append(request.method) }
        field(":scheme") { $0.append("https") }
        field(":authority") { $0.append(authority) }
        var url = request.url
        url.withUTF8 { u in
            field(":path") { buffer in
                if path.isEmpty { buffer.append(UInt8(ascii: "/")) } else { buffer.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: u[path]))) }
            }
        }
        var hasLength = false
        for (name, value) in request.headers {
            let start = headerBytes.count
            field(name, lowercase: true) { $0.append(value) }
            hasLength = hasLength || (spans[spans.count - 1].nameCount == 14
                && memcmp(headerBytes.base + start, "content-length", 14) == 0)
        }
        if !request.body.isEmpty && !hasLength {
            field("content-length") { buffer in
                let count = request.body.count
                var width = 1, power = 10
                while power <= count { width += 1; power *= 10 }
                buffer.reserve(buffer.count + width)
                var n = count
                for k in stride(from: width - 1, through: 0, by: -1) {
                    buffer.base[buffer.count + k] = UInt8(ascii: "0") + UInt8(n % 10)
                    n /= 10
                }
                buffer.count += width
            }
        }
        if spans.count > nvaCapacity {
            nva.deallocate()
            nvaCapacity = spans.count * 2
            nva = .allocate(capacity: nvaCapacity)
        }
        let base = headerBytes.base
        for (k, s) in spans.enumerated() {
            nva[k].name = base + s.name
            nva[k].value = base + s.value
            nva[k].namelen = s.nameCount
            nva[k].valuelen = s.valueCount
            nva[k].flags = UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
        }
        return spans.count
    }

    private func field(_ name: String, lowercase: Bool = false, value: (inout ByteBuffer) -> Void) {
        let nameStart = headerBytes.count
        headerBytes.append(name)
        let nameCount = headerBytes.count - nameStart
        if lowercase {
            for k in nameStart..<headerBytes.count where headerBytes.base[k] >= 0x41 && headerBytes.base[k] <= 0x5A {
                headerBytes.base[k] += 32
            }
        }
        let valueStart = headerBytes.count
        value(&headerBytes)
        spans.append((nameStart, nameCount, valueStart, headerBytes.count - valueStart))
    }
}
