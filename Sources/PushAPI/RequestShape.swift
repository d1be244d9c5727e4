/// What a route does not take, refused the same way on every route (the API's and the preview
/// fetch's) from the request alone, before any credential, token or object is looked up:
///
/// - a body on a route that takes none (every GET, HEAD and DELETE): 400 `INVALID_REQUEST`
///   "GET /v1/push/apps/{id} takes no body" (a body a route ignored would be a caller's silent
///   mistake: a filter sent as JSON that filters nothing);
/// - a query argument on a route that takes none (every route but the lists, usage and user
///   erasure, which check their own arguments): 422 "unknown query argument
///   bogus", naming it.
///
/// On the preview fetch this is framing, not a refusal of a token (R-IDS-3): it depends on
/// neither the token nor the notification, so it tells a caller nothing about either.
enum RequestShape {
    /// - Throws: the refusal of `request` on the route `template`, if any.
    static func check(_ request: HTTPRequest, template: String, takesBody: Bool, takesQuery: Bool) throws {
        if !takesBody, !request.body.isEmpty {
            throw APIError.invalidRequest("\(request.method.prefix(16)) \(template) takes no body")
        }
        if !takesQuery, let item = request.query.first { throw APIError.unknownQueryArgument(item.name) }
    }
}

extension APIRoute {
    /// True when the route accepts a body at all: a JSON body, `{}` (cancel, rotate) or a revoke's.
    var acceptsBody: Bool { takesBody || takesEmptyObject || self == .revokeNotification }

    /// True when the route reads query arguments (and refuses unknown ones itself).
    var takesQuery: Bool {
        switch self {
        case .listDevices, .listApps, .listNotifications, .listWebhookEndpoints, .listCredentials, .listAuditEvents,
             .usage, .eraseUser:
            return true
        default: return false
        }
    }
}
