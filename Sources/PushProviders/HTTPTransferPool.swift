import Foundation
internal import CCurl

/// Runs independent HTTPS requests without waiting for one another (libcurl multi, driven by the
/// caller's loop): `start` adds a transfer, `poll` waits up to a few milliseconds for socket
/// activity and returns the transfers that ended. Unlike `HTTP2Client.perform`, which waits for a
/// whole batch, a slow transfer here delays nobody: the webhook dispatcher keeps one endpoint's
/// hanging requests in flight while other endpoints' requests start and end around them.
///
/// Connections are pooled and reused (keep-alive, HTTP/2 where the server offers it); there is no
/// per-host connection limit (the caller bounds its own concurrency), and at most
/// `maxTotalConnections` are open. Each request's deadline counts from its `start`
/// (CURLOPT_TIMEOUT_MS); redirects are never followed; answers are kept up to
/// `maxResponseBodyBytes` (and read no further with `stopReadingPastResponseCap`); `resolve` pins are honoured (`HTTPRequest.resolve`).
///
/// libcurl, not `NGHTTP2Client`, and not an `HTTPTransport` (whose `perform` waits for a whole
/// batch): customers' endpoints mostly speak HTTP/1.1, the send-time guard needs pinned resolutions
/// (CURLOPT_RESOLVE), and test mode admits `http://` to loopback; the nghttp2 client does none of
/// these. `HTTPClientConfiguration.transport` is therefore ignored here.
///
/// Not thread-safe: one loop owns it.
public final class HTTPTransferPool {
    /// A transfer that ended.
    public struct Finished: Sendable {
        /// The caller's tag given to `start`.
        public var tag: Int
        /// How it ended.
        public var outcome: HTTPOutcome
    }

    /// Limits in force.
    public let configuration: HTTPClientConfiguration
    private let multi: CurlMulti
    private var active: [UnsafeMutableRawPointer: (tag: Int, easy: CurlEasy)] = [:]
    private var refused: [Finished] = []
    /// Easy handles between transfers (reset and reused, like `HTTP2Client`'s).
    private var idle: [CurlEasy] = []

    private init(configuration: HTTPClientConfiguration, multi: CurlMulti) {
        self.configuration = configuration
        self.multi = multi
    }

    deinit {
        // Detach every easy handle before the multi handle goes (libcurl asks for this order).
        for (_, entry) in active { multi.remove(entry.easy) }
    }

    /// Creates a pool. - Throws: `HTTPClientError` (`caFileUnreadable`, `curlInit`).
    public static func make(configuration: HTTPClientConfiguration) throws -> HTTPTransferPool {
        if let ca = configuration.caFile, !FileManager.default.isReadableFile(atPath: ca) {
            throw HTTPClientError.caFileUnreadable(ca)
        }
        let multi = try CurlMulti.make(maxHostConnections: 0, maxTotalConnections: max(1, configuration.maxTotalConnections),
                                       maxStreamsPerConnection: configuration.curlStreamsPerConnection)
        return HTTPTransferPool(configuration: configuration, multi: multi)
    }

    /// Transfers started and not yet returned by `poll`.
    public var inFlight: Int { active.count + refused.count }

    /// Starts `request`; its end comes back from `poll` with `tag`. A request libcurl refuses to
    /// set up comes back at the next `poll` as `.notSent`.
    public func start(_ request: HTTPRequest, tag: Int) {
        do {
            let easy = try idle.popLast() ?? CurlEasy.make(config: configuration, sockets: multi.sockets)
            do {
                try easy.prepare(request)
                try multi.add(easy)
            } catch {
                checkIn(easy)
                throw error
            }
            active[easy.key] = (tag, easy)
        } catch {
            refused.append(Finished(tag: tag, outcome: .notSent("\(error)")))
        }
    }

    /// Drives the transfers, waiting at most `timeoutMillis` for activity when none has ended yet;
    /// returns those that ended (possibly none).
    public func poll(timeoutMillis: Int) -> [Finished] {
        var done = refused
        refused.removeAll()
        if active.isEmpty { return done }
        _ = multi.perform()
        collect(into: &done)
        if done.isEmpty {
            multi.poll(timeoutMillis: max(0, timeoutMillis))
            _ = multi.perform()
            collect(into: &done)
        }
        return done
    }

    private func collect(into done: inout [Finished]) {
        while let finished = multi.nextFinished() {
            guard let entry = active.removeValue(forKey: finished.easy) else { continue }
            let outcome = HTTP2Client.classify(finished.result, easy: entry.easy)
            multi.remove(entry.easy)
            checkIn(entry.easy)
            done.append(Finished(tag: entry.tag, outcome: outcome))
        }
    }

    /// Keeps a finished handle for the next transfer (at most `maxTotalConnections` of them).
    private func checkIn(_ easy: CurlEasy) {
        if idle.count < max(1, configuration.maxTotalConnections) { idle.append(easy) }
    }
}
