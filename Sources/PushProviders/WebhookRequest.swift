import Foundation
import PushCore
import PushCrypto

/// Builds a webhook's HTTP request and runs the send-time address guard (R-HOOK-3), the same one
/// Web Push endpoints pass: the URL is checked again (`WebhookEndpointRules.validateURL`: https,
/// or http to loopback in test mode with `allowLoopback`; no internal host), its host's addresses
/// are each checked with `WebPushAddressPolicy` (loopback, private, link-local, unique-local,
/// CGNAT, reserved refused; loopback admitted with `allowLoopback`), and the request pins exactly
/// those addresses (CURLOPT_RESOLVE), so a DNS answer that changes between the check and the
/// connection cannot redirect it. Resolution is the caller's (it may block): `target` says whether
/// a name needs resolving, `pin` checks what it resolved to.
public enum WebhookRequest {
    /// Per-request deadline, connection included (R-HOOK issue 19: 10 s).
    public static let timeoutMillis = 10_000
    /// Largest answer read, in bytes: past it the transfer stops (the status counts, the connection
    /// is closed), so an endpoint streaming an endless answer holds its slot no longer than that.
    public static let maxResponseBytes = 4096
    /// The `user-agent` sent.
    public static let userAgent = "pushfleet-webhooks/1"

    /// The checked URL, or the refusal (`ENDPOINT_FORBIDDEN`).
    public static func target(url: String, mode: Mode, allowLoopback: Bool) -> Result<OutboundURL, WebhookFailure> {
        do {
            return .success(try WebhookEndpointRules.validateURL(url, mode: mode, allowLoopback: allowLoopback))
        } catch let e as PushError {
            return .failure(WebhookFailure(code: WebhookFailure.endpointForbidden, detail: e.message))
        } catch {
            return .failure(WebhookFailure(code: WebhookFailure.endpointForbidden, detail: "\(error)"))
        }
    }

    /// CURLOPT_RESOLVE entries pinning `target`'s host to `addresses` once each passed the guard,
    /// or the refusal (`ENDPOINT_FORBIDDEN`) naming the first address that did not. An IP literal
    /// needs no pin (it was checked with the URL); pass it no addresses.
    public static func pin(_ target: OutboundURL, addresses: [String], allowLoopback: Bool) -> Result<[String], WebhookFailure> {
        if target.isIPLiteral { return .success([]) }
        guard !addresses.isEmpty else {
            return .failure(WebhookFailure(code: WebhookFailure.notSent, detail: "\(target.host) has no address"))
        }
        do {
            return .success(try target.pinnedEntries(addresses, allowLoopback: allowLoopback))
        } catch {
            guard let e = error.error as? WebPushError else {
                return .failure(WebhookFailure(code: WebhookFailure.endpointForbidden, detail: "\(error.error)"))
            }
            return .failure(WebhookFailure(code: WebhookFailure.endpointForbidden,
                                           detail: "\(target.host) resolves to \(error.address): \(e.message)"))
        }
    }

    /// The signed POST of `body` (Standard Webhooks headers: `webhook-id`, `webhook-timestamp` =
    /// `timestamp` in Unix seconds, `webhook-signature` with one `v1` signature per secret).
    /// - Throws: `CryptoError` only if OpenSSL fails to sign.
    public static func make(target: OutboundURL, pins: [String], messageID: String, timestamp: Int64, body: [UInt8],
                            secrets: [WebhookSecret]) throws -> HTTPRequest {
        let signature = try WebhookSignature.header(messageID: messageID, timestamp: timestamp, body: body, secrets: secrets)
        return HTTPRequest(url: target.url, method: "POST", headers: [
            ("content-type", "application/json"),
            ("user-agent", userAgent),
            ("webhook-id", messageID),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature),
        ], body: body, timeoutMillis: timeoutMillis, resolve: pins)
    }

    /// Connection settings for the dispatcher's `HTTPTransferPool`: no per-host limit (the
    /// dispatcher bounds each endpoint), `maxConnections` in all, answers capped at
    /// `maxResponseBytes` (reading stops there), `http` allowed only when `allowPlainHTTP` (loopback testing).
    public static func poolConfiguration(maxConnections: Int, allowPlainHTTP: Bool, caFile: String? = nil) -> HTTPClientConfiguration {
        var c = HTTPClientConfiguration(caFile: caFile)
        c.transport = .libcurl
        c.maxTotalConnections = max(1, maxConnections)
        c.maxResponseBodyBytes = maxResponseBytes
        c.stopReadingPastResponseCap = true
        c.connectTimeoutMillis = timeoutMillis
        c.allowedProtocols = allowPlainHTTP ? "http,https" : "https"
        c.pipeWait = false
        return c
    }
}
