#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PushCrypto

/// What kind of network an IP address belongs to, for the Web Push endpoint guard (R-DEV-1):
/// only `globalUnicast` is reachable as a push service; `loopback` only when tests allow it.
public enum WebPushAddressClass: String, Equatable, Sendable {
    /// A public address: IPv4 outside every range below, IPv6 in 2000::/3 outside them.
    case globalUnicast = "global"
    /// 127.0.0.0/8, ::1 (and their IPv4-mapped forms).
    case loopback
    /// 10/8, 172.16/12, 192.168/16, and the deprecated IPv6 site-local fec0::/10.
    case privateNetwork = "private"
    /// 100.64.0.0/10, carrier-grade NAT shared space (RFC 6598).
    case sharedAddressSpace = "shared"
    /// 169.254/16, fe80::/10.
    case linkLocal = "link-local"
    /// fc00::/7 (RFC 4193).
    case uniqueLocal = "unique-local"
    /// 0.0.0.0/8, ::.
    case unspecified
    /// 224/4, ff00::/8.
    case multicast
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32.
    case documentation
    /// Everything else not routable on the Internet: 192.0.0/24, 192.88.99/24, 198.18/15,
    /// 240/4 (broadcast included), IPv4-compatible ::/96, 100::/64, 2001::/32 (Teredo),
    /// 64:ff9b:1::/48, and IPv6 outside 2000::/3.
    case reserved
}

/// Pure checks of endpoint hosts and resolved addresses against internal networks
/// (R-DEV-1: a subscription endpoint must never make the worker call into our own network).
/// The same rules run twice: on the URL's host at registration, and on each address the
/// name resolves to at send time (DNS may change in between).
public enum WebPushAddressPolicy {
    /// Classifies a 4-byte IPv4 or 16-byte IPv6 address (network byte order). IPv4-mapped
    /// (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are classified by
    /// the IPv4 address they carry. Any other length is `reserved`.
    public static func classify(address bytes: [UInt8]) -> WebPushAddressClass {
        switch bytes.count {
        case 4: return classifyIPv4(bytes)
        case 16: return classifyIPv6(bytes)
        default: return .reserved
        }
    }

