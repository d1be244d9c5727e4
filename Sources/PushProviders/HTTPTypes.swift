import PushCore

/// One HTTP request handed to `HTTPTransport.perform(_:)` (`NGHTTP2Client`, `HTTP2Client`).
public struct HTTPRequest: Sendable, Equatable {
    /// Absolute `https://` URL (scheme, host, optional port, path).
    public var url: String
    /// HTTP method; `POST` for every provider call.
    public var method: String
    /// Request headers as (name, value) pairs, names in lower case (HTTP/2). Sent in this order.
    public var headers: [(String, String)]
    /// Request body bytes (copied into libcurl when the transfer starts).
    public var body: [UInt8]
    /// Per-request deadline in milliseconds from the start of `perform`, queueing for a
    /// connection or a stream included (CURLOPT_TIMEOUT_MS). Must be > 0.
    public var timeoutMillis: Int
    /// Pinned name resolutions (CURLOPT_RESOLVE), each `host:port:address[,address...]` with IPv6
    /// addresses in brackets: libcurl connects to exactly these addresses for `host:port` instead of
    /// asking DNS, so a caller that checked the addresses connects to what it checked (DNS
    /// rebinding); such a request never goes through a proxy (proxy environment variables are
    /// ignored for it). Empty (the default) = ordinary resolution. The entries stay in the client's
    /// DNS cache until a later request pins the same `host:port` again. libcurl client only:
    /// `NGHTTP2Client` answers a request with pins `.notSent` (Web Push, the one user, stays on libcurl).
    public var resolve: [String]

    /// - Parameters: see the properties; `timeoutMillis` defaults to 10 000, `resolve` to none.
    public init(url: String, method: String = "POST", headers: [(String, String)] = [],
                body: [UInt8] = [], timeoutMillis: Int = 10_000, resolve: [String] = []) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutMillis = timeoutMillis
        self.resolve = resolve
    }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.url == b.url && a.method == b.method && a.body == b.body && a.timeoutMillis == b.timeoutMillis && a.resolve == b.resolve
            && a.headers.map { $0.0 } == b.headers.map { $0.0 } && a.headers.map { $0.1 } == b.headers.map { $0.1 }
    }
}

/// A complete HTTP response.
public struct HTTPResponse: Sendable, Equatable {
    /// HTTP status code (200, 410, ...).
    public var status: Int
    /// Response headers, names lower-cased; the first value wins for a repeated name.
    public var headers: [String: String]
    /// Body bytes, at most `HTTPClientConfiguration.maxResponseBodyBytes`.
    public var body: [UInt8]
    /// True when the body was longer than the cap and the rest was dropped.
    public var bodyTruncated: Bool
    /// Negotiated HTTP version (2 for HTTP/2, 1 for HTTP/1.x; the nghttp2 client speaks only 2).
    public var httpVersion: Int

    /// Memberwise initializer.
    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = [],
                bodyTruncated: Bool = false, httpVersion: Int = 2) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyTruncated = bodyTruncated
        self.httpVersion = httpVersion
    }
}

/// How one request of a batch ended (same order as the requests).
public enum HTTPOutcome: Sendable, Equatable {
    /// A full response was read.
    case response(HTTPResponse)
    /// No full answer before the request's deadline, after it may have been sent: outcome unknown.
    case timeout(String)
    /// The connection broke, the stream was reset or refused, GOAWAY, partial or empty answer.
    case connectionError(String)
    /// Nothing reached the server: DNS, connect refused, TLS handshake or certificate failure,
    /// bad URL, or a deadline that passed before the request could be sent.
    case notSent(String)

    /// The `ProviderAnswer.Transport` this outcome maps to.
    public var transport: ProviderAnswer.Transport {
        switch self {
        case .response: return .response
        case .timeout: return .timeout
        case .connectionError: return .connectionError
        case .notSent: return .notSent
        }
    }

    /// The client's error text for the three failure cases; nil for a response.
    public var failureDetail: String? {
        switch self {
        case .response: return nil
        case .timeout(let d), .connectionError(let d), .notSent(let d): return d
        }
    }
}

/// Why the HTTP/2 client could not be created.
public struct HTTPClientError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Stable code, e.g. `http.curl_init`.
    public let code: String
    /// Human explanation.
    public let message: String

    /// libcurl refused to create a handle or an option.
    public static func curlInit(_ detail: String) -> HTTPClientError {
        HTTPClientError(code: "http.curl_init", message: detail)
    }

    /// The CA file given for certificate verification does not exist or cannot be read.
    public static func caFileUnreadable(_ path: String) -> HTTPClientError {
        HTTPClientError(code: "http.ca_file_unreadable", message: "CA file not readable: \(path)")
    }

    /// The CA file is readable but holds no usable certificate (OpenSSL refused it).
    public static func caFileInvalid(_ path: String, _ detail: String) -> HTTPClientError {
        HTTPClientError(code: "http.ca_file_invalid", message: "CA file not usable: \(path): \(detail)")
    }

    /// OpenSSL or nghttp2 refused to set up a TLS context or an HTTP/2 session template.
    public static func tlsInit(_ detail: String) -> HTTPClientError {
        HTTPClientError(code: "http.tls_init", message: detail)
    }

    public var description: String { "\(code): \(message)" }
}
