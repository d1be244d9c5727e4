internal import CCurl
internal import CPushShims

/// Owns one libcurl multi handle (`CURLM*`) and with it the connection pool: connections stay open
/// across batches while this object lives (Apple's "Sending notification requests to APNs": keep
/// connections open), and the set of their sockets (`cpush_socket_set`, filled by the easy handles'
/// socket callbacks) that `cork` works on. Freed in `deinit`. Not thread-safe: `HTTP2Client`
/// serializes every call.
final class CurlMulti {
    private let handle: UnsafeMutableRawPointer
    /// The open sockets of this multi's connections (easy handles made with it report to it).
    let sockets: OpaquePointer?

    private init(handle: UnsafeMutableRawPointer) {
        self.handle = handle
        sockets = cpush_socket_set_new()
    }

    deinit {
        curl_multi_cleanup(handle)  // closes the connections, through the set's close callback
        cpush_socket_set_free(sockets)
    }

    /// Creates a multi handle that multiplexes HTTP/2 streams (CURLPIPE_MULTIPLEX) with at most
    /// `maxHostConnections` connections per host and `maxTotalConnections` overall, and a cache of
    /// `maxTotalConnections` idle connections.
    /// - Throws: `HTTPClientError.curlInit`.
    static func make(maxHostConnections: Int, maxTotalConnections: Int, maxStreamsPerConnection: Int) throws -> CurlMulti {
        guard CurlGlobal.initialized, let raw = curl_multi_init() else {
            throw HTTPClientError.curlInit("curl_multi_init failed")
        }
        let multi = CurlMulti(handle: raw)
        try multi.set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, maxHostConnections)
        try multi.set(CURLMOPT_MAX_TOTAL_CONNECTIONS, maxTotalConnections)
        try multi.set(CURLMOPT_MAXCONNECTS, maxTotalConnections)
        try multi.set(CURLMOPT_MAX_CONCURRENT_STREAMS, maxStreamsPerConnection)
        return multi
    }

    private func set(_ option: CURLMoption, _ value: Int) throws {
        let code = cpush_multi_setopt_long(handle, option, value)
        guard code == CURLM_OK else {
            throw HTTPClientError.curlInit("curl_multi_setopt: \(String(cString: curl_multi_strerror(code)))")
        }
    }

    /// Starts driving `easy`. - Throws: `HTTPClientError.curlInit` if libcurl refuses it.
    func add(_ easy: CurlEasy) throws {
        let code = easy.withUnsafeHandle { curl_multi_add_handle(handle, $0) }
        guard code == CURLM_OK else {
            throw HTTPClientError.curlInit("curl_multi_add_handle: \(String(cString: curl_multi_strerror(code)))")
        }
    }

    /// Stops driving `easy` (its connection goes back to the pool).
    func remove(_ easy: CurlEasy) {
        _ = easy.withUnsafeHandle { curl_multi_remove_handle(handle, $0) }
    }

    /// Runs whatever can run without blocking; returns the number of transfers still running.
    func perform() -> Int {
        var running: Int32 = 0
        _ = curl_multi_perform(handle, &running)
        return Int(running)
    }

    /// Milliseconds until libcurl wants `perform` called even without socket activity (0 = now,
    /// -1 = no timer set): curl_multi_timeout.
    func timeoutMillis() -> Int {
        var ms = -1
        _ = curl_multi_timeout(handle, &ms)
        return ms
    }

    /// Waits up to `timeoutMillis` for socket activity or a libcurl timer.
    func poll(timeoutMillis: Int) {
        _ = curl_multi_poll(handle, nil, 0, Int32(timeoutMillis), nil)
    }

    /// Sets or clears TCP_CORK on every open connection of this multi: while corked, the frames
    /// libcurl writes (one TLS record per HEADERS or DATA frame) queue up and leave in full segments
    /// when uncorked. Callers always uncork before waiting.
    func cork(_ on: Bool) {
        if let sockets { _ = cpush_socket_set_cork(sockets, on ? 1 : 0) }
    }

    /// Open connections (sockets) of this multi.
    var openSockets: Int {
        sockets.map { Int(cpush_socket_set_count($0)) } ?? 0
    }

    /// Next finished transfer: its raw easy pointer (for identity only) and result code.
    func nextFinished() -> (easy: UnsafeMutableRawPointer, result: CURLcode)? {
        var queued: Int32 = 0
        while let msg = curl_multi_info_read(handle, &queued) {
            if msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle {
                return (easy, msg.pointee.data.result)
            }
        }
        return nil
    }
}
