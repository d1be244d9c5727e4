import Foundation
internal import CNGHTTP2

/// One `NGHTTP2Client.perform` call: the requests grouped by host, each one's stream state and
/// answer, and the loop that submits, writes, waits (`poll`) and reads until every request has an
/// outcome (docs/bench.md "Provider clients"; RFC 9113).
///
/// - A host's requests go to its connections up to each one's stream capacity (the server's
///   SETTINGS_MAX_CONCURRENT_STREAMS, one stream before its SETTINGS arrived); the next request
///   starts as soon as a stream closes. When every connection of the host is past its first answer
///   and full, and `maxHostConnections` allows, one more is opened (its chunk follows its SETTINGS).
/// - A stream refused unprocessed (RST_STREAM REFUSED_STREAM, or above a GOAWAY's last-stream-id)
///   is sent again, on another connection if need be, at most `maxRefusals` times; streams at or
///   below the last-stream-id keep their connection until they end or it closes.
/// - Deadlines: a request has `timeoutMillis` from the start of `perform`, waiting included. Past it,
///   a request never sent is `.notSent`, a sent one is reset (CANCEL) and `.timeout`; a connection
///   that read nothing since that request went out takes no new stream (it stalled).
final class H2Batch {
    enum Phase: UInt8 { case pending, inFlight, done }

    /// Per request.
    struct Slot {
        var host = 0
        var path = 0..<0
        var phase = Phase.pending
        var connection = -1
        var stream: Int32 = 0
        var attempts = 0
        var deadline: UInt64 = 0
        /// The connection's `reads` when the stream was opened.
        var readsAtSend: UInt64 = 0
        var bodyOffset = 0
        var status = 0
        var ended = false
        var truncated = false
        var headers: [String: String] = [:]
        var body: [UInt8] = []
    }

    /// Per host: its pool and the queue of requests waiting for a stream.
    struct Host {
        let pool: H2HostPool
        var queue: [Int] = []
        var next = 0
        var waiting = 0
    }

    /// Times one request is sent again after the server refused it unprocessed.
    static let maxRefusals = 3

    unowned let client: NGHTTP2Client
    let requests: [HTTPRequest]
    private(set) var outcomes: [HTTPOutcome?]
    private var slots: [Slot]
    private var hosts: [Host] = []
    private var unfinished: Int
    private var nextDeadline = UInt64.max
    private let maxBody: Int

    init(client: NGHTTP2Client, requests: [HTTPRequest], now: UInt64) {
        self.client = client
        self.requests = requests
        outcomes = [HTTPOutcome?](repeating: nil, count: requests.count)
        slots = [Slot](repeating: Slot(), count: requests.count)
        unfinished = requests.count
        maxBody = max(0, client.configuration.maxResponseBodyBytes)
        for i in requests.indices { place(i, now: now) }
    }

    private func place(_ i: Int, now: UInt64) {
        let deadline = now + UInt64(max(1, requests[i].timeoutMillis))
        slots[i].deadline = deadline
        nextDeadline = min(nextDeadline, deadline)
        guard requests[i].resolve.isEmpty else {
            return finish(i, .notSent("pinned resolutions (HTTPRequest.resolve) are for the libcurl client"))
        }
        var url = requests[i].url
        let pool: H2HostPool? = url.withUTF8 { u in
            guard let (authority, path) = H2Batch.split(u) else { return nil }
            slots[i].path = path
            return client.pool(for: UnsafeBufferPointer(rebasing: u[authority]))
        }
        guard let pool else { return finish(i, .notSent("not an https URL with a host: \(requests[i].url.prefix(80))")) }
        let h = hosts.firstIndex { $0.pool === pool } ?? {
            // Each batch tries the host's connections afresh: the three failed connections that
            // fail a batch's waiting requests count within one batch, so a host that comes back is
            // reached by the next batch (the outage probe of R-KIND-4) rather than never again.
            pool.failuresInARow = 0
            hosts.append(Host(pool: pool))
            return hosts.count - 1
        }()
        slots[i].host = h
        enqueue(i)
    }

    private static let httpsScheme = Array("https://".utf8)
    private static let statusName = Array(":status".utf8)

