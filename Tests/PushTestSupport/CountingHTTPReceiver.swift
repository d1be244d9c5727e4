import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 (port 0) for load tests: a thread per connection,
/// keep-alive, reads each request's headers and `content-length` body, answers `204 No Content`,
/// and counts requests and distinct `webhook-id` values. Much faster than the Python receiver,
/// which verifies signatures (tests that check signatures use that one). Stopped by `stop()`.
public final class CountingHTTPReceiver: @unchecked Sendable {
    /// The port it listens on.
    public let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var requests = 0
    private var ids = Set<String>()
    private var stopped = false

    /// Starts listening. - Throws: `FakeProcessError` `receiver_start` when the socket cannot be bound.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FakeProcessError(code: "receiver_start", "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw FakeProcessError(code: "receiver_start", "bind/listen: errno \(errno)")
        }
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &out) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        listener = fd
        port = Int(UInt16(bigEndian: out.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// Requests answered so far.
    public var requestCount: Int { lock.withLock { requests } }
    /// Distinct `webhook-id` header values seen so far.
    public var distinctWebhookIDs: Int { lock.withLock { ids.count } }

    /// Stops accepting (open connections end when their clients close them).
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        if first {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    private func acceptLoop() {
        while true {
            let c = accept(listener, nil, nil)
            if c < 0 {
                if lock.withLock({ stopped }) { return }
                continue
            }
            Thread.detachNewThread { [self] in serve(c) }
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let reply = Array("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n".utf8)
        while true {
            // Headers.
            var headerEnd: Int?
            while headerEnd == nil {
                if let r = Self.find(buffer, [13, 10, 13, 10]) { headerEnd = r; break }
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { return }
                buffer.append(contentsOf: chunk[0..<n])
            }
            guard let end = headerEnd else { return }
            let (length, id) = Self.fields(buffer[0..<end])
            let total = end + 4 + length
            while buffer.count < total {
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { return }
                buffer.append(contentsOf: chunk[0..<n])
            }
            buffer.removeFirst(total)
            lock.withLock {
                requests += 1
                if let id { ids.insert(id) }
            }
            var sent = 0
            while sent < reply.count {
                let n = reply[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                sent += n
            }
        }
    }

    private static func find(_ hay: [UInt8], _ needle: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        var i = 0
        while i <= hay.count - needle.count {
            if hay[i] == needle[0] && hay[i + 1] == needle[1] && hay[i + 2] == needle[2] && hay[i + 3] == needle[3] { return i }
            i += 1
        }
        return nil
    }

    /// `content-length` and `webhook-id` of a header block (names case-insensitive), over bytes.
    private static func fields(_ head: ArraySlice<UInt8>) -> (Int, String?) {
        var length = 0
        var id: String?
        for line in head.split(separator: 10) {
            guard let colon = line.firstIndex(of: 58) else { continue }
            let name = line[line.startIndex..<colon].map { $0 | 0x20 }
            var value = line[(colon + 1)...]
            while value.first == 32 { value = value.dropFirst() }
            while value.last == 13 || value.last == 32 { value = value.dropLast() }
            if name == Array("content-length".utf8) {
                length = value.reduce(0) { $0 * 10 + Int($1) - 48 }
            } else if name == Array("webhook-id".utf8) {
                id = String(decoding: value, as: UTF8.self)
            }
        }
        return (length, id)
    }
}
