internal import CMicroHTTPD
internal import CPushShims
import Foundation

/// Where the operators' HTTP endpoint listens: `HOST:PORT` with HOST `0.0.0.0` (every IPv4
/// interface, the default), `127.0.0.1` or `localhost` (loopback only), or `off`.
public struct MetricsAddress: Sendable, Equatable {
    /// The environment variable that sets the address when `--metrics-addr` is not given.
    public static let environmentVariable = "PUSHFLEET_METRICS_ADDR"
    /// The default: every interface, port 9464 (Prometheus' registry of exporter ports).
    public static let defaultText = "0.0.0.0:9464"

    /// True: bind 127.0.0.1 only; false: bind every IPv4 interface.
    public var loopbackOnly: Bool
    /// TCP port; 0 asks the kernel for a free one (read it back from `MetricsServer.port`).
    public var port: UInt16

    /// Makes an address.
    public init(loopbackOnly: Bool, port: UInt16) {
        self.loopbackOnly = loopbackOnly
        self.port = port
    }

    /// Parses `HOST:PORT` or `off` (nil: the endpoint is disabled).
    /// - Throws: `MetricsServerError` code `METRICS_ADDR` for anything else (another host, a port
    ///   outside 0...65535, no colon).
    public static func parse(_ text: String) throws -> MetricsAddress? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased() == "off" { return nil }
        guard let colon = t.lastIndex(of: ":"), let port = UInt16(t[t.index(after: colon)...]) else {
            throw MetricsServerError(code: "METRICS_ADDR", message: "metrics address must be HOST:PORT or off, got \(t.prefix(60))")
        }
        switch t[..<colon] {
        case "", "0.0.0.0", "*": return MetricsAddress(loopbackOnly: false, port: port)
        case "127.0.0.1", "localhost": return MetricsAddress(loopbackOnly: true, port: port)
        default:
            throw MetricsServerError(code: "METRICS_ADDR",
                                     message: "metrics host must be 0.0.0.0, 127.0.0.1 or localhost, got \(t[..<colon].prefix(60))")
        }
    }
}

/// A failure to configure or start the metrics endpoint, with a stable code
/// (`METRICS_ADDR`, `METRICS_START`) and a human message.
public struct MetricsServerError: Error, CustomStringConvertible, Sendable {
    /// Stable code.
    public var code: String
    /// Human message.
    public var message: String
    /// `CODE: message`.
    public var description: String { "\(code): \(message)" }
}

/// The operators' HTTP endpoint on GNU libmicrohttpd: `GET|HEAD /metrics` (Prometheus text
/// format 0.0.4 from `WorkerMetrics.render()`), `/healthz` (200 while the process runs),
/// `/readyz` (200 when `metrics.ready` is 1, else 503), 404 for any other path, 405 for any other
/// method. MHD serves from its own polling thread (epoll) with at most `connectionLimit`
/// connections, at most `perClientLimit` from one address, each dropped after `timeoutSeconds`
/// idle; every request must be answered within `deadlineSeconds` of its connection's accept (or of
/// the previous request's end) whatever the client's pace, and past `softLimit` open connections
/// each new one shuts the oldest down. So slow clients (one header line every 2 s from 33
/// addresses, issue 13) neither hold slots for long nor fill them: a probe, answered in
/// milliseconds, is never the oldest and always gets in. A slow or garbage client never reaches
/// the worker's threads. MHD's own messages are JSON log lines (`metrics.http`). Owns the daemon
/// (stopped by `stop()` or `deinit`).
public final class MetricsServer: @unchecked Sendable {
    /// The port actually bound (the one asked for, or the kernel's pick for port 0).
    public let port: UInt16
    private let handler: Handler
    private let lock = NSLock()
    private var server: OpaquePointer?

    private init(server: OpaquePointer, port: UInt16, handler: Handler) {
        self.server = server
        self.port = port
        self.handler = handler
    }