    /// `https://authority/path...`: the authority's and the path's byte ranges (path without the fragment).
    static func split(_ u: UnsafeBufferPointer<UInt8>) -> (Range<Int>, Range<Int>)? {
        let scheme = httpsScheme
        guard u.count > scheme.count else { return nil }
        for k in scheme.indices where u[k] | (k < 5 ? 0x20 : 0) != scheme[k] { return nil }
        var end = scheme.count
        while end < u.count, u[end] != UInt8(ascii: "/"), u[end] != UInt8(ascii: "?"), u[end] != UInt8(ascii: "#") { end += 1 }
        var pathEnd = end
        while pathEnd < u.count, u[pathEnd] != UInt8(ascii: "#") { pathEnd += 1 }
        guard end > scheme.count else { return nil }
        return (scheme.count..<end, end..<pathEnd)
    }

    // MARK: - The loop

    func run() {
        for h in hosts.indices { for conn in hosts[h].pool.connections { conn.batch = self } }
        while true {
            let now = h2Millis()
            reap(now)
            if now >= nextDeadline { expire(now) }
            if unfinished == 0 { break }
            for h in hosts.indices where hosts[h].waiting > 0 { schedule(h, now) }
            for h in hosts.indices { for conn in hosts[h].pool.connections { conn.flush() } }
            reap(now)
            if unfinished == 0 { break }
            wait(now)
        }
        for h in hosts.indices {
            for conn in hosts[h].pool.connections {
                conn.flush()  // resets of timed-out streams
                conn.batch = nil
            }
        }
    }

    private func schedule(_ h: Int, _ now: UInt64) {
        let pool = hosts[h].pool
        let lifetime = UInt64(max(0, client.configuration.maxConnectionLifetimeSeconds)) * 1000
        for conn in pool.connections where conn.usable {
            if lifetime > 0 && now - conn.openedAt >= lifetime {
                conn.draining = true
                continue
            }
            if conn.settingsReceived {
                client.stats.largestServerStreamLimit = max(client.stats.largestServerStreamLimit, conn.serverStreamLimit)
            }
            var room = conn.streamCapacity - conn.inFlight
            while room > 0, let i = nextWaiting(h) {
                if submit(i, on: conn, now) { room -= 1 }
            }
            if hosts[h].waiting == 0 { break }
        }
        client.stats.maxInFlightPerHost = max(client.stats.maxInFlightPerHost, pool.inFlight)
        if hosts[h].waiting > 0 { openIfNeeded(h, now) }
    }

    private func nextWaiting(_ h: Int) -> Int? {
        while hosts[h].next < hosts[h].queue.count {
            let i = hosts[h].queue[hosts[h].next]
            hosts[h].next += 1
            if slots[i].phase == .pending {
                hosts[h].waiting -= 1
                return i
            }
        }
        return nil
    }

    /// Opens one more connection for host `h` when every live one is past its first answer and full.
    private func openIfNeeded(_ h: Int, _ now: UInt64) {
        let pool = hosts[h].pool
        var live = 0
        for conn in pool.connections where conn.state != .closed && conn.failure == nil && !conn.draining {
            live += 1
            if conn.state != .ready || !conn.answered || conn.inFlight < conn.streamCapacity { return }
        }
        guard live < max(1, client.configuration.maxHostConnections) else { return }
        if live == 0 && pool.failuresInARow >= 3 {
            return failWaiting(h, .notSent("\(pool.failuresInARow) connections in a row failed: \(pool.lastFailure)"))
        }
        guard client.makeRoomForConnection(besides: pool) else { return }
        client.openConnection(in: pool, now: now).batch = self
    }

