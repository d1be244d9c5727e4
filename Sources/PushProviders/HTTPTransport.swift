/// What the provider clients need from an HTTP/2 client: a batch of requests in, one outcome per
/// request out, same order (`HTTPOutcome` says what a failure means for a retry). Two
/// implementations: `NGHTTP2Client` (nghttp2 over OpenSSL, APNs and FCM by default) and
/// `HTTP2Client` (libcurl, Web Push, and APNs/FCM when `HTTPClientConfiguration.transport` is
/// `.libcurl`).
public protocol HTTPTransport: AnyObject, Sendable {
    /// Sends all `requests` concurrently and blocks the calling thread until each has an outcome
    /// (call it from a thread of your own, never from Swift's cooperative pool).
    /// - Returns: one outcome per request, in order; never throws.
    func perform(_ requests: [HTTPRequest]) -> [HTTPOutcome]
    /// Connections opened since the client was created.
    var connectionsOpened: Int { get }
    /// Counters since the client was created.
    var statistics: HTTPTransportStatistics { get }
}

/// Which HTTP/2 client `HTTPClientConfiguration.makeTransport()` builds.
public enum HTTPTransportKind: String, Sendable, CaseIterable {
    /// `NGHTTP2Client`: nghttp2 over OpenSSL (issue 18: about a tenth of libcurl's CPU per request).
    case nghttp2
    /// `HTTP2Client`: libcurl's multi interface (the fallback; the only one Web Push uses).
    case libcurl
}

/// Connection and safety limits of both HTTP/2 clients; every field has a production default.
/// Fields marked "libcurl only" or "nghttp2 only" are ignored by the other client.
public struct HTTPClientConfiguration: Sendable {
    /// PEM file of trusted CAs; nil = the system store. Verification (chain and host name) is never disabled.
    public var caFile: String?
    /// Which client `makeTransport()` builds for APNs and FCM. Default `.nghttp2`. Web Push always
    /// uses `HTTP2Client` (pinned resolutions), whatever this says.
    public var transport: HTTPTransportKind = .nghttp2
    /// Connections per host. Default 1: one HTTP/2 connection carries up to the server's stream limit
    /// (1000 on APNs once a token was accepted). A further connection is opened only when every
    /// connection of the host is past its first answer and full.
    public var maxHostConnections: Int = 1
    /// Connections overall, all hosts (also the idle pool's size). Default 8.
    public var maxTotalConnections: Int = 8
    /// Streams we open on one connection at most. nil (the default): the nghttp2 client follows the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS (at most 1000; one stream until the server's
    /// SETTINGS arrived) and the libcurl client, which cannot read that setting, uses 100 (libcurl's
    /// own assumption). A value caps both. It is also the libcurl client's chunk size.
    public var maxStreamsPerConnection: Int?
    /// Connection set-up limit (TCP, TLS, the server's SETTINGS) in milliseconds, capped by each
    /// request's deadline. Default 5000.
    public var connectTimeoutMillis: Int = 5_000
    /// Idle seconds after which a pooled connection is closed instead of reused. Default 50.
    public var maxIdleSeconds: Int = 50
    /// Seconds after which a connection takes no new stream (it is closed once its streams ended);
    /// 0 = no limit. Default 0.
    public var maxConnectionLifetimeSeconds: Int = 0
    /// TCP keepalive idle time and probe interval in seconds. Default 30.
    public var tcpKeepAliveSeconds: Int = 30
    /// Connection upkeep interval in milliseconds. nghttp2: every interval an idle connection that
    /// read nothing for that long gets an HTTP/2 PING, and one whose PING went unanswered for an
    /// interval is closed; idle and lifetime limits are applied too. libcurl: CURLOPT_UPKEEP_INTERVAL_MS.
    /// 0 = no upkeep. Default 30 000.
    public var upkeepIntervalMillis: Int = 30_000
    /// libcurl only: longest wait (ms) for the first request on a new connection before the others
    /// follow. Default 1000. (The nghttp2 client waits for the server's SETTINGS instead.)
    public var warmUpMillis: Int = 1_000
    /// Largest response body kept, in bytes; the rest is read and dropped (`bodyTruncated`). Default 64 KiB.
    public var maxResponseBodyBytes: Int = 64 * 1024
    /// libcurl only: stop reading an answer once past `maxResponseBodyBytes` (the connection is
    /// closed; the response keeps its status and first bytes, `bodyTruncated`) instead of reading
    /// and dropping the rest. Default false; true for webhook endpoints, which may answer anything.
    public var stopReadingPastResponseCap: Bool = false
    /// libcurl only: write the frames of requests started together under TCP_CORK. Default true.
    /// (The nghttp2 client writes each round's frames with one `send`.)
    public var corkWrites: Bool = true
    /// libcurl only: open a new connection for every request and close it after
    /// (CURLOPT_FRESH_CONNECT, CURLOPT_FORBID_REUSE); a host then has up to `maxHostConnections`
    /// requests in flight, with no warm-up. Default false. For requests that must never be written
    /// twice (an SMS): on a reused connection that the server closed as the request went out,
    /// libcurl writes the request again on a new one, which only the sender can know to be unsafe.
    public var freshConnectionPerRequest: Bool = false
    /// libcurl only: schemes it may use (CURLOPT_PROTOCOLS_STR). Default `https`; `http,https` only
    /// where a caller admits plain HTTP to loopback (webhooks in test mode with
    /// `PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK`). The nghttp2 client speaks HTTPS (h2 over TLS) only.
    public var allowedProtocols: String = "https"
    /// libcurl only: wait for an HTTP/2 connection being set up rather than open another
    /// (CURLOPT_PIPEWAIT). Default true (providers multiplex); false for webhook endpoints, mostly
    /// HTTP/1.1, where waiting would serialize requests behind one connection's handshake.
    public var pipeWait: Bool = true

    /// Defaults, with an optional CA file (tests pass their fake CA).
    public init(caFile: String? = nil) { self.caFile = caFile }

    /// Builds the client `transport` names.
    /// - Throws: `HTTPClientError` (`caFileUnreadable`, `caFileInvalid`, `tlsInit`, `curlInit`).
    public func makeTransport() throws -> any HTTPTransport {
        switch transport {
        case .nghttp2: return try NGHTTP2Client.make(configuration: self)
        case .libcurl: return try HTTP2Client.make(configuration: self)
        }
    }
}

/// Counters of an HTTP/2 client since it was created (tests and `pushfleet bench`).
public struct HTTPTransportStatistics: Sendable, Equatable {
    /// Requests handed to `perform`.
    public var requests = 0
    /// Streams started (libcurl: transfers handed to libcurl), retries of refused streams included.
    public var transfersStarted = 0
    /// libcurl only: easy handles created (the other transfers reused one).
    public var handlesCreated = 0
    /// Times the client waited for socket activity (`poll`).
    public var waits = 0
    /// Connections opened.
    public var connectionsOpened = 0
    /// Most streams of one host in flight at once.
    public var maxInFlightPerHost = 0
    /// nghttp2 only: streams the server refused unprocessed (RST_STREAM REFUSED_STREAM, or above a
    /// GOAWAY's last-stream-id) and that were sent again.
    public var streamsRetried = 0
    /// nghttp2 only: the highest SETTINGS_MAX_CONCURRENT_STREAMS a server announced.
    public var largestServerStreamLimit = 0
}
