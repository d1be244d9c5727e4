internal import CMicroHTTPD
internal import CPushShims
import Foundation
import Glibc
import class PushWorker.Log

/// An HTTP/1.1 server on GNU libmicrohttpd for the API and its management address: keep-alive,
/// limits on body size (413), header size and count (431), absolute request deadlines
/// (`ConnectionTracker`), per-address and total connection caps, and a graceful drain.
///
/// Threading (`Threading`): `.eventLoop` (the default) runs libmicrohttpd's epoll loop on a few
/// threads that only move bytes; each complete request is suspended (`MHD_suspend_connection`)
/// and handed to a bounded set of worker threads, sized to the database pool, which resume it
/// with the answer. Slow or idle clients then cost a socket and a little memory, never a thread,
/// and a request waiting for the database never holds up another connection's I/O. The queue in
/// front of the workers is bounded: past it the server answers 503 at once. `.threadPerConnection`
/// (one blocking thread per connection) is kept for comparison (`scripts/bench --only api`
/// measures both); see docs/api.md for the numbers and the choice.
public final class HTTPServer: @unchecked Sendable {
    /// How requests are run.
    public enum Threading: Sendable, Equatable {
        /// libmicrohttpd's epoll loop on `ioThreads` threads; handlers on `workers` threads.
        case eventLoop(ioThreads: Int, workers: Int)
        /// One thread per connection, handlers run on it.
        case threadPerConnection
    }

    /// Limits and threading.
    public struct Config: Sendable {
        /// Where to listen.
        public var address: ListenAddress
        /// How requests are run.
        public var threading: Threading = .eventLoop(ioThreads: 2, workers: 16)
        /// Requests waiting for a worker beyond which the server answers 503 (event loop only).
        public var queueLimit = 256
        /// Connections at once.
        public var connectionLimit: UInt32 = 1024
        /// Connections at once from one peer address (direct exposure only: behind a load
        /// balancer every connection comes from it, and per-key limits protect instead).
        public var perAddressLimit: UInt32 = 256
        /// Seconds a keep-alive connection may sit idle (longer than a load balancer's own, so the
        /// balancer closes first and never reuses a connection the server is closing).
        public var idleTimeoutSeconds: UInt32 = 75
        /// Seconds from a request line to its last body byte (absolute).
        public var requestDeadlineSeconds: Double = 10
        /// Largest body (bytes); more is 413.
        public var maxBodyBytes = 64 * 1024
        /// Largest header block (bytes, names and values); more is 431.
        public var maxHeaderBytes = 16 * 1024
        /// Most headers; more is 431.
        public var maxHeaderCount = 64
        /// libmicrohttpd's memory per connection (a header block beyond it gets its own 431). It is
        /// cleared for every request of a keep-alive connection, so it is kept small.
        public var connectionMemoryBytes = 32 * 1024
        /// Event name of libmicrohttpd's own log lines.
        public var logEvent: StaticString = "api.http"
        /// Lowest level of libmicrohttpd's own log lines written (the process's, set at start).
        public var logMinimum: Log.Level = .info

        /// Defaults above, on `address`.
        public init(address: ListenAddress) { self.address = address }
    }

    /// The port bound (the kernel's pick for port 0).
    public let port: UInt16
    let core: ServerCore
    private let lock = NSLock()
    private var daemon: OpaquePointer?
    private var sweeper: Thread?

    private init(daemon: OpaquePointer, port: UInt16, core: ServerCore) {
        self.daemon = daemon
        self.port = port
        self.core = core
    }

    /// Starts serving `handler`.
    /// - Throws: `APIConfigError` `API_START` when the address cannot be bound.
    public static func start(_ config: Config, handler: HTTPHandler) throws -> HTTPServer {
        let core = ServerCore(config: config, handler: handler)
        let cls = Unmanaged.passUnretained(core).toOpaque()
        cpush_mhd_set_log_minimum(Int32(config.logMinimum.rawValue))
        var threadPerConnection: Int32 = 0
        var ioThreads: UInt32 = 1
        switch config.threading {
        case .threadPerConnection: threadPerConnection = 1
        case .eventLoop(let io, _): ioThreads = UInt32(max(1, io))
        }
        let d: OpaquePointer? = config.address.withSockaddr { addr in
            var o = cpush_http_options(address: addr, thread_per_connection: threadPerConnection,
                                       thread_pool_size: ioThreads, connection_limit: config.connectionLimit,
                                       per_ip_connection_limit: config.perAddressLimit,
                                       idle_timeout_seconds: config.idleTimeoutSeconds,
                                       connection_memory_limit: config.connectionMemoryBytes, listen_backlog: 1024,
                                       log_event: UnsafeRawPointer(config.logEvent.utf8Start).assumingMemoryBound(to: CChar.self))
            return cpush_http_start(&o, httpAccessHandler, httpRequestCompleted, httpConnectionNotify, httpURILog, cls)
        }
        guard let d else {
            throw APIConfigError(code: "API_START", message: "cannot listen on \(config.address) (address in use or not local?)")
        }
        let bound = cpush_http_bound_port(d)
        let server = HTTPServer(daemon: d, port: bound == 0 ? config.address.port : bound, core: core)
        core.workers?.start()
        let sweeper = Thread { [weak server] in
            while let s = server, !s.core.stopped {
                s.core.tracker.sweep(now: ConnectionTracker.now())
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        sweeper.name = "pushfleet.http.sweeper"
        sweeper.start()
        server.sweeper = sweeper
        return server
    }

    /// Stops accepting connections (the listening socket is closed, so a load balancer's next
    /// connect goes elsewhere), closes idle keep-alive connections, and answers every request
    /// still arriving with `Connection: close`.
    public func beginDrain() {
        core.draining.set(true)
        core.tracker.beginDrain()
        lock.withLock {
            if let d = daemon {
                let fd = MHD_quiesce_daemon(d)
                if fd >= 0 { Glibc.close(fd) }
            }
        }
        core.tracker.sweep(now: ConnectionTracker.now())
    }

    /// Waits until no request is in flight or `deadline` passes; true when none is left.
    public func waitForInFlight(until deadline: Date) -> Bool {
        while core.tracker.inFlight > 0 {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    /// Requests in flight now.
    public var inFlight: Int { core.tracker.inFlight }

    /// Open connections now.
    public var connectionCount: Int { core.tracker.connections }

    /// Connections shut down because a request missed its deadline, so far.
    public var deadlineClosures: Int { core.tracker.deadlineClosures }

    /// Stops the daemon and its threads. With requests still suspended (a drain that timed out)
    /// the daemon is left to the process's exit, as libmicrohttpd cannot stop with them.
    public func stop() {
        core.stopped = true
        let d = lock.withLock { () -> OpaquePointer? in
            defer { daemon = nil }
            return daemon
        }
        guard let d else { return }
        if core.suspended.current > 0 { return }
        MHD_stop_daemon(d)
        core.workers?.stop()
    }

    deinit { stop() }
}

/// A thread-safe flag.
final class AtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set(_ v: Bool) { lock.withLock { value = v } }
    var current: Bool { lock.withLock { value } }
}

/// A thread-safe counter of small integers.
final class AtomicCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ n: Int) { lock.withLock { value += n } }
    var current: Int { lock.withLock { value } }
}

/// What the C callbacks reach through their `cls` pointer.
final class ServerCore: @unchecked Sendable {
    let config: HTTPServer.Config
    let handler: HTTPHandler
    let tracker: ConnectionTracker
    let workers: WorkerPool?
    let draining = AtomicFlag()
    let suspended = AtomicCount()
    var stopped = false

