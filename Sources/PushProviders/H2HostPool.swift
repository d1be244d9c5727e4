import Foundation

/// The pooled connections of one `https://authority` (host and port as the URLs write them),
/// kept by an `NGHTTP2Client` across batches.
final class H2HostPool {
    /// The authority's bytes as written in the URLs (`:authority` of every request).
    let authority: [UInt8]
    let authorityText: String
    /// Host without IPv6 brackets (DNS name or IP literal).
    let host: String
    let port: UInt16
    /// The host is an IPv4 or IPv6 literal (certificate IP check, no SNI).
    let isIPLiteral: Bool
    let tls: H2TLSContext
    let template: H2SessionTemplate
    var connections: [H2Connection] = []
    /// Connections in a row that closed or failed without one answer; an answer resets it.
    var failuresInARow = 0
    /// Why the last connection failed.
    var lastFailure = ""

    /// nil for an authority without a host, with user information, or with a bad port.
    init?(authority bytes: UnsafeBufferPointer<UInt8>, tls: H2TLSContext, template: H2SessionTemplate) {
        guard !bytes.isEmpty, !bytes.contains(UInt8(ascii: "@")) else { return nil }
        var hostBytes = bytes[...]
        var portBytes: Slice<UnsafeBufferPointer<UInt8>>?
        if bytes[0] == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = bytes[1..<close]
            let rest = bytes[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                portBytes = rest.dropFirst()
            }
        } else if let colon = bytes.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = bytes[..<colon]
            portBytes = bytes[(colon + 1)...]
            guard !hostBytes.contains(UInt8(ascii: ":")) else { return nil }
        }
        var port = 443
        if let digits = portBytes {
            guard !digits.isEmpty, digits.count <= 5,
                  digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            port = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard (1...65535).contains(port) else { return nil }
        }
        guard !hostBytes.isEmpty else { return nil }
        authority = Array(bytes)
        authorityText = String(decoding: bytes, as: UTF8.self)
        host = String(decoding: hostBytes, as: UTF8.self)
        self.port = UInt16(port)
        var v4 = in_addr(), v6 = in6_addr()
        isIPLiteral = inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
        self.tls = tls
        self.template = template
    }

    /// True when `bytes` is this pool's authority.
    func matches(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count == authority.count && authority.withUnsafeBufferPointer { a in memcmp(a.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
    }

    /// Connections that may take new streams (or will, once connected).
    var liveConnections: Int { connections.reduce(0) { $0 + ($1.state != .closed && !$1.draining && $1.failure == nil ? 1 : 0) } }

    /// Streams in flight over all connections.
    var inFlight: Int { connections.reduce(0) { $0 + $1.inFlight } }

    /// Drops closed connections from the list.
    func compact() {
        if connections.contains(where: { $0.state == .closed }) { connections.removeAll { $0.state == .closed } }
    }
}
