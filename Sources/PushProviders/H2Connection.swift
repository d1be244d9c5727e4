import Foundation
internal import CNGHTTP2

/// Monotonic milliseconds (CLOCK_MONOTONIC).
@inline(__always) func h2Millis() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
}

/// One HTTP/2 connection of an `NGHTTP2Client`: a non-blocking TCP socket, TLS over memory BIOs
/// (`H2TLSSession`) and an nghttp2 client session fed with `nghttp2_session_mem_recv` and drained
/// with `nghttp2_session_mem_send`, so that every frame of a round leaves in one `send`.
/// Not thread-safe: the client's lock guards it. The nghttp2 callbacks (`H2Callbacks`) reach it
/// through the session's user data and hand stream events to the batch in progress (`batch`).
final class H2Connection {
    enum State { case connecting, handshaking, ready, closed }

    let id: Int
    unowned let pool: H2HostPool
    private(set) var state: State = .connecting
    private var fd: Int32 = -1
    private var tls: H2TLSSession?
    private(set) var session: OpaquePointer?
    let openedAt: UInt64
    let connectDeadline: UInt64
    /// Last time bytes arrived.
    var lastReadAt: UInt64
    /// Reads that returned bytes (a stream that saw none since it was sent stalled with its connection).
    private(set) var reads: UInt64 = 0
    /// Last time a stream started or ended.
    var lastUsedAt: UInt64
    /// The server's first SETTINGS frame arrived (until then one stream at most).
    var settingsReceived = false
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited reads as 2^31 - 1).
    var serverStreamLimit = 1
    /// A GOAWAY's last-stream-id: streams above it were not processed (RFC 9113 §6.8).
    var goawayLastStreamId: Int32?
    /// The GOAWAY's error code and debug data, for error texts.
    var goawayDetail = ""
    /// Takes no new stream (GOAWAY received, lifetime passed, or it stalled); closed once idle.
    var draining = false
    /// Streams of ours the session has not closed yet.
    var inFlight = 0
    /// Streams that ended with a full response on this connection.
    var responses = 0
    /// A stream of this connection has ended (the warm-up is over).
    var answered = false
    /// When the unanswered keep-alive PING was sent.
    var pingSentAt: UInt64?
    /// Why the connection cannot go on (set by I/O or a callback; the batch or the upkeep closes it).
    var failure: String?
    /// The batch using the connection now (nil between batches: stream events are then ignored).
    var batch: H2Batch?
    private var out = ByteBuffer(capacity: 16 * 1024)
    private var outSent = 0
    private var plain = ByteBuffer(capacity: 16 * 1024)
    private var addresses: [(sockaddr_storage, socklen_t)] = []
    private var addressIndex = 0
    private var connectError = ""
    private let configuration: HTTPClientConfiguration

    /// Starts connecting to `pool`'s host (DNS is resolved here, blocking); a failure is left in `failure`.
    init(id: Int, pool: H2HostPool, configuration: HTTPClientConfiguration, now: UInt64) {
        self.id = id
        self.pool = pool
        self.configuration = configuration
        openedAt = now
        lastReadAt = now
        lastUsedAt = now
        connectDeadline = now + UInt64(max(1, configuration.connectTimeoutMillis))
        resolve()
        if failure == nil { connectNext() }
    }

    deinit {
        close(graceful: false)
        out.deallocate()
        plain.deallocate()
    }

    /// The socket to poll and the events wanted; nil once closed.
    var pollEvents: (fd: Int32, events: Int16)? {
        guard state != .closed, fd >= 0 else { return nil }
        if state == .connecting { return (fd, Int16(POLLOUT)) }
        return (fd, Int16(POLLIN) | (outSent < out.count ? Int16(POLLOUT) : 0))
    }

    /// Streams this connection may carry at once: the server's limit (one until its SETTINGS came), capped.
    var streamCapacity: Int {
        guard settingsReceived else { return 1 }
        return min(serverStreamLimit, max(1, configuration.maxStreamsPerConnection ?? 1000))
    }

    /// Ready, not draining, not failed: may take new streams.
    var usable: Bool { state == .ready && !draining && failure == nil }

    // MARK: - Connecting

    private func resolve() {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(pool.host, String(pool.port), &hints, &list)
        guard rc == 0, let first = list else {
            failure = "cannot resolve \(pool.host): \(String(cString: gai_strerror(rc)))"
            return
        }
        defer { freeaddrinfo(first) }
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            var storage = sockaddr_storage()
            if let addr = ai.pointee.ai_addr, Int(ai.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: Int(ai.pointee.ai_addrlen))) }
                addresses.append((storage, ai.pointee.ai_addrlen))
            }
            next = ai.pointee.ai_next
        }
        if addresses.isEmpty { failure = "no address for \(pool.host)" }
    }

    /// Tries the addresses in order until one connects or is in progress.
    private func connectNext() {
        while addressIndex < addresses.count {
            var (storage, length) = addresses[addressIndex]
            let family = Int32(storage.ss_family)
            let s = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard s >= 0 else {
                connectError = "socket: \(String(cString: strerror(errno)))"
                addressIndex += 1
                continue
            }
            var one: Int32 = 1, keep = Int32(max(1, configuration.tcpKeepAliveSeconds))
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(s, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &keep, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(s, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &keep, socklen_t(MemoryLayout<Int32>.size))
            let rc = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(s, $0, length) }
            }
            fd = s
            if rc == 0 { return startTLS() }
            if errno == EINPROGRESS { state = .connecting; return }
            connectError = "connect to \(pool.authorityText): \(String(cString: strerror(errno)))"
            Glibc.close(s)
            fd = -1
            addressIndex += 1
        }
        failure = connectError.isEmpty ? "cannot connect to \(pool.authorityText)" : connectError
    }

    /// The socket became writable (or failed) while connecting.
    func connectProgressed() {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        if error == 0 { return startTLS() }
        connectError = "connect to \(pool.authorityText): \(String(cString: strerror(error)))"
        Glibc.close(fd)
        fd = -1
        addressIndex += 1
        connectNext()
    }

    private func startTLS() {
        do {
            tls = try H2TLSSession(context: pool.tls, host: pool.host, isIPLiteral: pool.isIPLiteral)
        } catch {
            failure = "\(error)"
            return
        }
        state = .handshaking
        stepHandshake()
    }

    private func stepHandshake() {
        guard let tls else { return }
        let step = tls.handshake()
        tls.drain(into: &out)
        sendOut()
        switch step {
        case .done: startSession()
        case .wantRead: return
        case .closed: failure = "TLS handshake: connection closed by the server"
        case .failed(let why): failure = why
        }
    }

    private func startSession() {
        var created: OpaquePointer?
        guard nghttp2_session_client_new2(&created, pool.template.callbacks, Unmanaged.passUnretained(self).toOpaque(),
                                          pool.template.option) == 0, let session = created else {
            failure = "HTTP/2: cannot create a session"
            return
        }
        self.session = session
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
                        nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                               value: UInt32(NGHTTP2Client.streamWindowBytes))]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        state = .ready
    }

    // MARK: - I/O

    /// Reads what the socket holds, advances the handshake or feeds the session (callbacks run here).
    /// `scratch` and `plainScratch` are the client's buffers of `capacity` bytes each.
    func readable(now: UInt64, scratch: UnsafeMutableRawPointer, plainScratch: UnsafeMutableRawPointer, capacity: Int) {
        guard state == .handshaking || state == .ready, let tls else { return }
        var eof = false
        for _ in 0..<4 {
            let n = recv(fd, scratch, capacity, 0)
            if n > 0 {
                tls.feed(scratch, n)
                lastReadAt = now
                reads &+= 1
                if n < capacity { break }
            } else if n == 0 {
                eof = true
                break
            } else {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { failure = "recv: \(String(cString: strerror(errno)))" }
                break
            }
        }
        if state == .handshaking {
            stepHandshake()
            guard state == .ready else {
                if eof && failure == nil { failure = "connection closed by the server during the TLS handshake" }
                return
            }
        }
        while failure == nil, let session {
            let (count, step) = tls.read(into: plainScratch, capacity: capacity)
            if count > 0 {
                let used = nghttp2_session_mem_recv(session, plainScratch.assumingMemoryBound(to: UInt8.self), count)
                if used < 0 { failure = "HTTP/2: \(String(cString: nghttp2_strerror(Int32(used))))" }
                continue
            }
            switch step {
            case .closed: eof = true
            case .failed(let why): failure = why
            case .done, .wantRead: break
            }
            break
        }
        if eof && failure == nil { failure = closedText }
    }

    private var closedText: String {
        goawayLastStreamId == nil ? "connection closed by the server"
            : "connection closed by the server after GOAWAY (\(goawayDetail)) before the answer"
    }

    /// Writes every frame the session has ready (one TLS write, one `send`); keeps what the socket refused.
    func flush() {
        guard failure == nil else { return }
        guard state == .ready, let session, let tls else { return sendOut() }  // handshake bytes the socket refused
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                failure = "HTTP/2: \(String(cString: nghttp2_strerror(Int32(n))))"
                return
            }
            if n == 0 { break }
            plain.append(UnsafeRawBufferPointer(start: data, count: n))
            if plain.count >= 256 * 1024 { encrypt(tls) }
        }
        encrypt(tls)
        sendOut()
    }

    private func encrypt(_ tls: H2TLSSession) {
        guard plain.count > 0, failure == nil else { return }
        if case .failed(let why) = tls.write(plain.base, plain.count) { failure = why }
        plain.count = 0
        tls.drain(into: &out)
    }

    private func sendOut() {
        guard fd >= 0 else { return }
        while outSent < out.count {
            let n = send(fd, out.base + outSent, out.count - outSent, Int32(MSG_NOSIGNAL))
            if n > 0 {
                outSent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK { failure = "send: \(String(cString: strerror(errno)))" }
                return
            }
        }
        out.count = 0
        outSent = 0
    }

    /// Sends a keep-alive PING.
    func ping(now: UInt64) {
        guard let session, state == .ready else { return }
        if nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 { pingSentAt = now }
    }

    /// Resets stream `streamId` (CANCEL): its request timed out.
    func cancel(stream streamId: Int32) {
        guard let session else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamId, UInt32(NGHTTP2_CANCEL.rawValue))
    }

    /// Closes the connection; `graceful` first sends GOAWAY (NO_ERROR) and TLS close_notify.
    func close(graceful: Bool) {
        guard state != .closed else { return }
        batch = nil
        if graceful, failure == nil, let session, let tls {
            nghttp2_session_terminate_session(session, UInt32(NGHTTP2_NO_ERROR.rawValue))
            flush()
            tls.shutdown()
            tls.drain(into: &out)
            sendOut()
        }
        if let session { nghttp2_session_del(session) }
        session = nil
        tls = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        inFlight = 0
        state = .closed
    }
}