    private func submit(_ i: Int, on conn: H2Connection, _ now: UInt64) -> Bool {
        guard let session = conn.session else { return false }
        let hasBody = !requests[i].body.isEmpty
        var provider = nghttp2_data_provider()
        provider.read_callback = h2ReadBody
        let userData = UnsafeMutableRawPointer(bitPattern: i + 1)
        let count = client.buildHeaders(requests[i], path: slots[i].path, authority: conn.pool.authority)
        let stream = withUnsafePointer(to: &provider) { p in
            nghttp2_submit_request(session, nil, client.nva, count, hasBody ? p : nil, userData)
        }
        if stream < 0 {
            if stream == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED.rawValue || stream == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                conn.draining = true
                enqueue(i)
            } else {
                finish(i, .notSent("HTTP/2: cannot open a stream: \(String(cString: nghttp2_strerror(stream)))"))
            }
            return false
        }
        slots[i].phase = .inFlight
        slots[i].connection = conn.id
        slots[i].stream = stream
        slots[i].readsAtSend = conn.reads
        slots[i].attempts += 1
        (slots[i].bodyOffset, slots[i].status, slots[i].ended, slots[i].truncated) = (0, 0, false, false)
        conn.inFlight += 1
        conn.lastUsedAt = now
        client.stats.transfersStarted += 1
        return true
    }

    private func enqueue(_ i: Int) {
        slots[i].phase = .pending
        hosts[slots[i].host].queue.append(i)
        hosts[slots[i].host].waiting += 1
    }

    private func finish(_ i: Int, _ outcome: HTTPOutcome) {
        guard slots[i].phase != .done else { return }
        outcomes[i] = outcome
        slots[i].phase = .done
        unfinished -= 1
    }

    private func failWaiting(_ h: Int, _ outcome: HTTPOutcome) {
        while let i = nextWaiting(h) { finish(i, outcome) }
    }

    /// Closes connections that failed (their streams fail or, above a GOAWAY's last-stream-id, are
    /// sent again), that did not connect in time, or that drained.
    private func reap(_ now: UInt64) {
        for h in hosts.indices {
            let pool = hosts[h].pool
            for conn in pool.connections where conn.state != .closed {
                if conn.failure == nil, conn.state != .ready, now >= conn.connectDeadline {
                    conn.failure = "no connection to \(pool.authorityText) within \(client.configuration.connectTimeoutMillis) ms"
                }
                if let why = conn.failure {
                    fail(conn, why)
                } else if conn.draining && conn.inFlight == 0 && conn.state == .ready {
                    conn.close(graceful: true)
                }
            }
            pool.compact()
        }
    }

    private func fail(_ conn: H2Connection, _ why: String) {
        let beforeReady = conn.state != .ready
        if !beforeReady {
            for i in slots.indices where slots[i].phase == .inFlight && slots[i].connection == conn.id {
                if let last = conn.goawayLastStreamId, slots[i].stream > last {
                    refused(i, why)
                } else {
                    finish(i, .connectionError(why))
                }
            }
        }
        conn.close(graceful: false)
        let pool = conn.pool
        if conn.responses == 0 { pool.failuresInARow += 1 }
        pool.lastFailure = why
        guard pool.liveConnections == 0, beforeReady || pool.failuresInARow >= 3 else { return }
        for h in hosts.indices where hosts[h].pool === pool { failWaiting(h, .notSent(why)) }
    }

    /// The server did not process request `i`'s stream: send it again, or give up after `maxRefusals`.
    private func refused(_ i: Int, _ why: String) {
        guard slots[i].attempts <= H2Batch.maxRefusals else {
            return finish(i, .notSent("refused unprocessed \(slots[i].attempts) times: \(why)"))
        }
        client.stats.streamsRetried += 1
        enqueue(i)
    }

    private func expire(_ now: UInt64) {
        var next = UInt64.max
        for i in slots.indices where slots[i].phase != .done {
            guard slots[i].deadline <= now else {
                next = min(next, slots[i].deadline)
                continue
            }
            let millis = requests[i].timeoutMillis
            if slots[i].phase == .inFlight {
                if let conn = hosts[slots[i].host].pool.connections.first(where: { $0.id == slots[i].connection }) {
                    conn.cancel(stream: slots[i].stream)
                    if conn.reads == slots[i].readsAtSend { conn.draining = true }  // read nothing since: stalled
                }
                finish(i, .timeout("no answer within \(millis) ms"))
            } else {
                hosts[slots[i].host].waiting -= 1
                finish(i, .notSent("no connection or stream became available within \(millis) ms"))
            }
        }
        nextDeadline = next
    }

    private func wait(_ now: UInt64) {
        var until = nextDeadline
        var failed = false
        client.pollFDs.removeAll(keepingCapacity: true)
        client.pollConnections.removeAll(keepingCapacity: true)
        for h in hosts.indices {
            for conn in hosts[h].pool.connections {
                if conn.state != .ready { until = min(until, conn.connectDeadline) }
                failed = failed || conn.failure != nil
                guard let (fd, events) = conn.pollEvents else { continue }
                client.pollFDs.append(pollfd(fd: fd, events: events, revents: 0))
                client.pollConnections.append(conn)
            }
        }
        let timeout = failed || until <= now ? 0 : Int32(min(1000, until - now))
        client.stats.waits += 1
        guard client.pollReady(timeoutMillis: timeout) else { return }
        let readAt = h2Millis()
        for k in client.pollConnections.indices {
            let revents = client.pollFDs[k].revents
            guard revents != 0 else { continue }
            let conn = client.pollConnections[k]
            if conn.state == .connecting {
                conn.connectProgressed()
            } else if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                client.read(conn, now: readAt)
            }
        }
    }

    // MARK: - Stream events (from the nghttp2 callbacks)

    @inline(__always) private func current(_ i: Int, _ conn: H2Connection, _ stream: Int32) -> Bool {
        i >= 0 && i < slots.count && slots[i].phase == .inFlight && slots[i].connection == conn.id && slots[i].stream == stream
    }

    func header(_ i: Int, conn: H2Connection, stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard current(i, conn, stream), !name.isEmpty else { return }
        if name[0] == UInt8(ascii: ":") {
            guard value.count == 3, name.count == 7,
                  H2Batch.statusName.withUnsafeBufferPointer({ memcmp($0.baseAddress!, name.baseAddress!, 7) == 0 }) else { return }
            let code = value.reduce(0) { $0 * 10 + Int($1 &- UInt8(ascii: "0")) }
            if (100..<200).contains(code) {
                slots[i].headers = [:]  // informational: the final answer follows
            } else {
                slots[i].status = code
            }
            return
        }
        let key = String(decoding: name, as: UTF8.self)
        if slots[i].headers.isEmpty { slots[i].headers.reserveCapacity(4) }
        if slots[i].headers[key] == nil { slots[i].headers[key] = String(decoding: value, as: UTF8.self) }
    }

    func bodyChunk(_ i: Int, conn: H2Connection, stream: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard current(i, conn, stream) else { return }
        let room = maxBody - slots[i].body.count
        if data.count <= room {
            slots[i].body.append(contentsOf: data)
        } else {
            if room > 0 { slots[i].body.append(contentsOf: UnsafeBufferPointer(rebasing: data[..<room])) }
            slots[i].truncated = true
        }
    }

    func streamEnded(_ i: Int, conn: H2Connection, stream: Int32) {
        if current(i, conn, stream) { slots[i].ended = true }
    }

    func streamClosed(_ i: Int, conn: H2Connection, stream: Int32, errorCode: UInt32) {
        guard current(i, conn, stream) else { return }
        if errorCode == NGHTTP2_NO_ERROR.rawValue && slots[i].ended && slots[i].status >= 200 {
            let headers = slots[i].headers, body = slots[i].body
            (slots[i].headers, slots[i].body) = ([:], [])
            conn.responses += 1
            conn.pool.failuresInARow = 0
            return finish(i, .response(HTTPResponse(status: slots[i].status, headers: headers, body: body,
                                                    bodyTruncated: slots[i].truncated, httpVersion: 2)))
        }
        (slots[i].headers, slots[i].body) = ([:], [])
        if errorCode == NGHTTP2_REFUSED_STREAM.rawValue || (conn.goawayLastStreamId.map { stream > $0 } ?? false) {
            return refused(i, errorCode == NGHTTP2_REFUSED_STREAM.rawValue ? "RST_STREAM REFUSED_STREAM"
                                                                           : "above GOAWAY's last stream (\(conn.goawayDetail))")
        }
        if errorCode == NGHTTP2_NO_ERROR.rawValue {
            return finish(i, .connectionError(slots[i].status == 0 ? "stream ended without a :status" : "stream ended before the answer was complete"))
        }
        finish(i, .connectionError("stream reset: \(String(cString: nghttp2_http2_strerror(errorCode)))"))
    }

    /// Copies request `i`'s body from its offset; returns the bytes written and whether the body is done.
    func readBody(_ i: Int, conn: H2Connection, stream: Int32, into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> (Int, Bool) {
        guard current(i, conn, stream) else { return (0, true) }
        let offset = slots[i].bodyOffset
        let n = requests[i].body.withUnsafeBufferPointer { body -> Int in
            let n = min(capacity, body.count - offset)
            if n > 0, let base = body.baseAddress { buffer.update(from: base + offset, count: n) }
            return max(0, n)
        }
        slots[i].bodyOffset = offset + n
        return (n, offset + n >= requests[i].body.count)
    }
}
