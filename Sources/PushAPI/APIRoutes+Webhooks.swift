import Foundation
import PushCore
import PushStore

/// What the webhook endpoint and credential routes need beyond a session: the operator key that
/// seals endpoint secrets and credential sets (`PUSHFLEET_CREDENTIALS_KEY`, as for the CLI and the
/// worker; nil: creating or rotating an endpoint and setting a credential set answer 503), and whether loopback URLs are admitted (`PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK=1`,
/// local testing only).
public struct WebhookSettings: Sendable {
    /// The operator key, nil when the server has none.
    public var keys: CredentialKeys?
    /// Admit loopback URLs (and `http://` to them in test mode).
    public var allowLoopback: Bool

    /// Makes settings.
    public init(keys: CredentialKeys?, allowLoopback: Bool) {
        self.keys = keys
        self.allowLoopback = allowLoopback
    }
}

/// `/v1/push/webhook_endpoints` (issue 19): thin over `WebhookEndpointStore`, the library the CLI's
/// `pushfleet webhooks` calls too (its rules are `WebhookEndpointRules`). The key's mode is the
/// endpoint's (R-MODE-1): a test key creates and sees test endpoints only. An endpoint of another
/// account's app, or of the other mode, is 404 like a missing one (R-API-1). The signing secret is
/// answered by creation and rotation only.
extension APIRoutes {
    func webhookStore() -> WebhookEndpointStore {
        WebhookEndpointStore(connection: connection, keys: webhooks.keys, allowLoopback: webhooks.allowLoopback)
    }

    /// Runs a store call, its refusals in the API's terms: the store's `events` (the CLI's option)
    /// is the body's `event_types`.
    func webhookCall<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as PushError where e.field == "events" {
            let message = e.message.hasPrefix("events:") ? "event_types:" + e.message.dropFirst("events:".count) : e.message
            throw APIError(status: 422, code: e.code.rawValue, message: message, field: "event_types")
        }
    }

    /// Creation and rotation seal a new secret: without the operator key the server cannot (503
    /// without `Retry-After`: a permanent misconfiguration until the operator sets the key).
    func requireSealingKey() throws {
        guard webhooks.keys != nil else {
            throw APIError.misconfigured("this server has no PUSHFLEET_CREDENTIALS_KEY to seal webhook secrets with")
        }
    }

    /// 201 with the endpoint and its `secret`, shown this once.
    func createWebhookEndpoint(_ b: WebhookEndpointBody) throws -> HTTPResponse {
        guard let appText = b.appID else { throw APIError.validation("app_id is required", field: "app_id") }
        guard let url = b.url else { throw APIError.validation("url is required", field: "url") }
        let app = try ownedApp(appText, field: "app_id")
        // The body's own rules first (the store checks them again): a bad URL is the caller's to
        // fix, whatever this server's configuration.
        try webhookCall {
            try WebhookEndpointRules.validateURL(url, mode: principal.mode, allowLoopback: webhooks.allowLoopback)
            _ = try WebhookEndpointRules.eventTypes(b.eventTypes)
        }
        try requireSealingKey()
        let made = try webhookCall {
            try webhookStore().create(appID: app, mode: principal.mode, url: url, eventTypes: b.eventTypes)
        }
        return HTTPResponse(status: 201, headers: json,
                            body: JSONWriter.bytes(ResponseBodies.webhookEndpoint(made.endpoint, secret: made.secret)))
    }

    /// The app's endpoints of the key's mode, newest first; `app_id` is required. An app has at most
    /// `WebhookEndpointRules.maximumEndpointsPerAppAndMode` per mode, so the page is cut here.
    func listWebhookEndpoints() throws -> HTTPResponse {
        let q = try ListQuery.parse(request.query, filters: ["app_id"])
        guard let appText = q.filters["app_id"] else { throw APIError.validation("app_id is required", field: "app_id") }
        let app = try ownedApp(appText, field: "app_id")
        let all = Array(try webhookStore().list(appID: app, mode: principal.mode).reversed())
        var start = 0
        if let text = q.startingAfter {
            guard let id = PrefixedID.parse(text, as: .webhookEndpoint), let at = all.firstIndex(where: { $0.id == id }) else {
                throw APIError.notFound("no such webhook endpoint for starting_after", field: "starting_after")
            }
            start = at + 1
        }
        let rest = all[start...]
        let page = APIPage(items: Array(rest.prefix(q.limit)), hasMore: rest.count > q.limit)
        return ok(ResponseBodies.list(page) { ResponseBodies.webhookEndpoint($0) })
    }

    /// `url`, `event_types` and `enabled`, each kept when absent. Disabling fails the endpoint's
    /// pending deliveries (the CLI's `webhooks resend` sends them again); enabling restarts R-HOOK-2's clock.
    func updateWebhookEndpoint(_ id: String?, _ b: WebhookEndpointBody) throws -> HTTPResponse {
        let endpoint = try visibleWebhookEndpoint(id)
        let updated = try webhookCall {
            try webhookStore().update(id: endpoint.id, mode: principal.mode, url: b.url, eventTypes: b.eventTypes,
                                      enabled: b.enabled)
        }
        guard let updated else { throw APIError.notFound("no such webhook endpoint") }
        return ok(ResponseBodies.webhookEndpoint(updated))
    }

    /// Deletes the endpoint with its pending deliveries and attempt log.
    func deleteWebhookEndpoint(_ id: String?) throws -> HTTPResponse {
        let endpoint = try visibleWebhookEndpoint(id)
        guard try webhookStore().delete(id: endpoint.id, mode: principal.mode) else {
            throw APIError.notFound("no such webhook endpoint")
        }
        return ok(.object(JSONObject([
            .init("id", .string(PrefixedID.format(.webhookEndpoint, endpoint.id))),
            .init("object", .string("push_webhook_endpoint")), .init("deleted", .bool(true)),
        ])))
    }

    /// A new secret, answered this once; the previous one keeps signing for 24 hours.
    func rotateWebhookSecret(_ id: String?) throws -> HTTPResponse {
        let endpoint = try visibleWebhookEndpoint(id)
        try requireSealingKey()
        guard let rotated = try webhookStore().rotateSecret(id: endpoint.id, mode: principal.mode) else {
            throw APIError.notFound("no such webhook endpoint")
        }
        return ok(ResponseBodies.webhookEndpoint(rotated.endpoint, secret: rotated.secret))
    }

    /// The endpoint of a well-formed `pwh_` id, of the key's mode, whose app is the key's account's.
    func visibleWebhookEndpoint(_ text: String?) throws -> WebhookEndpoint {
        guard let text, let id = PrefixedID.parse(text, as: .webhookEndpoint),
              let endpoint = try webhookStore().get(id: id, mode: principal.mode),
              try reads.app(id: endpoint.appID) != nil else {
            throw APIError.notFound("no such webhook endpoint")
        }
        return endpoint
    }
}
