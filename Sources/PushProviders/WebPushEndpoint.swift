import Foundation
import PushCore
import PushCrypto

/// A subscription endpoint checked for sending: validated as at registration
/// (`WebPushSubscription.validateEndpoint`: https, RFC 3986 characters, no user info, a host that is
/// not internal), split into what the send-time guard needs. Used by `WebPushClient` only.
struct WebPushEndpoint: Equatable {
    /// The URL exactly as stored (what libcurl is given).
    let url: String
    /// `https://host[:port]`: the VAPID `aud` and the token cache key (RFC 8292 §2).
    let origin: String
    /// Host as in the URL, lower-cased, IPv6 without brackets.
    let host: String
    /// TCP port (443 when the URL has none).
    let port: Int
    /// True when `host` is an IP literal (nothing to resolve or pin; already checked).
    let isIPLiteral: Bool

    /// - Throws: `WebPushError` `VALIDATION_ERROR(endpoint)` for any URL the registration check refuses.
    init(_ url: String, allowLoopback: Bool) throws {
        let origin = try WebPushSubscription.validateEndpoint(url, allowLoopback: allowLoopback)
        guard let parts = URLComponents(string: url), var host = parts.host?.lowercased() else {
            throw WebPushError.validation("endpoint", "is not a URL")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.url = url
        self.origin = origin
        self.host = host
        self.port = parts.port ?? 443
        self.isIPLiteral = WebPushAddressPolicy.parseIPAddress(host) != nil
    }

    /// CURLOPT_RESOLVE entries pinning `host:port` to `addresses` (IPv6 in brackets). A name written
    /// with a final dot gets an entry for both spellings, so libcurl finds the pin either way.
    func resolveEntries(_ addresses: [String]) -> [String] {
        let list = addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
        var names = [host]
        if host.hasSuffix(".") { names.append(String(host.dropLast())) }
        return names.map { "\($0):\(port):\(list)" }
    }
}
