import struct Foundation.URLComponents
import PushCrypto

/// A URL the worker may call out to (Web Push endpoints, R-DEV-1; webhook endpoints, R-HOOK-3),
/// validated and split into what the send-time address guard needs. The URL must parse, be at
/// most 2048 bytes of RFC 3986 characters only (unreserved, reserved, `%`: so no space, control,
/// backslash or non-ASCII byte on which URL parsers could disagree with libcurl), use `https`
/// (or `http` to a loopback host when the caller allows it), carry no user info, and have a host
/// that `WebPushAddressPolicy.checkHost` accepts (no loopback, private, link-local, unique-local,
/// CGNAT, unspecified or otherwise internal address or name). Every refusal is
/// `VALIDATION_ERROR(field)`.
public struct OutboundURL: Equatable, Sendable {
    /// Longest URL accepted, in UTF-8 bytes (product decision; real push services use ~250).
    public static let maximumLength = 2048

    /// The URL exactly as given (what libcurl is handed).
    public let url: String
    /// `https` or `http`, lower-cased.
    public let scheme: String
    /// Host as in the URL, lower-cased, IPv6 without brackets.
    public let host: String
    /// TCP port (the scheme's default when the URL has none).
    public let port: Int
    /// `scheme://host[:port]`, the port shown only when it is not the scheme's default.
    public let origin: String
    /// True when `host` is an IP literal (nothing to resolve).
    public let isIPLiteral: Bool

    /// Validates `text`.
    /// - Parameters:
    ///   - field: the field named in errors (`endpoint`, `url`).
    ///   - allowLoopback: admit 127/8, ::1 and `localhost` (local testing only).
    ///   - allowPlainHTTPToLoopback: admit `http://` when the host is loopback (and `allowLoopback`).
    /// - Throws: `WebPushError` `VALIDATION_ERROR(field)`.
    public init(_ text: String, field: String, allowLoopback: Bool = false, allowPlainHTTPToLoopback: Bool = false) throws {
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength else {
            throw WebPushError.validation(field, "must be 1...\(Self.maximumLength) bytes")
        }
        guard text.utf8.allSatisfy(Self.isURLCharacter) else {
            throw WebPushError.validation(field, "contains characters outside RFC 3986 (spaces, controls, backslash, non-ASCII)")
        }
        guard let parts = URLComponents(string: text), let rawScheme = parts.scheme else {
            throw WebPushError.validation(field, "is not a URL")
        }
        let scheme = rawScheme.lowercased()
        guard scheme == "https" || (scheme == "http" && allowPlainHTTPToLoopback && allowLoopback) else {
            throw WebPushError.validation(field, "scheme must be https")
        }
        guard parts.user == nil, parts.password == nil else {
            throw WebPushError.validation(field, "must not carry user info")
        }
        // The host as written (`encodedHost`): `host` would decode an IDN A-label (`xn--...`, RFC 5890)
        // to Unicode, and percent-escapes, so the name checked would not be the one resolved.
        guard var host = parts.encodedHost?.lowercased(), !host.isEmpty else {
            throw WebPushError.validation(field, "has no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        do {
            try WebPushAddressPolicy.checkHost(host, allowLoopback: allowLoopback)
        } catch let e as WebPushError {
            throw WebPushError.validation(field, e.message)
        }
        if scheme == "http" {
            guard Self.isLoopbackHost(host) else {
                throw WebPushError.validation(field, "http is allowed only to a loopback host; use https")
            }
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = parts.port ?? defaultPort
        guard (1...65535).contains(port) else { throw WebPushError.validation(field, "port out of range") }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        self.url = text
        self.scheme = scheme
        self.host = host
        self.port = port
        self.origin = port == defaultPort ? "\(scheme)://\(shownHost)" : "\(scheme)://\(shownHost):\(port)"
        self.isIPLiteral = WebPushAddressPolicy.parseIPAddress(host) != nil
    }

    /// CURLOPT_RESOLVE entries pinning `host:port` to `addresses` (IPv6 in brackets), so libcurl
    /// connects to exactly the addresses that were checked (DNS rebinding). A name written with a
    /// final dot gets an entry for both spellings, so libcurl finds the pin either way.
    public func resolveEntries(_ addresses: [String]) -> [String] {
        let list = addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
        var names = [host]
        if host.hasSuffix(".") { names.append(String(host.dropLast())) }
        return names.map { "\($0):\(port):\(list)" }
    }

    /// The send-time address guard on what `host` resolved to: each of `addresses` must pass
    /// `WebPushAddressPolicy.checkResolvedAddress`; then the CURLOPT_RESOLVE entries pinning
    /// exactly them (`resolveEntries`). Callers handle an empty list themselves.
    /// - Throws: `RefusedAddress` naming the first address refused and why.
    public func pinnedEntries(_ addresses: [String], allowLoopback: Bool) throws(RefusedAddress) -> [String] {
        for address in addresses {
            do {
                try WebPushAddressPolicy.checkResolvedAddress(address, allowLoopback: allowLoopback)
            } catch {
                throw RefusedAddress(address: address, error: error)
            }
        }
        return resolveEntries(addresses)
    }

    /// A resolved address the send-time guard refused (`pinnedEntries`).
    public struct RefusedAddress: Error {
        /// The address as resolved.
        public let address: String
        /// Why: the `WebPushError` of `WebPushAddressPolicy.checkResolvedAddress`.
        public let error: any Error
    }

    /// True for `localhost`, `*.localhost` and loopback IP literals.
    static func isLoopbackHost(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") || host == "localhost." { return true }
        guard let bytes = WebPushAddressPolicy.parseIPAddress(host) else { return false }
        return WebPushAddressPolicy.classify(address: bytes) == .loopback
    }

    /// RFC 3986 characters: ALPHA DIGIT `-._~` (unreserved), `:/?#[]@!$&'()*+,;=` (reserved), `%`.
    static func isURLCharacter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("-._~:/?#[]@!$&'()*+,;=%".utf8).contains(c)
        }
    }
}
