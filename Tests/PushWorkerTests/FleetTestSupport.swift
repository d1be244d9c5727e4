import Foundation
import XCTest
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Base for the fleet tests: a fresh migrated database per test (`PGTestDatabase`, from
/// `PUSHFLEET_TEST_DATABASE_URL`), fixtures written through the product's SQL functions, and a
/// raw HTTP/1.0 client for the metrics endpoint.
class FleetDBTestCase: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!

    /// The repository's `sql/` directory.
    static let sqlDirectory = RepoPaths.sqlDirectory

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
    }

    override func tearDownWithError() throws {
        conn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// A worker configuration that reacts fast (short poll, short lease, quick rescue).
    static func fastConfig() -> WorkerConfig {
        WorkerConfig(owner: "test-\(UUID().uuidString.prefix(8))", claimLimit: 4, batchSize: 50, leaseSeconds: 3,
                     pollInterval: 0.1, rescueInterval: 0.5, statsInterval: 0.2)
    }

    /// Creates a push app with `users` users of `devicesPerUser` plaintext test devices each
    /// (tokens `tok-<n>`, accepted by the simulator). Returns the app id and the user ids.
    func seedApp(users: Int, devicesPerUser: Int) throws -> (UUID, [String]) {
        let app = try conn.exec("INSERT INTO push_apps (name) VALUES ('fleet') RETURNING id").uuid(0, "id")
        var userIDs: [String] = []
        for u in 0..<users {
            let user = "user-\(u)"
            userIDs.append(user)
            for d in 0..<devicesPerUser {
                try conn.exec("""
                    SELECT device_id FROM push_register_device($1::uuid, 'test', $2::text, $3::text, NULL, NULL, NULL,
                                                               $4::text, $5::text, 'keep', NULL, NULL)
                    """, [.uuid(app), .text(d % 2 == 0 ? "android" : "ios"), .text("tok-\(u)-\(d)"), .text(user),
                          d % 2 == 0 ? nil : .text("sandbox")])
            }
        }
        return (app, userIDs)
    }

    /// Enqueues a test-mode notification to `users` (push_enqueue); returns its id.
    @discardableResult
    func enqueue(app: UUID, users: [String], title: String = "Hello") throws -> UUID {
        try conn.exec("""
            SELECT notification_id FROM push_enqueue($1::uuid, 'test', $2::text[], NULL, $3::text, 'body', NULL, NULL,
                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """, [.uuid(app), .textArray(users), .text(title)]).uuid(0, "notification_id")
    }

    /// Number of notifications not yet final.
    func unfinishedNotifications() throws -> Int {
        try conn.exec("SELECT count(*) AS n FROM push_notifications WHERE finished_at IS NULL").int(0, "n")
    }

    /// Polls `condition` every 50 ms until true or `timeout` seconds pass; returns the last value.
    @discardableResult
    func waitUntil(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        try eventually(timeout: timeout, interval: 0.05, condition)
    }

    /// Runs `worker` on its own thread; the returned semaphore is signalled when `run()` returns.
    func start(_ worker: Worker) -> DispatchSemaphore { worker.runOnItsOwnThread() }
}

extension Worker {
    /// Runs the loop (`run()`) on a thread of its own; the returned semaphore is signalled when it returns.
    func runOnItsOwnThread() -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            self.run()
            done.signal()
        }
        return done
    }
}

/// A tiny blocking HTTP/1.0 client over a POSIX socket (127.0.0.1 only), for scraping the
/// metrics endpoint and for misbehaving clients.
enum RawHTTP {
    struct Response {
        var status: Int
        var headers: String
        var body: String
    }

    /// Opens a TCP connection to 127.0.0.1:`port` with a receive timeout, from the loopback address
    /// `source` (host byte order, e.g. 0x7F00_0002 for 127.0.0.2) when given; returns the descriptor.
    static func connect(port: UInt16, timeoutSeconds: Int = 5, source: UInt32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NSError(domain: "RawHTTP", code: 1) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = source.bigEndian
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw NSError(domain: "RawHTTP", code: 3, userInfo: [NSLocalizedDescriptionKey: "bind failed errno \(errno)"])
            }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw NSError(domain: "RawHTTP", code: 2, userInfo: [NSLocalizedDescriptionKey: "connect failed errno \(errno)"])
        }
        return fd
    }

    /// Sends `raw` bytes and reads until the server closes (or the timeout); returns the raw answer.
    static func exchange(port: UInt16, raw: String, source: UInt32? = nil) throws -> String {
        let fd = try connect(port: port, source: source)
        defer { close(fd) }
        let bytes = Array(raw.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `METHOD path` over HTTP/1.0; parses the status line, headers and body.
    static func request(port: UInt16, _ path: String, method: String = "GET", source: UInt32? = nil) throws -> Response {
        let text = try exchange(port: port, raw: "\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", source: source)
        guard let split = text.range(of: "\r\n\r\n") else { return Response(status: 0, headers: text, body: "") }
        let head = String(text[..<split.lowerBound])
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Response(status: status, headers: head, body: String(text[split.upperBound...]))
    }

    /// The value of an unlabelled or labelled series in Prometheus text (`name{labels}` exactly as
    /// rendered), nil when absent.
    static func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}
