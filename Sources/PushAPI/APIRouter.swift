import PushCore

/// The API's routes (issue 14; the webhook endpoints of issue 19): method, path template, and the
/// permission each needs (R-API-2). Pure; `docs/openapi.yaml` lists the same table.
public enum APIRoute: String, Sendable, CaseIterable {
    case registerDevice, listDevices, getDevice, deleteDevice
    case createApp, listApps, getApp, updateApp
    case sendNotification, listNotifications, getNotification, cancelNotification, revokeNotification
    case createWebhookEndpoint, listWebhookEndpoints, getWebhookEndpoint, updateWebhookEndpoint, deleteWebhookEndpoint
    case rotateWebhookSecret
    case listCredentials, setCredentials, deleteCredentials
    case listAuditEvents, usage, eraseUser

    /// HTTP method.
    public var method: String {
        switch self {
        case .registerDevice: return "PUT"
        case .setCredentials: return "PUT"
        case .deleteDevice, .deleteWebhookEndpoint, .deleteCredentials, .eraseUser: return "DELETE"
        case .updateApp, .updateWebhookEndpoint: return "PATCH"
        case .createApp, .sendNotification, .cancelNotification, .revokeNotification, .createWebhookEndpoint, .rotateWebhookSecret:
            return "POST"
        case .listDevices, .getDevice, .listApps, .getApp, .listNotifications, .getNotification, .listWebhookEndpoints,
             .getWebhookEndpoint, .listCredentials, .listAuditEvents, .usage:
            return "GET"
        }
    }

    /// Path template (`{id}` for the id segment, `{kind}` for a credential set's kind), also the
    /// route label of logs and metrics.
    public var template: String {
        switch self {
        case .registerDevice, .listDevices: return "/v1/push/devices"
        case .getDevice, .deleteDevice: return "/v1/push/devices/{id}"
        case .createApp, .listApps: return "/v1/push/apps"
        case .getApp, .updateApp: return "/v1/push/apps/{id}"
        case .sendNotification, .listNotifications: return "/v1/push/notifications"
        case .getNotification: return "/v1/push/notifications/{id}"
        case .cancelNotification: return "/v1/push/notifications/{id}/cancel"
        case .revokeNotification: return "/v1/push/notifications/{id}/revoke"
        case .createWebhookEndpoint, .listWebhookEndpoints: return "/v1/push/webhook_endpoints"
        case .getWebhookEndpoint, .updateWebhookEndpoint, .deleteWebhookEndpoint: return "/v1/push/webhook_endpoints/{id}"
        case .rotateWebhookSecret: return "/v1/push/webhook_endpoints/{id}/rotate_secret"
        case .listCredentials: return "/v1/push/apps/{id}/credentials"
        case .setCredentials, .deleteCredentials: return "/v1/push/apps/{id}/credentials/{kind}"
        case .listAuditEvents: return "/v1/push/audit"
        case .usage: return "/v1/push/usage"
        case .eraseUser: return "/v1/push/users/{id}"
        }
    }

    /// The permission the route needs (R-API-2); `alsoNeeds` names a second one.
    public var permission: (resource: APIResource, access: APIAccess) {
        switch self {
        case .registerDevice: return (.pushDevices, .write)
        case .deleteDevice: return (.pushDevices, .delete)
        case .listDevices, .getDevice, .listNotifications, .getNotification: return (.push, .read)
        case .sendNotification, .cancelNotification, .revokeNotification: return (.push, .write)
        case .listApps, .getApp, .listCredentials: return (.pushApps, .read)
        case .createApp, .updateApp, .setCredentials, .deleteCredentials: return (.pushApps, .write)
        case .listWebhookEndpoints, .getWebhookEndpoint: return (.webhooks, .read)
        case .createWebhookEndpoint, .updateWebhookEndpoint, .deleteWebhookEndpoint, .rotateWebhookSecret:
            return (.webhooks, .write)
        case .listAuditEvents, .usage: return (.pushApps, .read)
        case .eraseUser: return (.pushDevices, .delete)
        }
    }

    /// A second permission the route needs: erasing a user takes `push_devices` d and `push` w
    /// (issue 15 part 6). Nil for every other route.
    public var alsoNeeds: (resource: APIResource, access: APIAccess)? { self == .eraseUser ? (.push, .write) : nil }

    /// True when the route reads a JSON body.
    public var takesBody: Bool {
        switch self {
        case .registerDevice, .createApp, .updateApp, .sendNotification, .createWebhookEndpoint, .updateWebhookEndpoint,
             .setCredentials:
            return true
        default: return false
        }
    }