    /// Parses a textual IPv4 (dotted quad, canonical only) or IPv6 address (with or without
    /// brackets, no zone id) into 4 or 16 bytes; nil when it is neither.
    public static func parseIPAddress(_ text: String) -> [UInt8]? {
        var t = text
        if t.hasPrefix("["), t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, t, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, t, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// Checks an address the endpoint's name resolved to (text, as curl's primary IP or
    /// getaddrinfo give it), just before connecting. Throws `VALIDATION_ERROR(endpoint)` when it
    /// is not a parseable IP or not `globalUnicast` (`loopback` passes when `allowLoopback`).
    public static func checkResolvedAddress(_ address: String, allowLoopback: Bool = false) throws {
        guard let bytes = parseIPAddress(address) else {
            throw WebPushError.validation("endpoint", "resolved address is not an IP address")
        }
        try check(bytes, allowLoopback: allowLoopback)
    }

    /// Checks raw address bytes (4 or 16) like `checkResolvedAddress(_:allowLoopback:)`.
    public static func check(_ address: [UInt8], allowLoopback: Bool = false) throws {
        let kind = classify(address: address)
        if kind == .globalUnicast || (allowLoopback && kind == .loopback) { return }
        throw WebPushError.validation("endpoint", "address is \(kind.rawValue), not a public Internet address")
    }

    /// Checks an endpoint URL's host: a DNS name or an IP literal (IPv6 with or without
    /// brackets). Refuses: IP literals outside `globalUnicast`; non-canonical IPv4 forms that
    /// resolvers still accept (`127.1`, `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`); `localhost`
    /// and `*.localhost` (allowed with `allowLoopback`); single-label names and the internal
    /// suffixes `.local`, `.localdomain`, `.internal`, `.home.arpa`; anything that is not
    /// LDH labels of 1...63 characters, 253 in all. Throws `VALIDATION_ERROR(endpoint)`.
    public static func checkHost(_ host: String, allowLoopback: Bool = false) throws {
        var name = host.lowercased()
        if name.hasPrefix("[") || name.contains(":") {
            guard let bytes = parseIPAddress(name), bytes.count == 16 else {
                throw WebPushError.validation("endpoint", "host is not a valid IPv6 literal")
            }
            return try check(bytes, allowLoopback: allowLoopback)
        }
        if let bytes = parseIPAddress(name) { return try check(bytes, allowLoopback: allowLoopback) }
        if name.hasSuffix(".") { name.removeLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 253,
              labels.allSatisfy({ (1...63).contains($0.utf8.count) && $0.utf8.allSatisfy(isLDH)
                                  && $0.first != "-" && $0.last != "-" }) else {
            throw WebPushError.validation("endpoint", "host is not a valid DNS name")
        }
        if let last = labels.last, looksNumeric(last) {
            throw WebPushError.validation("endpoint", "host is a non-canonical IPv4 literal")
        }
        if name == "localhost" || name.hasSuffix(".localhost") {
            if allowLoopback { return }
            throw WebPushError.validation("endpoint", "host is localhost")
        }
        guard labels.count >= 2 else {
            throw WebPushError.validation("endpoint", "host is a single-label (internal) name")
        }
        for suffix in internalSuffixes where name.hasSuffix(suffix) {
            throw WebPushError.validation("endpoint", "host is under the internal domain \(suffix)")
        }
    }

    // MARK: - Private

    private static let internalSuffixes = [".local", ".localdomain", ".internal", ".home.arpa"]

    private static func isLDH(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
            || c == UInt8(ascii: "-")
    }

    /// A last label that URL parsers and resolvers read as a number (decimal, octal or 0x-hex).
    private static func looksNumeric(_ label: Substring) -> Bool {
        if label.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) { return true }
        guard label.hasPrefix("0x") else { return false }
        return label.dropFirst(2).utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
            || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f")) }
    }

    private static func classifyIPv4(_ b: [UInt8]) -> WebPushAddressClass {
        switch (b[0], b[1], b[2]) {
        case (0, _, _): return .unspecified
        case (10, _, _): return .privateNetwork
        case (100, 64...127, _): return .sharedAddressSpace
        case (127, _, _): return .loopback
        case (169, 254, _): return .linkLocal
        case (172, 16...31, _): return .privateNetwork
        case (192, 0, 0), (192, 88, 99): return .reserved
        case (192, 0, 2), (198, 51, 100), (203, 0, 113): return .documentation
        case (192, 168, _): return .privateNetwork
        case (198, 18...19, _): return .reserved
        case (224...239, _, _): return .multicast
        case (240...255, _, _): return .reserved
        default: return .globalUnicast
        }
    }

    private static func classifyIPv6(_ b: [UInt8]) -> WebPushAddressClass {
        let firstTen = b[0..<10].allSatisfy { $0 == 0 }
        if firstTen && b[10] == 0xff && b[11] == 0xff { return classifyIPv4(Array(b[12..<16])) }
        if firstTen && b[10] == 0 && b[11] == 0 {
            if b[12..<15].allSatisfy({ $0 == 0 }) {
                if b[15] == 0 { return .unspecified }
                if b[15] == 1 { return .loopback }
            }
            return .reserved
        }
        if b[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return classifyIPv4(Array(b[12..<16])) }
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xff, b[3] == 0x9b, b[4] == 0, b[5] == 1 { return .reserved }
        if b[0] == 0x20, b[1] == 0x02 { return classifyIPv4(Array(b[2..<6])) }
        if b[0] == 0xff { return .multicast }
        if b[0] == 0xfe, b[1] & 0xc0 == 0x80 { return .linkLocal }
        if b[0] == 0xfe, b[1] & 0xc0 == 0xc0 { return .privateNetwork }
        if b[0] & 0xfe == 0xfc { return .uniqueLocal }
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0d, b[3] == 0xb8 { return .documentation }
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0, b[3] == 0 { return .reserved }
        if b[0] & 0xe0 != 0x20 { return .reserved }
        return .globalUnicast
    }
}
