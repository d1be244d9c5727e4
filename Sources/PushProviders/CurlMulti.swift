internal import CCurl
internal import CPushShims

/// Owns one libcurl multi handle (`CURLM*`) and with it the connection pool: connections stay open
/// across batches while this object lives (Apple's "Sending notification requests to APNs": keep
/// connections open). Freed in `deinit`. Not thread-safe: `HTTP2Client` serializes every call.
final class CurlMulti {
    private let handle: UnsafeMutableRawPointer

    private init(handle: UnsafeMutableRawPointer) { self.handle = handle }

    deinit { curl_multi_cleanup(handle) }

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

    /// Waits up to `timeoutMillis` for socket activity or a libcurl timer.
    func poll(timeoutMillis: Int) {
        _ = curl_multi_poll(handle, nil, 0, Int32(timeoutMillis), nil)
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