    /// A route without a body that still takes `{}` (an action on an object: cancel, rotate), so
    /// a member sent to it is refused like any unknown field.
    public var takesEmptyObject: Bool { self == .cancelNotification || self == .rotateWebhookSecret }
}

/// The two routes a device calls with its preview token instead of an API key (issue 24 parts 3
/// and 5, R-IDS-2..4): the preview fetch and receipts. No API key, permission or account is
/// involved; `PreviewHandler` answers them. Pure.
public enum PreviewRoute: String, Sendable, CaseIterable {
    case fetchPreview, postReceipt

    /// HTTP method.
    public var method: String { self == .fetchPreview ? "GET" : "POST" }

    /// Path template, also the route label of logs and metrics.
    public var template: String { self == .fetchPreview ? "/v1/push/previews/{id}" : "/v1/push/receipts" }

    /// The preview route of `path` (exact, no trailing slash) with its raw `{id}`, any method; nil
    /// for every other path.
    public static func match(path: String) -> (PreviewRoute, id: String?)? {
        if path == "/v1/push/receipts" { return (.postReceipt, nil) }
        let prefix = "/v1/push/previews/"
        guard path.hasPrefix(prefix) else { return nil }
        let id = String(path.dropFirst(prefix.count))
        guard !id.isEmpty, !id.contains("/") else { return nil }
        return (.fetchPreview, id)
    }
}

/// What the router made of a method and path.
public enum RouteMatch: Sendable, Equatable {
    /// A route, with the raw `{id}` segment when the template has one, and the `{kind}` segment.
    case route(APIRoute, id: String?, kind: String? = nil)
    /// The path exists, not with this method.
    case methodNotAllowed(allowed: [String])
    /// No such path.
    case notFound
}

/// Matches requests to routes. Pure.
public enum APIRouter {
    /// Matches `method` and `path` (no query string). Paths are exact: no trailing slash. `HEAD`
    /// matches the path's `GET` route, and is listed after `GET` in a 405's `Allow`.
    public static func match(method: String, path: String) -> RouteMatch {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", "push", collection [, id [, "cancel" | "revoke" | "rotate_secret" | "credentials" [, kind]]]
        guard parts.count >= 4, parts.count <= 7, parts[0].isEmpty, parts[1] == "v1", parts[2] == "push" else { return .notFound }
        let collection = parts[3]
        let id = parts.count >= 5 ? String(parts[4]) : nil
        if let id, id.isEmpty { return .notFound }
        let kind = parts.count == 7 ? String(parts[6]) : nil
        if let kind, kind.isEmpty { return .notFound }
        var candidates: [APIRoute] = []
        switch (collection, parts.count) {
        case ("devices", 4): candidates = [.registerDevice, .listDevices]
        case ("devices", 5): candidates = [.getDevice, .deleteDevice]
        case ("apps", 4): candidates = [.createApp, .listApps]
        case ("apps", 5): candidates = [.getApp, .updateApp]
        case ("apps", 6) where parts[5] == "credentials": candidates = [.listCredentials]
        case ("apps", 7) where parts[5] == "credentials": candidates = [.setCredentials, .deleteCredentials]
        case ("notifications", 4): candidates = [.sendNotification, .listNotifications]
        case ("notifications", 5): candidates = [.getNotification]
        case ("notifications", 6) where parts[5] == "cancel": candidates = [.cancelNotification]
        case ("notifications", 6) where parts[5] == "revoke": candidates = [.revokeNotification]
        case ("webhook_endpoints", 4): candidates = [.createWebhookEndpoint, .listWebhookEndpoints]
        case ("webhook_endpoints", 5): candidates = [.getWebhookEndpoint, .updateWebhookEndpoint, .deleteWebhookEndpoint]
        case ("webhook_endpoints", 6) where parts[5] == "rotate_secret": candidates = [.rotateWebhookSecret]
        case ("audit", 4): candidates = [.listAuditEvents]
        case ("usage", 4): candidates = [.usage]
        case ("users", 5): candidates = [.eraseUser]
        default: return .notFound
        }
        // HEAD is GET without the body (RFC 9110 §9.3.2; libmicrohttpd sends no body to a HEAD).
        let wanted = method == "HEAD" ? "GET" : method
        if let route = candidates.first(where: { $0.method == wanted }) { return .route(route, id: id, kind: kind) }
        return .methodNotAllowed(allowed: candidates.flatMap { $0.method == "GET" ? ["GET", "HEAD"] : [$0.method] })
    }
}
