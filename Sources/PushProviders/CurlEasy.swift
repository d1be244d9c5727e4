internal import CCurl
internal import CPushShims

/// Makes sure `curl_global_init` runs once, before the first handle (it is not thread-safe by itself).
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// One libcurl easy handle (`CURL*`), reused for transfer after transfer by `HTTP2Client` (issue 18):
/// reset (`curl_easy_reset`) and set up again instead of created and cleaned up per request. The
/// header list and the body live in buffers the handle owns and grows (no `curl_slist_append` or
/// `COPYPOSTFIELDS` copy per request); response headers are kept as raw bytes and parsed once when
/// the transfer ends. Freed in `deinit`. Never shared between threads while a transfer runs. The
/// webhook dispatcher's `HTTPTransferPool` reuses handles the same way.
final class CurlEasy {
    private let handle: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let sockets: OpaquePointer?
    private let config: HTTP2Client.Configuration
    /// Set once the handle carried a transfer (the next one starts with `curl_easy_reset`).
    private var used = false
    private var resolveList: UnsafeMutablePointer<curl_slist>?
    private var headerText = ByteBuffer()
    private var headerNodes: UnsafeMutablePointer<curl_slist>
    private var headerNodeCapacity = 16
    private var bodyBytes = ByteBuffer()
    private var responseHeaderBytes = ByteBuffer()

    /// Response being collected by the callbacks.
    private(set) var status = 0
    private(set) var body: [UInt8] = []
    private(set) var bodyTruncated = false
    /// True when this handle stops a transfer past the answer cap (`stopReadingPastResponseCap`).
    var stopsPastResponseCap: Bool { config.stopReadingPastResponseCap }

    /// The options a request needs beyond the per-request ones.
    private struct Shape: Equatable {
        var get: Bool
        var customMethod: String?
        var resolve: [String]
    }

    private init(handle: UnsafeMutableRawPointer, config: HTTP2Client.Configuration, sockets: OpaquePointer?) {
        self.handle = handle
        self.config = config
        self.sockets = sockets
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        headerNodes = .allocate(capacity: headerNodeCapacity)
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(resolveList)
        errorBuffer.deallocate()
        headerNodes.deallocate()
        headerText.deallocate()
        bodyBytes.deallocate()
        responseHeaderBytes.deallocate()
    }

    /// Creates a handle for a client with `config`; `sockets` (a `cpush_socket_set`) learns the
    /// connections it opens.
    /// - Throws: `HTTPClientError.curlInit` if libcurl refuses the handle.
    static func make(config: HTTP2Client.Configuration, sockets: OpaquePointer?) throws -> CurlEasy {
        guard CurlGlobal.initialized, let raw = curl_easy_init() else {
            throw HTTPClientError.curlInit("curl_easy_init failed")
        }
        return CurlEasy(handle: raw, config: config, sockets: sockets)
    }

    /// Scoped access to the raw handle for `CurlMulti`; the pointer must not escape the closure.
    func withUnsafeHandle<T>(_ body: (UnsafeMutableRawPointer) throws -> T) rethrows -> T {
        try body(handle)
    }

    /// The raw handle as an identity key (what `curl_multi_info_read` hands back).
    var key: UnsafeMutableRawPointer { handle }

    // MARK: - Per request

