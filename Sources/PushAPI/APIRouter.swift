import PushCore

/// The API's routes (issue 14): method, path template, and the permission each needs
/// (R-API-2). Pure; `docs/openapi.yaml` lists the same table.
public enum APIRoute: String, Sendable, CaseIterable {
    case registerDevice, listDevices, getDevice, deleteDevice
    case createApp, listApps, getApp, updateApp
    case sendNotification, listNotifications, getNotification, cancelNotification

    /// HTTP method.
    public var method: String {
        switch self {
        case .registerDevice: return "PUT"
        case .deleteDevice: return "DELETE"
        case .updateApp: return "PATCH"
        case .createApp, .sendNotification, .cancelNotification: return "POST"
        case .listDevices, .getDevice, .listApps, .getApp, .listNotifications, .getNotification: return "GET"
        }
    }

    /// Path template (`{id}` for the id segment), also the route label of logs and metrics.
    public var template: String {
        switch self {
        case .registerDevice, .listDevices: return "/v1/push/devices"
        case .getDevice, .deleteDevice: return "/v1/push/devices/{id}"
        case .createApp, .listApps: return "/v1/push/apps"
        case .getApp, .updateApp: return "/v1/push/apps/{id}"
        case .sendNotification, .listNotifications: return "/v1/push/notifications"
        case .getNotification: return "/v1/push/notifications/{id}"
        case .cancelNotification: return "/v1/push/notifications/{id}/cancel"
        }
    }

    /// The permission the route needs (R-API-2).
    public var permission: (resource: APIResource, access: APIAccess) {
        switch self {
        case .registerDevice: return (.pushDevices, .write)
        case .deleteDevice: return (.pushDevices, .delete)
        case .listDevices, .getDevice, .listNotifications, .getNotification: return (.push, .read)
        case .sendNotification, .cancelNotification: return (.push, .write)
        case .listApps, .getApp: return (.pushApps, .read)
        case .createApp, .updateApp: return (.pushApps, .write)
        }
    }

    /// True when the route reads a JSON body.
    public var takesBody: Bool {
        switch self {
        case .registerDevice, .createApp, .updateApp, .sendNotification: return true
        default: return false
        }
    }
}

/// What the router made of a method and path.
public enum RouteMatch: Sendable, Equatable {
    /// A route, with the raw `{id}` segment when the template has one.
    case route(APIRoute, id: String?)
    /// The path exists, not with this method.
    case methodNotAllowed(allowed: [String])
    /// No such path.
    case notFound
}

/// Matches requests to routes. Pure.
public enum APIRouter {
    /// Matches `method` and `path` (no query string). Paths are exact: no trailing slash.
    public static func match(method: String, path: String) -> RouteMatch {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", "push", collection [, id [, "cancel"]]
        guard parts.count >= 4, parts.count <= 6, parts[0].isEmpty, parts[1] == "v1", parts[2] == "push" else { return .notFound }
        let collection = parts[3]
        let id = parts.count >= 5 ? String(parts[4]) : nil
        if let id, id.isEmpty { return .notFound }
        var candidates: [APIRoute] = []
        switch (collection, parts.count) {
        case ("devices", 4): candidates = [.registerDevice, .listDevices]
        case ("devices", 5): candidates = [.getDevice, .deleteDevice]
        case ("apps", 4): candidates = [.createApp, .listApps]
        case ("apps", 5): candidates = [.getApp, .updateApp]
        case ("notifications", 4): candidates = [.sendNotification, .listNotifications]
        case ("notifications", 5): candidates = [.getNotification]
        case ("notifications", 6) where parts[5] == "cancel": candidates = [.cancelNotification]
        default: return .notFound
        }
        if let route = candidates.first(where: { $0.method == method }) { return .route(route, id: id) }
        return .methodNotAllowed(allowed: candidates.map(\.method))
    }
}
