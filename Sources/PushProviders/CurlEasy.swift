internal import CCurl
internal import CPushShims

/// Makes sure `curl_global_init` runs once, before the first handle (it is not thread-safe by itself).
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// Owns one libcurl easy handle (`CURL*`) for one transfer, plus what must outlive the transfer:
/// the header list, the error buffer, and the response being collected. Freed in `deinit`.
/// Used by `HTTP2Client` only; never shared between threads while a transfer runs.
final class CurlEasy {
    private let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var resolveList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Response being collected by the callbacks.
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    private(set) var body: [UInt8] = []
    private(set) var bodyTruncated = false
    private var bodyCap = 0

    private init(handle: UnsafeMutableRawPointer) {
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
        errorBuffer.deallocate()
    }

    /// Creates and configures a handle for `request`.
    /// - Throws: `HTTPClientError.curlInit` if libcurl refuses the handle or an option.
    static func make(for request: HTTPRequest, config: HTTP2Client.Configuration) throws -> CurlEasy {
        guard CurlGlobal.initialized, let raw = curl_easy_init() else {
            throw HTTPClientError.curlInit("curl_easy_init failed")
        }
        let easy = CurlEasy(handle: raw)
        easy.bodyCap = config.maxResponseBodyBytes
        try easy.configure(request, config)
        return easy
    }

    /// Scoped access to the raw handle for `CurlMulti`; the pointer must not escape the closure.
    func withUnsafeHandle<T>(_ body: (UnsafeMutableRawPointer) throws -> T) rethrows -> T {
        try body(handle)
    }

    // MARK: - Options

    private func configure(_ request: HTTPRequest, _ config: HTTP2Client.Configuration) throws {
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        try set(CURLOPT_PIPEWAIT, 1)
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let ca = config.caFile { try set(CURLOPT_CAINFO, ca) }
        try set(CURLOPT_TIMEOUT_MS, max(1, request.timeoutMillis))
        try set(CURLOPT_CONNECTTIMEOUT_MS, max(1, min(config.connectTimeoutMillis, request.timeoutMillis)))
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
        try set(CURLOPT_PROTOCOLS_STR, "https")
        // Never follow a redirect: a provider answer is final, and a Location could point anywhere.
        try set(CURLOPT_FOLLOWLOCATION, 0)
        if !request.resolve.isEmpty {
            for entry in request.resolve { resolveList = curl_slist_append(resolveList, entry) }
            try check(cpush_easy_setopt_ptr(handle, CURLOPT_RESOLVE, resolveList))
            // A proxy (e.g. from `https_proxy`) would resolve the name itself and bypass the pin.
            try set(CURLOPT_PROXY, "")
        }
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer))

        for (name, value) in request.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        // Drop curl's default `Accept: */*` and `Expect:` (not wanted by APNs/FCM).
        headerList = curl_slist_append(headerList, "Expect:")
        if !request.headers.contains(where: { $0.0.lowercased() == "accept" }) {
            headerList = curl_slist_append(headerList, "Accept:")
        }
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, headerList))

        if request.method == "GET" {
            try set(CURLOPT_HTTPGET, 1)
        } else {
            try check(cpush_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            if request.body.isEmpty {
                let empty: StaticString = ""
                try check(cpush_easy_setopt_ptr(handle, CURLOPT_POSTFIELDS, empty.utf8Start))
            } else {
                // COPYPOSTFIELDS copies the bytes now, so the array need not outlive this call.
                try request.body.withUnsafeBufferPointer { buf in
                    try check(cpush_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, buf.baseAddress))
                }
            }
            if request.method != "POST" { try set(CURLOPT_CUSTOMREQUEST, request.method) }
        }

        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(cpush_easy_setopt_write_cb(handle, curlWriteCallback))
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me))
        try check(cpush_easy_setopt_header_cb(handle, curlHeaderCallback))
        try check(cpush_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, me))
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

    /// curl's detailed error text for the last failure, or the generic text for `code`.
    func errorText(_ code: CURLcode) -> String {
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? Self.describe(code) : "\(Self.describe(code)): \(detail)"
    }

    static func describe(_ code: CURLcode) -> String {
        "curl \(code.rawValue) \(String(cString: curl_easy_strerror(code)))"
    }

    // MARK: - Callbacks

    fileprivate func appendBody(_ bytes: UnsafeRawBufferPointer) {
        let room = bodyCap - body.count
        if bytes.count > room { bodyTruncated = true }
        if room > 0 { body.append(contentsOf: bytes.prefix(room)) }
    }

    fileprivate func headerLine(_ bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = String(decoding: bytes[..<end], as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // A new response starts (e.g. after an interim 1xx): forget earlier headers.
            headers = [:]
            let fields = line.split(separator: " ")
            status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
        if headers[name] == nil { headers[name] = value }
    }
}

private func curlWriteCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                               _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let user else { return total }
    Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
        .appendBody(UnsafeRawBufferPointer(start: data, count: total))
    return total  // bytes past the cap are consumed and dropped, so the transfer completes
}

private func curlHeaderCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                                _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let user else { return total }
    Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
        .headerLine(UnsafeRawBufferPointer(start: data, count: total))
    return total
}

private extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var s = self[...]
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
