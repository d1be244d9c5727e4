import Foundation
import Glibc

/// The absolute deadlines of the HTTP server (so slow clients cannot starve the rest): a request
/// must arrive whole (request line, headers, body) within `requestDeadline` seconds of its
/// request line, and a connection waiting for a request gets `idleTimeout + requestDeadline`
/// whatever its pace (one byte a second resets libmicrohttpd's own idle timer, not these). An
/// expired connection's socket is shut down, which makes libmicrohttpd close it; a request the
/// handler has (`processing`) is bounded by the handler's own deadlines instead. While draining,
/// connections waiting for a request are shut down at once.
///
/// libmicrohttpd reports a connection closed before it closes the socket, and both run under
/// this object's lock with `sweep`, so a socket number is never shut down after it was reused.
final class ConnectionTracker: @unchecked Sendable {
    /// Where a connection is in its request cycle.
    enum Phase: Equatable {
        /// Between requests (or before the first): waiting for a request line.
        case idle
        /// Request line received; headers or body still arriving.
        case receiving
        /// Complete; the handler has it.
        case processing
    }

    final class Entry {
        let fd: Int32
        var phase: Phase = .idle
        var since: Double
        var shutDown = false
        /// The request in progress, owned here until it completes or the connection closes.
        var request: RequestState?
        init(fd: Int32, since: Double) {
            self.fd = fd
            self.since = since
        }
    }

    let idleTimeout: Double
    let requestDeadline: Double
    private let lock = NSLock()
    private var entries: [OpaquePointer: Entry] = [:]
    private var draining = false
    private(set) var deadlineClosures = 0

    init(idleTimeout: Double, requestDeadline: Double) {
        self.idleTimeout = idleTimeout
        self.requestDeadline = requestDeadline
    }

    /// Whether a connection in `phase` since `since` must be shut down at `now` (pure).
    static func expired(phase: Phase, since: Double, now: Double, draining: Bool, idleTimeout: Double,
                        requestDeadline: Double) -> Bool {
        switch phase {
        case .idle: return draining || now - since > idleTimeout + requestDeadline
        case .receiving: return now - since > requestDeadline
        case .processing: return false
        }
    }

    func opened(_ connection: OpaquePointer, fd: Int32, now: Double) {
        lock.withLock { entries[connection] = Entry(fd: fd, since: now) }
    }

    /// Forgets the connection; returns the request it still had (ended without completing).
    func closed(_ connection: OpaquePointer) -> RequestState? {
        lock.withLock { entries.removeValue(forKey: connection)?.request }
    }

    func requestStarted(_ connection: OpaquePointer, _ request: RequestState, now: Double) {
        lock.withLock {
            guard let e = entries[connection] else { return }
            e.phase = .receiving
            e.since = now
            e.request = request
        }
    }

    func requestComplete(_ connection: OpaquePointer) {
        lock.withLock { entries[connection]?.phase = .processing }
    }

    /// The request ended (answered or not); the connection waits for the next one.
    func requestEnded(_ connection: OpaquePointer, now: Double) -> RequestState? {
        lock.withLock {
            guard let e = entries[connection] else { return nil }
            e.phase = .idle
            e.since = now
            defer { e.request = nil }
            return e.request
        }
    }

    /// Requests between their request line and their end.
    var inFlight: Int { lock.withLock { entries.values.filter { $0.phase != .idle }.count } }

    /// Open connections.
    var connections: Int { lock.withLock { entries.count } }

    func beginDrain() { lock.withLock { draining = true } }

    /// Shuts down every expired connection's socket; returns how many.
    @discardableResult
    func sweep(now: Double) -> Int {
        lock.withLock {
            var n = 0
            for e in entries.values where !e.shutDown
                && Self.expired(phase: e.phase, since: e.since, now: now, draining: draining,
                                idleTimeout: idleTimeout, requestDeadline: requestDeadline) {
                e.shutDown = true
                _ = Glibc.shutdown(e.fd, Int32(SHUT_RDWR))
                if e.phase == .receiving { deadlineClosures += 1 }
                n += 1
            }
            return n
        }
    }

    /// Seconds on a monotonic clock.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
