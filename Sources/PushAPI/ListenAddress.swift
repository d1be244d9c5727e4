import Foundation
import Glibc

/// Where a server listens: `HOST:PORT` with HOST an IPv4 literal (`0.0.0.0` every interface,
/// `127.0.0.1` loopback), `localhost`, `*` or empty (every IPv4 interface), or a bracketed IPv6
/// literal (`[::]`, `[::1]`). Port 0 asks the kernel for a free port.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The numeric host (`0.0.0.0`, `127.0.0.1`, `::1`, ...).
    public var host: String
    /// TCP port.
    public var port: UInt16
    /// True for an IPv6 host.
    public var isIPv6: Bool

    /// Parses `HOST:PORT`.
    /// - Throws: `APIConfigError` code `API_ADDR` for anything else.
    public static func parse(_ text: String) throws -> ListenAddress {
        let t = text.trimmingCharacters(in: .whitespaces)
        func bad() -> APIConfigError {
            APIConfigError(code: "API_ADDR", message: "address must be HOST:PORT (e.g. 0.0.0.0:8080, 127.0.0.1:0, [::]:8080), got \(t.prefix(60))")
        }
        guard let colon = t.lastIndex(of: ":"), let port = UInt16(t[t.index(after: colon)...]) else { throw bad() }
        var host = String(t[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            var a6 = in6_addr()
            guard inet_pton(AF_INET6, host, &a6) == 1 else { throw bad() }
            return ListenAddress(host: host, port: port, isIPv6: true)
        }
        switch host {
        case "", "*": host = "0.0.0.0"
        case "localhost": host = "127.0.0.1"
        default: break
        }
        var a4 = in_addr()
        guard inet_pton(AF_INET, host, &a4) == 1 else { throw bad() }
        return ListenAddress(host: host, port: port, isIPv6: false)
    }

    /// `HOST:PORT` (IPv6 hosts bracketed).
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with the address as a `sockaddr` (`sockaddr_in` or `sockaddr_in6`).
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        if isIPv6 {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            _ = inet_pton(AF_INET6, host, &a.sin6_addr)
            return withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        _ = inet_pton(AF_INET, host, &a.sin_addr)
        return withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }
}

/// A configuration error of the API server, with a stable code (`API_ADDR`, `API_START`,
/// `USAGE`) and a human message.
public struct APIConfigError: Error, CustomStringConvertible, Sendable {
    /// Stable code.
    public var code: String
    /// Human message.
    public var message: String
    /// Makes an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
    /// `CODE: message`.
    public var description: String { "\(code): \(message)" }
}
