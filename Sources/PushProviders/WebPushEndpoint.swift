import Foundation
import PushCore
import PushCrypto

/// A subscription endpoint checked for sending: validated as at registration
/// (`WebPushSubscription.validateEndpoint`: https, RFC 3986 characters, no user info, a host that is
/// not internal), split into what the send-time guard needs. Used by `WebPushClient` only.
struct WebPushEndpoint: Equatable {
    /// - Throws: `WebPushError` `VALIDATION_ERROR(endpoint)` for any URL the registration check refuses.
    init(_ url: String, allowLoopback: Bool) throws {
        checked = try OutboundURL(url, field: "endpoint", allowLoopback: allowLoopback)
    }

    /// The validated URL.
    private let checked: OutboundURL
    /// The URL exactly as stored (what libcurl is given).
    var url: String { checked.url }
    /// `https://host[:port]`: the VAPID `aud` and the token cache key (RFC 8292 §2).
    var origin: String { checked.origin }
    /// Host as in the URL, lower-cased, IPv6 without brackets.
    var host: String { checked.host }
    /// TCP port (443 when the URL has none).
    var port: Int { checked.port }
    /// True when `host` is an IP literal (nothing to resolve or pin; already checked).
    var isIPLiteral: Bool { checked.isIPLiteral }

    /// CURLOPT_RESOLVE entries pinning `host:port` to `addresses` (see `OutboundURL.resolveEntries`).
    func resolveEntries(_ addresses: [String]) -> [String] { checked.resolveEntries(addresses) }
}