    /// Sets the handle up for `request` and clears the previous response.
    /// - Throws: `HTTPClientError.curlInit` if libcurl refuses an option.
    func prepare(_ request: HTTPRequest) throws {
        let method = request.method
        let wanted = Shape(get: method == "GET", customMethod: method == "GET" || method == "POST" ? nil : method,
                           resolve: request.resolve)
        // Always reset a used handle: libcurl keeps per-transfer state in it that only a reset (or a
        // new handle) clears, e.g. the retry counter of "connection died, retrying a fresh connect"
        // after a GOAWAY, which would otherwise add up over the handle's transfers until it refuses.
        if used { curl_easy_reset(handle) }
        used = true
        try configureFixed(wanted)
        status = 0
        body = []
        bodyTruncated = false
        responseHeaderBytes.count = 0
        errorBuffer[0] = 0
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_TIMEOUT_MS, max(1, request.timeoutMillis))
        try set(CURLOPT_CONNECTTIMEOUT_MS, max(1, min(config.connectTimeoutMillis, request.timeoutMillis)))
        try setHeaders(request.headers)
        if !wanted.get {
            bodyBytes.count = 0
            bodyBytes.append(request.body)
            bodyBytes.append(0)  // never read by libcurl (the size is given); keeps the pointer non-null when empty
            try check(cpush_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            try check(cpush_easy_setopt_ptr(handle, CURLOPT_POSTFIELDS, bodyBytes.base))
        }
    }