    init(config: HTTPServer.Config, handler: HTTPHandler) {
        self.config = config
        self.handler = handler
        tracker = ConnectionTracker(idleTimeout: Double(config.idleTimeoutSeconds), requestDeadline: config.requestDeadlineSeconds)
        if case .eventLoop(_, let n) = config.threading {
            workers = WorkerPool(threads: max(1, n), queueLimit: config.queueLimit)
        } else {
            workers = nil
        }
    }
}

/// One request's state between libmicrohttpd's calls (owned by the connection's tracker entry).
final class RequestState: @unchecked Sendable {
    let start = ConnectionTracker.now()
    let requestID = RequestState.newID()
    var started = false
    var method = ""
    var path = ""
    /// The request target as the request line carried it (before libmicrohttpd decodes the
    /// path in place), for `HTTPFraming.check(target:)`.
    var target: [UInt8] = []
    var headers: [HTTPRequest.Header] = []
    var headerBytes = 0
    /// The first framing problem a header showed (`HTTPFraming`), answered 400 once all are in.
    var refusal: HTTPFraming.Refusal?
    /// The answer closes the connection (`HTTPFraming.closesAfterAnswer`).
    var closeAfterAnswer = false
    var query: [HTTPRequest.QueryItem] = []
    var body: [UInt8] = []
    var bodyTooLarge = false
    var dispatched = false
    var status = 0
    var route = "unmatched"
    var keyPrefix: String?
    var client: String?
    private let lock = NSLock()
    private var pending: HTTPResponse?

    /// The answer a worker left for the resumed connection.
    var answer: HTTPResponse? {
        get { lock.withLock { pending } }
        set { lock.withLock { pending = newValue } }
    }

    /// `req_`, 8 hex digits drawn once per process and 12 of a counter: unique within the process
    /// and, in practice, across replicas, without a system call per request.
    static func newID() -> String {
        let n = idCounter.next()
        let tail = String(n, radix: 16)
        return "req_" + idPrefix + String(repeating: "0", count: max(0, 12 - tail.count)) + tail
    }

    private static let idPrefix: String = {
        var g = SystemRandomNumberGenerator()
        let v = String(UInt32.random(in: 0...UInt32.max, using: &g), radix: 16)
        return String(repeating: "0", count: 8 - v.count) + v
    }()
    private static let idCounter = Counter64()
}

/// A thread-safe increasing counter.
final class Counter64: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0
    func next() -> UInt64 { lock.withLock { value &+= 1; return value } }
}

/// A fixed set of threads running submitted work from a bounded queue.
final class WorkerPool: @unchecked Sendable {
    private let threads: Int
    private let queueLimit: Int
    private let condition = NSCondition()
    private var queue: [() -> Void] = []
    private var head = 0
    private var stopping = false

    init(threads: Int, queueLimit: Int) {
        self.threads = threads
        self.queueLimit = queueLimit
    }

    func start() {
        for i in 0..<threads {
            let t = Thread { [self] in run() }
            t.name = "pushfleet.http.worker.\(i)"
            t.stackSize = 1 << 20
            t.start()
        }
    }

    /// Queues `work`; false when the queue is full (the caller answers 503).
    func submit(_ work: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard queue.count - head < queueLimit, !stopping else { return false }
        queue.append(work)
        condition.signal()
        return true
    }

    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while head == queue.count && !stopping { condition.wait() }
            if head == queue.count { condition.unlock(); return }
            let work = queue[head]
            head += 1
            if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            condition.unlock()
            work()
        }
    }
}
