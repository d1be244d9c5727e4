import Foundation

/// One HTTP request as the server read it (headers and body complete).
public struct HTTPRequest: Sendable {
    /// `GET`, `PUT`, ... as sent.
    public var method: String
    /// The path without the query string (percent-decoded by libmicrohttpd).
    public var path: String
    /// Query arguments in order (decoded); a value is nil for `?flag` without `=`.
    public var query: [QueryItem]
    /// Headers in order, names lower-cased.
    public var headers: [Header]
    /// The body bytes (at most the server's limit).
    public var body: [UInt8]
    /// The peer's address (the load balancer's, behind one).
    public var peer: String
    /// This request's id (the `Request-Id` response header and the access log's `request_id`).
    public var requestID: String

    /// One query argument.
    public struct QueryItem: Sendable, Equatable {
        /// Its name.
        public var name: String
        /// Its value; nil for a bare name.
        public var value: String?
        /// False when the decoded name or value was not UTF-8 (they hold U+FFFD where it was not,
        /// so two different byte strings could read the same: the API refuses such an argument).
        public var validUTF8: Bool
        /// Makes an item.
        public init(_ name: String, _ value: String?, validUTF8: Bool = true) {
            self.name = name
            self.value = value
            self.validUTF8 = validUTF8
        }
    }

    /// One header.
    public struct Header: Sendable, Equatable {
        /// Lower-cased name.
        public var name: String
        /// The value as sent (U+FFFD where its bytes were not UTF-8).
        public var value: String
        /// False when the value's bytes were not UTF-8.
        public var validUTF8: Bool
        /// Makes a header (the name is lower-cased).
        public init(_ name: String, _ value: String, validUTF8: Bool = true) {
            self.name = name.lowercased()
            self.value = value
            self.validUTF8 = validUTF8
        }
    }

    /// Makes a request (tests build them directly).
    public init(method: String, path: String, query: [QueryItem] = [], headers: [Header] = [], body: [UInt8] = [],
                peer: String = "127.0.0.1", requestID: String = "req_test") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
        self.requestID = requestID
    }

    /// The last value of header `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last(where: { $0.name == lower })?.value
    }

    /// The last header `name` when its value is UTF-8; nil when absent.
    /// - Throws: `APIError` 400 `INVALID_REQUEST` naming the header when its bytes are not UTF-8
    ///   (its value would be altered, and an altered idempotency key could match another's).
    func utf8Header(_ name: String, shown: String) throws -> String? {
        let lower = name.lowercased()
        guard let h = headers.last(where: { $0.name == lower }) else { return nil }
        guard h.validUTF8 else { throw APIError.invalidRequest("the \(shown) header is not valid UTF-8", field: shown) }
        return h.value
    }
}

/// One HTTP response, plus what the access log and metrics record about it (never sent).
public struct HTTPResponse: Sendable {
    /// Status code.
    public var status: Int
    /// Headers to send (libmicrohttpd adds `Date`, `Content-Length`, `Connection`).
    public var headers: [(String, String)]
    /// Body bytes.
    public var body: [UInt8]
    /// The route template (`/v1/push/devices/{id}`), for logs and metrics; `unmatched` otherwise.
    public var route: String
    /// The display prefix of the key used, when one was.
    public var keyPrefix: String?
    /// The client's address for the access log (the peer, or the `X-Forwarded-For` hop a trusted
    /// proxy vouches for).
    public var client: String?

    /// Makes a response.
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], route: String = "unmatched",
                keyPrefix: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.route = route
        self.keyPrefix = keyPrefix
    }

    /// The last value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.last(where: { $0.0.lowercased() == name.lowercased() })?.1
    }
}

/// What the server tells its handler once a request is over (for the access log and metrics).
public struct HTTPExchange: Sendable {
    /// Method as sent (cut to 16 characters).
    public var method: String
    /// Route template, or `unmatched`.
    public var route: String
    /// Status sent; 0 when the connection ended before any (client gone, deadline).
    public var status: Int
    /// Seconds from the request line to the end.
    public var seconds: Double
    /// The request id.
    public var requestID: String
    /// The key's display prefix, when one was used.
    public var keyPrefix: String?
    /// The client's address, when the handler named it.
    public var client: String?
    /// Why it ended without a response of the handler's, when it did (`idle_timeout`, `client_closed`,
    /// `shutdown`, `unsent`; `refused` with the status libmicrohttpd answered itself).
    public var abort: String?
}

/// The server's hooks into the application: the request handler, its error bodies (413, 431,
/// 503 the server answers by itself) and the end of each exchange.
public protocol HTTPHandler: AnyObject, Sendable {
    /// Answers one complete request. Runs on a worker thread; may block (database calls).
    func handle(_ request: HTTPRequest) -> HTTPResponse
    /// A response the server makes itself before the handler is called (`status` 400 for a
    /// framing error naming the header in `field`, 413, 431 or 503), with a stable `code` and a
    /// human `message`.
    func serverError(status: Int, code: String, message: String, field: String?, requestID: String) -> HTTPResponse
    /// Called once per request when it is over.
    func completed(_ exchange: HTTPExchange)
    /// An answer decided by the request line alone (a path or method the handler never serves),
    /// given as soon as the headers are in, before the body's size is judged: `POST /metrics`
    /// with a body is 405, not 413. Nil (the default) lets the request go on.
    func refusal(method: String, path: String) -> HTTPResponse?
}

extension HTTPHandler {
    /// No early answer: every request reaches `handle`.
    public func refusal(method: String, path: String) -> HTTPResponse? { nil }
}