    /// Options that hold for every request of this shape: set after creation and after a reset.
    private func configureFixed(_ shape: Shape) throws {
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        if config.pipeWait { try set(CURLOPT_PIPEWAIT, 1) }
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let ca = config.caFile { try set(CURLOPT_CAINFO, ca) }
        try set(CURLOPT_MAXAGE_CONN, config.maxIdleSeconds)
        try set(CURLOPT_MAXLIFETIME_CONN, config.maxConnectionLifetimeSeconds)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_TCP_KEEPIDLE, config.tcpKeepAliveSeconds)
        try set(CURLOPT_TCP_KEEPINTVL, config.tcpKeepAliveSeconds)
        try set(CURLOPT_UPKEEP_INTERVAL_MS, config.upkeepIntervalMillis)
        if config.freshConnectionPerRequest {
            try set(CURLOPT_FRESH_CONNECT, 1)
            try set(CURLOPT_FORBID_REUSE, 1)
        }
        try set(CURLOPT_PROTOCOLS_STR, config.allowedProtocols)
        // Never follow a redirect: a provider answer is final, and a Location could point anywhere.
        try set(CURLOPT_FOLLOWLOCATION, 0)
        curl_slist_free_all(resolveList)
        resolveList = nil
        if !shape.resolve.isEmpty {
            for entry in shape.resolve { resolveList = curl_slist_append(resolveList, entry) }
            try check(cpush_easy_setopt_ptr(handle, CURLOPT_RESOLVE, resolveList))
            // A proxy (e.g. from `https_proxy`) would resolve the name itself and bypass the pin.
            try set(CURLOPT_PROXY, "")
        }
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        if shape.get {
            try set(CURLOPT_HTTPGET, 1)
        } else if let custom = shape.customMethod {
            try set(CURLOPT_CUSTOMREQUEST, custom)
        }
        if let sockets { try check(cpush_easy_track_sockets(handle, sockets)) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(cpush_easy_setopt_write_cb(handle, curlWriteCallback))
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me))
        try check(cpush_easy_setopt_header_cb(handle, curlHeaderCallback))
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, me))
    }

    /// Writes `name: value` lines (NUL-terminated) into the handle's buffer and links list nodes over
    /// them; adds `Expect:` and `Accept:` (unless the request has an Accept) so libcurl sends neither.
    private func setHeaders(_ headers: [(String, String)]) throws {
        var size = 16  // "Expect:\0Accept:\0"
        var hasAccept = false
        for (name, value) in headers {
            size += name.utf8.count + value.utf8.count + 3
            if !hasAccept, name.utf8.count == 6, name.lowercased() == "accept" { hasAccept = true }
        }
        let lines = headers.count + (hasAccept ? 1 : 2)
        if lines > headerNodeCapacity {
            headerNodes.deallocate()
            headerNodeCapacity = lines * 2
            headerNodes = .allocate(capacity: headerNodeCapacity)
        }
        headerText.count = 0
        headerText.reserve(size)  // the text never moves below: the nodes point into it
        var node = 0
        func link(_ start: Int) {
            let data = UnsafeMutableRawPointer(headerText.base + start).assumingMemoryBound(to: CChar.self)
            headerNodes[node] = curl_slist(data: data, next: node + 1 < lines ? headerNodes + node + 1 : nil)
            node += 1
        }
        for (name, value) in headers {
            let start = headerText.count
            headerText.append(name)
            headerText.append(UInt8(ascii: ":"))
            headerText.append(UInt8(ascii: " "))
            headerText.append(value)
            headerText.append(0)
            link(start)
        }
        for fixed in hasAccept ? ["Expect:"] : ["Expect:", "Accept:"] {
            let start = headerText.count
            headerText.append(fixed)
            headerText.append(0)
            link(start)
        }
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, headerNodes))
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(cpush_easy_setopt_long(handle, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        // libcurl copies string options (since 7.17.0).
        try check(value.withCString { cpush_easy_setopt_ptr(handle, option, $0) })
    }

    private func check(_ code: CURLcode) throws {
        guard code == CURLE_OK else { throw HTTPClientError.curlInit(Self.describe(code)) }
    }

    // MARK: - Results

    /// Negotiated HTTP version (2 for HTTP/2).
    var httpVersion: Int {
        var v = 0
        _ = cpush_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &v)
        return v == Int(CURL_HTTP_VERSION_2_0) ? 2 : (v == 0 ? 0 : 1)
    }

    /// Connections this transfer had to open (0 when it reused one): CURLINFO_NUM_CONNECTS.
    var newConnections: Int {
        var n = 0
        _ = cpush_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &n)
        return n
    }

    /// True once the request was about to be sent (TLS done, stream opened): CURLINFO_PRETRANSFER_TIME > 0.
    var reachedPretransfer: Bool {
        var t = 0.0
        _ = cpush_easy_getinfo_double(handle, CURLINFO_PRETRANSFER_TIME, &t)
        return t > 0
    }

    /// The response headers of the final response: names lower-cased, values trimmed, first value
    /// wins for a repeated name (status lines and interim responses already dropped).
    func responseHeaders() -> [String: String] {
        ResponseHeaderParser.parse(responseHeaderBytes)
    }

    /// curl's detailed error text for the last failure, or the generic text for `code`.
    func errorText(_ code: CURLcode) -> String {
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? Self.describe(code) : "\(Self.describe(code)): \(detail)"
    }

    static func describe(_ code: CURLcode) -> String {
        "curl \(code.rawValue) \(String(cString: curl_easy_strerror(code)))"
    }

    // MARK: - Callbacks

    /// Keeps the answer's first `maxResponseBodyBytes`; false (stop the transfer) once past them
    /// when `stopReadingPastResponseCap`.
    fileprivate func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let room = config.maxResponseBodyBytes - body.count
        if bytes.count > room { bodyTruncated = true }
        if room > 0 { body.append(contentsOf: bytes.prefix(room)) }
        return !(bodyTruncated && config.stopReadingPastResponseCap)
    }

    fileprivate func headerLine(_ bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[..<end])
        if let code = ResponseHeaderParser.statusCode(line) {
            // A new response starts (e.g. after an interim 1xx): forget earlier headers.
            status = code
            responseHeaderBytes.count = 0
            return
        }
        guard !line.isEmpty else { return }
        responseHeaderBytes.append(line)
        responseHeaderBytes.append(UInt8(ascii: "\n"))
    }
}

private func curlWriteCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                               _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let user else { return total }
    let more = Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
        .appendBody(UnsafeRawBufferPointer(start: data, count: total))
    // Past the cap: bytes are consumed and dropped so the transfer completes, or, with
    // `stopReadingPastResponseCap`, the transfer stops here (0: CURLE_WRITE_ERROR, the connection closed).
    return more ? total : 0
}

private func curlHeaderCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                                _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let user else { return total }
    Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
        .headerLine(UnsafeRawBufferPointer(start: data, count: total))
    return total
}
