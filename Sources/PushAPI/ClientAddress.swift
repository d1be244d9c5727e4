import Foundation
import Glibc

/// The client address the access log records. Behind a load balancer the peer is the balancer:
/// `X-Forwarded-For` names the client only when the peer is a configured trusted proxy
/// (`PUSHFLEET_API_TRUSTED_PROXIES`, addresses or IPv4 CIDR blocks); then the rightmost hop that
/// is not itself trusted is the client. Otherwise the header is ignored (anyone can send it).
/// Per-address connection caps always use the peer. Pure.
public struct TrustedProxies: Sendable, Equatable {
    private var exact: Set<String> = []
    private var blocks: [(base: UInt32, mask: UInt32)] = []

    /// No trusted proxy: `X-Forwarded-For` is never read.
    public init() {}

    /// Parses a comma-separated list of addresses and IPv4 `a.b.c.d/n` blocks.
    /// - Throws: `APIConfigError` `USAGE` for an entry that is neither.
    public init(parsing text: String) throws {
        for raw in text.split(separator: ",") {
            let item = raw.trimmingCharacters(in: .whitespaces)
            if item.isEmpty { continue }
            if let slash = item.firstIndex(of: "/") {
                guard let base = Self.ipv4(String(item[..<slash])), let bits = Int(item[item.index(after: slash)...]),
                      (0...32).contains(bits) else {
                    throw APIConfigError(code: "USAGE", message: "PUSHFLEET_API_TRUSTED_PROXIES: bad block \(item.prefix(60))")
                }
                let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - UInt32(bits))
                blocks.append((base & mask, mask))
            } else {
                var a4 = in_addr(), a6 = in6_addr()
                guard inet_pton(AF_INET, item, &a4) == 1 || inet_pton(AF_INET6, item, &a6) == 1 else {
                    throw APIConfigError(code: "USAGE", message: "PUSHFLEET_API_TRUSTED_PROXIES: bad address \(item.prefix(60))")
                }
                exact.insert(item)
            }
        }
    }

    public static func == (a: TrustedProxies, b: TrustedProxies) -> Bool {
        a.exact == b.exact && a.blocks.map(\.base) == b.blocks.map(\.base) && a.blocks.map(\.mask) == b.blocks.map(\.mask)
    }

    /// True when `address` is a trusted proxy.
    public func trusts(_ address: String) -> Bool {
        if exact.contains(address) { return true }
        guard let v = Self.ipv4(address) else { return false }
        return blocks.contains { v & $0.mask == $0.base }
    }

    /// The client of a request from `peer` carrying `forwardedFor` (the header's value, if any).
    public func client(peer: String, forwardedFor: String?) -> String {
        guard trusts(peer), let header = forwardedFor else { return peer }
        let hops = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trusts(hop) { return String(hop.prefix(64)) }
        return hops.first.map { String($0.prefix(64)) } ?? peer
    }

    private static func ipv4(_ text: String) -> UInt32? {
        var a = in_addr()
        guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
        return UInt32(bigEndian: a.s_addr)
    }
}
