import Foundation
import Glibc

/// A deliberately plain HTTP/1.1 client over a TCP socket to 127.0.0.1, so tests control every
/// byte (malformed requests, invalid UTF-8, slow senders, header floods) and read answers
/// without any library's interpretation. Responses must carry `Content-Length` (the server's do).
final class RawHTTP {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        /// The body as a JSON object (Foundation's parser, independent of the product's).
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorField: String? { (json["error"] as? [String: Any])?["field"] as? String }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, timeout: Double = 15) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else {
            Glibc.close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port) failed (errno \(errno))")
        }
    }

    deinit { if !isClosed { Glibc.close(fd) } }

    private var isClosed = false

    /// Closes the socket at once with a reset (SO_LINGER 0), as a client that gives up does: the
    /// server's next read on it fails instead of seeing an orderly end of file.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
        isClosed = true
    }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send failed (errno \(errno))") }
            sent += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Request bytes: the request line, `Host`, the headers, `Content-Length` when there is a body.
    static func requestBytes(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + (body ?? [])
    }

    /// Sends a request on this connection and reads its answer.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> Response {
        try send(Self.requestBytes(method, path, headers: headers, body: body))
        return try readResponse()
    }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n < 0 { throw Failure(description: "recv failed or timed out (errno \(errno))") }
        if n == 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads an answer's status line and headers only (a HEAD answer carries no body).
    func readHead() throws -> Response {
        try readResponse(bodyless: true)
    }

    func readResponse(bodyless: Bool = false) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if let r = buffer.firstRange(of: separator) { headerEnd = r.lowerBound; break }
            guard try fill() else { throw Failure(description: "connection closed before a response") }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(head[0])") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = bodyless ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        let start = headerEnd! + 4
        while buffer.count < start + length {
            guard try fill() else { throw Failure(description: "connection closed inside a body") }
        }
        let body = Array(buffer[start..<(start + length)])
        buffer.removeFirst(start + length)
        return Response(status: status, headers: headers, body: body)
    }

    /// True when the server closes the connection within `seconds` (reads return end of file).
    func closes(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 50)
            if ready > 0 {
                let n = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if n == 0 || (n < 0 && errno != EAGAIN) { return true }
            }
        }
        return false
    }

    /// One request on a fresh connection.
    static func call(port: UInt16, _ method: String, _ path: String, headers: [(String, String)] = [],
                     body: [UInt8]? = nil) throws -> Response {
        try RawHTTP(port: port).request(method, path, headers: headers, body: body)
    }
}
