import Foundation

/// Where an OAuth authorization server's JSON Web Key Set is read from (issue 15 part 1): an
/// `https://` URL (fetched with libcurl, the certificate chain and host name verified against the
/// system store or `caFile`, redirects never followed), or a file (`file:///path` or an absolute
/// path: a JWKS an operator syncs onto the host).
public enum JWKSSource: Sendable, Equatable, CustomStringConvertible {
    /// Fetched with a GET; `caFile` is a PEM of trusted CAs (nil: the system store).
    case url(String, caFile: String?)
    /// Read from disk at each refresh.
    case file(String)

    /// Parses the configured text (`PUSHFLEET_OAUTH_JWKS_URL`).
    /// - Throws: `JWKSFetchError` `jwks.bad_source` for anything but `https://...`, `file:///...` or
    ///   an absolute path (plain `http://` is refused: the keys decide who may call the API).
    public static func parse(_ text: String, caFile: String?) throws -> JWKSSource {
        if text.hasPrefix("https://"), text.count > 8, text.count <= 2_048 { return .url(text, caFile: caFile) }
        if text.hasPrefix("file:///") { return .file(String(text.dropFirst("file://".count))) }
        if text.hasPrefix("/") { return .file(text) }
        throw JWKSFetchError(code: "jwks.bad_source",
                             message: "the JWKS location must be an https:// URL, a file:/// URL or an absolute path")
    }

    /// The location, for logs (no secret in it).
    public var description: String {
        switch self {
        case .url(let u, _): return u
        case .file(let p): return "file://" + p
        }
    }
}

/// Why a JWKS could not be read.
public struct JWKSFetchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable code: `jwks.bad_source`, `jwks.unreachable`, `jwks.http_status`, `jwks.too_large`,
    /// `jwks.unreadable_file`.
    public let code: String
    /// What happened.
    public let message: String

    /// Makes an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// Reads a JWKS document's bytes from its source. One GET (or file read) per call, bounded in time
/// (`timeoutMillis`) and size (`maxBytes`); the transport is made once and reused.
public final class JWKSFetcher: @unchecked Sendable {
    /// The source.
    public let source: JWKSSource
    /// The largest document accepted, in bytes (a JWKS of a few keys is a few KiB).
    public let maxBytes: Int
    /// Deadline of one GET, in milliseconds.
    public let timeoutMillis: Int
    private let lock = NSLock()
    private var transport: (any HTTPTransport)?

    /// A fetcher for `source`.
    public init(source: JWKSSource, maxBytes: Int = 256 * 1024, timeoutMillis: Int = 5_000) {
        self.source = source
        self.maxBytes = maxBytes
        self.timeoutMillis = timeoutMillis
    }

    /// The document's bytes.
    /// - Throws: `JWKSFetchError` (unreachable, a status other than 200, over `maxBytes`, an
    ///   unreadable file) or `HTTPClientError` when the client cannot be made (a bad CA file).
    public func fetch() throws -> [UInt8] {
        switch source {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw JWKSFetchError(code: "jwks.unreadable_file", message: "cannot read \(path)")
            }
            guard data.count <= maxBytes else {
                throw JWKSFetchError(code: "jwks.too_large", message: "the JWKS file is over \(maxBytes) bytes")
            }
            return Array(data)
        case .url(let url, let caFile):
            return try lock.withLock {
                if transport == nil {
                    var config = HTTPClientConfiguration(caFile: caFile)
                    config.transport = .libcurl
                    config.maxResponseBodyBytes = maxBytes
                    config.stopReadingPastResponseCap = true
                    config.pipeWait = false
                    config.maxTotalConnections = 1
                    transport = try config.makeTransport()
                }
                let request = HTTPRequest(url: url, method: "GET", headers: [("accept", "application/json")],
                                          timeoutMillis: timeoutMillis)
                guard let outcome = transport?.perform([request]).first else {
                    throw JWKSFetchError(code: "jwks.unreachable", message: "no outcome")
                }
                switch outcome {
                case .response(let r) where r.status == 200 && !r.bodyTruncated:
                    return r.body
                case .response(let r) where r.bodyTruncated:
                    throw JWKSFetchError(code: "jwks.too_large", message: "the JWKS answer is over \(maxBytes) bytes")
                case .response(let r):
                    throw JWKSFetchError(code: "jwks.http_status", message: "the JWKS URL answered \(r.status)")
                case .timeout(let d), .connectionError(let d), .notSent(let d):
                    throw JWKSFetchError(code: "jwks.unreachable", message: d)
                }
            }
        }
    }
}