    /// Starts serving `metrics` on `address`. Pre-creates the zero-valued series alerts rely on
    /// (`WorkerMetrics.preregisterSeries()`).
    /// - Parameters:
    ///   - connectionLimit: simultaneous connections (default 512); more are refused by MHD.
    ///   - perClientLimit: simultaneous connections from one client address (default 16).
    ///   - timeoutSeconds: idle time after which a connection is closed (default 5 s).
    ///   - deadlineSeconds: time a request has from its connection's accept (or the previous
    ///     request's end) to the end of its answer (default 5 s).
    ///   - softLimit: open connections past which each new one shuts the oldest down (default
    ///     `connectionLimit` less an eighth, at least 8 less).
    ///   - logMinimum: lowest level of libmicrohttpd's own lines written (default the process's,
    ///     `Log.shared`; set for the whole process).
    /// - Throws: `MetricsServerError` code `METRICS_START` when the port cannot be bound.
    public static func start(address: MetricsAddress, metrics: WorkerMetrics, connectionLimit: UInt32 = 512,
                             perClientLimit: UInt32 = 16, timeoutSeconds: UInt32 = 5, deadlineSeconds: Double = 5,
                             softLimit: UInt32? = nil, logMinimum: Log.Level = Log.shared.minimum) throws -> MetricsServer {
        metrics.preregisterSeries()
        cpush_mhd_set_log_minimum(Int32(logMinimum.rawValue))
        let handler = Handler(metrics: metrics)
        let cls = Unmanaged.passUnretained(handler).toOpaque()
        let soft = softLimit ?? (connectionLimit > 16 ? connectionLimit - max(8, connectionLimit / 8) : connectionLimit)
        guard let s = cpush_mhd_start(address.port, address.loopbackOnly ? 1 : 0, metricsAccessHandler, cls,
                                      connectionLimit, perClientLimit, timeoutSeconds, deadlineSeconds, soft) else {
            throw MetricsServerError(code: "METRICS_START",
                                     message: "cannot listen on \(address.loopbackOnly ? "127.0.0.1" : "0.0.0.0"):\(address.port) (port in use?)")
        }
        let bound = cpush_mhd_bound_port(s)
        return MetricsServer(server: s, port: bound == 0 ? address.port : bound, handler: handler)
    }

    /// Connections cut so far: past their deadline, and shut down to make room (oldest first).
    public var cutConnections: (deadline: Int, evicted: Int) {
        lock.withLock {
            guard let server else { return (0, 0) }
            var deadline: UInt = 0, evicted: UInt = 0
            cpush_mhd_cut_counts(server, &deadline, &evicted)
            return (Int(deadline), Int(evicted))
        }
    }

    /// Stops the daemon (waits for its threads); idempotent.
    public func stop() {
        let s = lock.withLock { () -> OpaquePointer? in
            let s = server
            server = nil
            return s
        }
        if let s { cpush_mhd_stop(s) }
    }

    deinit { stop() }

    /// What the MHD thread reads: the metrics, behind their own locks.
    final class Handler: @unchecked Sendable {
        let metrics: WorkerMetrics
        init(metrics: WorkerMetrics) { self.metrics = metrics }

        /// (status, content type, body) for a request line.
        func respond(method: String, path: String) -> (Int32, String, String) {
            guard method == "GET" || method == "HEAD" else { return (405, "text/plain", "method not allowed\n") }
            switch path {
            case "/metrics":
                return (200, "text/plain; version=0.0.4; charset=utf-8", metrics.render())
            case "/healthz":
                return (200, "text/plain", "ok\n")
            case "/readyz":
                return metrics.ready.current == 1 ? (200, "text/plain", "ready\n") : (503, "text/plain", "not ready\n")
            default:
                return (404, "text/plain", "not found\n")
            }
        }
    }
}

/// The C access handler: answers on the first call for each request (no request body is read).
private func metricsAccessHandler(cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
                                  url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                                  version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?,
                                  uploadDataSize: UnsafeMutablePointer<Int>?,
                                  connectionContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection else { return .NO }
    let handler = Unmanaged<MetricsServer.Handler>.fromOpaque(cls).takeUnretainedValue()
    let path = url.map { String(cString: $0) } ?? "/"
    let verb = method.map { String(cString: $0) } ?? ""
    let (status, contentType, body) = handler.respond(method: verb, path: String(path.prefix(200)))
    var bytes = Array(body.utf8)
    let response = bytes.withUnsafeMutableBytes { buffer in
        MHD_create_response_from_buffer(buffer.count, buffer.baseAddress, .RESPMEM_MUST_COPY)
    }
    guard let response else { return .NO }
    defer { MHD_destroy_response(response) }
    _ = MHD_add_response_header(response, "Content-Type", contentType)
    if status == 405 { _ = MHD_add_response_header(response, "Allow", "GET, HEAD") }
    return MHD_queue_response(connection, UInt32(status), response)
}
