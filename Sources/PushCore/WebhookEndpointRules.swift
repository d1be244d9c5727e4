import PushCrypto

/// What a webhook endpoint may be (issue 19, R-HOOK-3, R-MODE-1), checked when it is created or
/// changed; the worker checks the URL again at send time with the addresses it resolves to.
/// Every refusal is `VALIDATION_ERROR` naming its field (`url`, `events`; the message starts with it).
public enum WebhookEndpointRules {
    /// At most this many endpoints per app and mode (each event fans out to all of them).
    public static let maximumEndpointsPerAppAndMode = 20

    /// The URL checked as an outbound address: `OutboundURL` (https, RFC 3986 characters, no user
    /// info, no internal host). `allowLoopback` (`PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK=1`, local testing
    /// only) admits loopback hosts, and in test mode also `http://` to them.
    /// - Throws: `PushError` `VALIDATION_ERROR`.
    @discardableResult
    public static func validateURL(_ url: String, mode: Mode, allowLoopback: Bool) throws -> OutboundURL {
        do {
            return try OutboundURL(url, field: "url", allowLoopback: allowLoopback,
                                   allowPlainHTTPToLoopback: allowLoopback && mode == .test)
        } catch let e as WebPushError {
            throw PushError(.validationError, "url: \(e.message)", field: "url")
        }
    }

    /// The endpoint's event types: `defaultSubscription` when none are given; otherwise the
    /// known types named, without duplicates, in `WebhookEventType.allCases` order.
    /// - Throws: `PushError` `VALIDATION_ERROR` naming an unknown type.
    public static func eventTypes(_ names: [String]?) throws -> [WebhookEventType] {
        guard let names, !names.isEmpty else { return WebhookEventType.defaultSubscription }
        var chosen = Set<WebhookEventType>()
        for name in names {
            guard let type = WebhookEventType(rawValue: name) else {
                let known = WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")
                throw PushError(.validationError, "events: unknown event type \"\(name.prefix(64))\" (known: \(known))",
                                field: "events")
            }
            chosen.insert(type)
        }
        return WebhookEventType.allCases.filter(chosen.contains)
    }
}
