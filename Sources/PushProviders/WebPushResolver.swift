#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a push service's host name gave no address (a transient condition: DNS may recover).
public struct WebPushResolveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable code: `webpush.dns_failed`.
    public let code: String
    /// Human explanation (the host name and the resolver's text; never a full endpoint).
    public let message: String

    /// `getaddrinfo` failed or returned no IPv4/IPv6 address for `host`.
    public static func failed(host: String, _ detail: String) -> WebPushResolveError {
        WebPushResolveError(code: "webpush.dns_failed", message: "\(host): \(detail)")
    }

    public var description: String { "\(code): \(message)" }
}

/// Resolves a push service host to the addresses a connection would use, so that the Web Push
/// client can check every one (R-DEV-1, issue 7) and pin them for libcurl (DNS rebinding).
/// Injected so that tests can make a name resolve to an internal address.
public protocol WebPushResolver: Sendable {
    /// All addresses of `host` for a TCP connection to `port`, as text (`93.184.216.34`,
    /// `2606:2800::1`, IPv6 without brackets), duplicates removed, in resolver order.
    /// - Throws: `WebPushResolveError` when the name does not resolve or gives no address.
    func addresses(host: String, port: Int) throws -> [String]
}

/// The system resolver (`getaddrinfo`, `AF_UNSPEC`, `SOCK_STREAM`): what libcurl itself would use.
/// Blocks the calling thread for the lookup.
public struct SystemWebPushResolver: WebPushResolver {
    /// Uses the system resolver.
    public init() {}

    /// See `WebPushResolver.addresses(host:port:)`.
    public func addresses(host: String, port: Int) throws -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw WebPushResolveError.failed(host: host, String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var out: [String] = []
        var node = list
        while let entry = node {
            if let text = Self.text(of: entry.pointee), !out.contains(text) { out.append(text) }
            node = entry.pointee.ai_next
        }
        guard !out.isEmpty else { throw WebPushResolveError.failed(host: host, "no IPv4 or IPv6 address") }
        return out
    }

    /// `inet_ntop` of an IPv4 or IPv6 `addrinfo`; nil for other families.
    private static func text(of info: addrinfo) -> String? {
        guard let sa = info.ai_addr else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch info.ai_family {
        case AF_INET:
            var v4 = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in.self).sin_addr
            guard inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        case AF_INET6:
            var v6 = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in6.self).sin6_addr
            guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        default:
            return nil
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
