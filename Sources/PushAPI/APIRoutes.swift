import Foundation
import PushAcceptance
import PushCore
import PushStore

/// Each route's work, for one authenticated and permitted request, on one session: parse ids
/// (a malformed id is 404, R-API-4), check ownership (another account's object is 404, R-API-1),
/// call the acceptance service for every write (R-API-6), and answer what it stored or read.
struct APIRoutes {
    let connection: PGConnection
    let principal: APIPrincipal
    let request: HTTPRequest
    let webhooks: WebhookSettings

    var reads: APIReadStore {
        APIReadStore(connection: connection, accountID: principal.accountID, mode: principal.mode, appIDs: principal.appIDs)
    }
    var acceptance: AcceptanceService { AcceptanceService(connection: connection) }

    /// Runs an acceptance call, its refusals as the API's errors (database failures pass through).
    func accepted<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as AcceptanceError { throw AcceptanceMapping.apiError(e) }
    }

    func run(_ route: APIRoute, id: String?, kind: String? = nil, body: RouteBody) throws -> HTTPResponse {
        switch (route, body) {
        case (.registerDevice, .device(let b)): return try registerDevice(b)
        case (.listDevices, _): return try listDevices()
        case (.getDevice, _): return ok(ResponseBodies.device(try visibleDevice(id)))
        case (.deleteDevice, _): return try deleteDevice(id)
        case (.createApp, .app(let b)): return try createApp(b)
        case (.listApps, _): return try listApps()
        case (.getApp, _): return ok(ResponseBodies.app(try visibleApp(id)))
        case (.updateApp, .app(let b)): return try updateApp(id, b)
        case (.sendNotification, .notification(let b)): return try send(b)
        case (.listNotifications, _): return try listNotifications()
        case (.getNotification, _): return ok(ResponseBodies.notification(try visibleNotification(id)))
        case (.cancelNotification, _): return try cancel(id)
        case (.revokeNotification, .revoke(let b)): return try revoke(id, b)
        case (.createWebhookEndpoint, .webhookEndpoint(let b)): return try createWebhookEndpoint(b)
        case (.listWebhookEndpoints, _): return try listWebhookEndpoints()
        case (.getWebhookEndpoint, _): return ok(ResponseBodies.webhookEndpoint(try visibleWebhookEndpoint(id)))
        case (.updateWebhookEndpoint, .webhookEndpoint(let b)): return try updateWebhookEndpoint(id, b)
        case (.deleteWebhookEndpoint, _): return try deleteWebhookEndpoint(id)
        case (.rotateWebhookSecret, _): return try rotateWebhookSecret(id)
        case (.listCredentials, _): return try listCredentials(id)
        case (.setCredentials, .credentials(let b)): return try setCredentials(id, b)
        case (.deleteCredentials, _): return try deleteCredentials(id, kind: kind)
        case (.listAuditEvents, _): return try listAuditEvents()
        case (.usage, _): return try usage()
        case (.eraseUser, _): return try eraseUser(id)
        default: throw APIError.internalError()
        }
    }

    // MARK: - Devices

    func registerDevice(_ b: DeviceBody) throws -> HTTPResponse {
        let app = try ownedApp(b.appID, field: "app_id")
        var registration = b.request
        registration.appID = app
        registration.mode = principal.mode
        let result = try accepted { try acceptance.registerDevice(registration) }
        // The preview token is answered once, when made (issue 24 part 2): only its hash is kept.
        guard let token = result.previewToken, case .object(var o) = ResponseBodies.device(result.device) else {
            return ok(ResponseBodies.device(result.device))
        }
        o.members.append(.init("preview_token", .string(token)))
        return ok(.object(o))
    }

    func listDevices() throws -> HTTPResponse {
        let q = try ListQuery.parse(request.query, filters: ["app_id", "user_id", "active"])
        let app = try q.filters["app_id"].map { try ownedApp($0, field: "app_id") }
        var active: Bool?
        if let text = q.filters["active"] {
            guard text == "true" || text == "false" else { throw APIError.validation("active must be true or false", field: "active") }
            active = text == "true"
        }
        if let user = q.filters["user_id"], user.isEmpty || user.unicodeScalars.count > DeviceRegistration.maxUserIDLength {
            throw APIError.validation("user_id must be 1 to \(DeviceRegistration.maxUserIDLength) characters", field: "user_id")
        }
        let after = try q.startingAfter.map { text -> UUID in
            // The cursor must be a row of this list: of the key's account and mode (the read's
            // scope) and of the app filtered on, else the same 404 as an unknown id.
            guard let id = PrefixedID.parse(text, as: .device), let cursor = try reads.device(id: id),
                  app == nil || cursor.appID == app else {
                throw APIError.notFound("no such device for starting_after", field: "starting_after")
            }
            return id
        }
        let page = try reads.devices(appID: app, userID: q.filters["user_id"], active: active, after: after, limit: q.limit)
        return ok(ResponseBodies.list(page, ResponseBodies.device))
    }

    func deleteDevice(_ id: String?) throws -> HTTPResponse {
        let device = try visibleDevice(id)
        if device.active {
            try accepted { try acceptance.deleteDevice(appID: device.appID, mode: principal.mode, deviceID: device.id) }
        }
        guard let after = try reads.device(id: device.id) else { throw APIError.notFound("no such device") }
        return ok(ResponseBodies.device(after))
    }

    // MARK: - Apps

    /// A key limited to some apps (issue 15 part 3) cannot create one: the new app would be outside
    /// what it may see.
    func createApp(_ b: AppBody) throws -> HTTPResponse {
        guard principal.appIDs == nil else {
            throw APIError.forbidden("this key is limited to some apps and cannot create one; use a key of the whole account")
        }
        var create = AppCreateRequest(name: b.name ?? "", requireEncryption: b.requireEncryption,
                                      placeholderTitle: b.placeholderTitle, placeholderBody: b.placeholderBody,
                                      placeholderTitleLocKey: b.placeholderTitleLocKey,
                                      placeholderBodyLocKey: b.placeholderBodyLocKey, accountID: principal.accountID,
                                      contentMode: b.contentMode)
        create.confirmDeliveries = b.confirmDeliveries
        create.previewWindowSeconds = b.previewWindowSeconds
        let app = try accepted { try acceptance.createApp(create) }
        return HTTPResponse(status: 201, headers: json, body: JSONWriter.bytes(ResponseBodies.app(app)))
    }

    func listApps() throws -> HTTPResponse {
        let q = try ListQuery.parse(request.query, filters: [])
        let after = try q.startingAfter.map { text -> UUID in
            guard let id = PrefixedID.parse(text, as: .app), try reads.app(id: id) != nil else {
                throw APIError.notFound("no such push app for starting_after", field: "starting_after")
            }
            return id
        }
        return ok(ResponseBodies.list(try reads.apps(after: after, limit: q.limit), ResponseBodies.app))
    }

    /// `require_encryption` and `content_mode` govern live traffic: changing either needs a live
    /// key (R-API-2; an ids_only app made sealed sends keyless devices of an app not requiring
    /// encryption its content in plaintext).
    func updateApp(_ id: String?, _ b: AppBody) throws -> HTTPResponse {
        let current = try visibleApp(id)
        if let wanted = b.requireEncryption, wanted != current.requireEncryption, principal.mode != .live {
            throw APIError.forbidden("changing require_encryption needs a live key (it governs live traffic)",
                                     field: "require_encryption")
        }
        if let wanted = b.contentMode, wanted != current.contentMode.rawValue, principal.mode != .live {
            throw APIError.forbidden("changing content_mode needs a live key (it governs live traffic)", field: "content_mode")
        }
        var update = AppUpdateRequest(name: b.name, requireEncryption: b.requireEncryption,
                                      placeholderTitle: b.placeholderTitle, placeholderBody: b.placeholderBody,
                                      placeholderTitleLocKey: b.placeholderTitleLocKey,
                                      placeholderBodyLocKey: b.placeholderBodyLocKey, contentMode: b.contentMode)
        update.actor = principal.actor
        update.confirmDeliveries = b.confirmDeliveries
        update.previewWindowSeconds = b.previewWindowSeconds
        let app = try accepted { try acceptance.updateApp(id: current.id, update) }
        return ok(ResponseBodies.app(app))
    }

    // MARK: - Notifications

    /// 201 for a new notification; 200 with `Idempotent-Replayed: true` for a replay of the same
    /// `Idempotency-Key` (R-SEND-1, R-API-5).
    func send(_ b: NotificationBody) throws -> HTTPResponse {
        let app = try ownedApp(b.appID, field: "app_id")
        let devices = try b.deviceIDs.map { list in
            try list.map { text -> UUID in
                guard let id = PrefixedID.parse(text, as: .device) else {
                    throw APIError.validation("device_ids: each must be a device id (pdev_...)", field: "device_ids")
                }
                return id
            }
        }
        var send = b.request
        send.appID = app
        send.mode = principal.mode
        send.deviceIDs = devices
        send.idempotencyKey = try idempotencyKey()
        let result = try accepted { try acceptance.send(send) }
        guard let shown = try reads.notification(id: result.notificationID) else { throw APIError.internalError() }
        return HTTPResponse(status: result.created ? 201 : 200,
                            headers: json + (result.created ? [] : [("Idempotent-Replayed", "true")]),
                            body: JSONWriter.bytes(ResponseBodies.notification(shown)))
    }

    static let statuses: Set<String> = ["pending", "sending", "sent", "sms_fallback", "failed", "cancelled"]

    func listNotifications() throws -> HTTPResponse {
        let q = try ListQuery.parse(request.query, filters: ["app_id", "status"])
        let app = try q.filters["app_id"].map { try ownedApp($0, field: "app_id") }
        if let s = q.filters["status"], !Self.statuses.contains(s) {
            throw APIError.validation("status must be one of \(Self.statuses.sorted().joined(separator: ", "))", field: "status")
        }
        let after = try q.startingAfter.map { text -> UUID in
            guard let id = PrefixedID.parse(text, as: .notification), let cursorApp = try reads.notificationApp(id: id),
                  app == nil || cursorApp == app else {
                throw APIError.notFound("no such notification for starting_after", field: "starting_after")
            }
            return id
        }
        let page = try reads.notifications(appID: app, status: q.filters["status"], after: after, limit: q.limit)
        return ok(ResponseBodies.list(page, ResponseBodies.notification))
    }

    /// 409 `NOT_CANCELLABLE` once its send time has come or it is final (the acceptance service's).
    func cancel(_ id: String?) throws -> HTTPResponse {
        guard let text = id, let nid = PrefixedID.parse(text, as: .notification), let app = try reads.notificationApp(id: nid) else {
            throw APIError.notFound("no such notification")
        }
        try accepted { try acceptance.cancelNotification(id: nid, appID: app, mode: principal.mode) }
        return ok(ResponseBodies.notification(try visibleNotification(text)))
    }

    /// Revokes the notification's content for preview fetches, for every device or the devices of
    /// `user_ids` (issue 24 part 4, R-IDS-2): later fetches answer 404. Answers the notification.
    func revoke(_ id: String?, _ b: RevokeBody) throws -> HTTPResponse {
        guard let text = id, let nid = PrefixedID.parse(text, as: .notification), let app = try reads.notificationApp(id: nid) else {
            throw APIError.notFound("no such notification")
        }
        try accepted { try acceptance.revokeNotification(id: nid, appID: app, mode: principal.mode, userIDs: b.userIDs) }
        return ok(ResponseBodies.notification(try visibleNotification(text)))
    }

    // MARK: - Helpers

    /// The `Idempotency-Key` header, as its wire form allows: visible ASCII (0x21 to 0x7E), as
    /// docs/openapi.yaml says. A header value that is not UTF-8 would be read altered (two keys
    /// could read the same), and spaces, tabs and other bytes do not survive every proxy as sent;
    /// either is 400 naming the header. Its length is the acceptance service's rule (R-SEND-1).
    func idempotencyKey() throws -> String? {
        guard let key = try request.utf8Header("idempotency-key", shown: "Idempotency-Key") else { return nil }
        guard key.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            throw APIError.invalidRequest("the Idempotency-Key header takes visible ASCII characters only (0x21 to 0x7E)",
                                          field: "Idempotency-Key")
        }
        return key
    }

    var json: [(String, String)] { [("Content-Type", "application/json")] }

    func ok(_ value: JSONValue) -> HTTPResponse {
        HTTPResponse(status: 200, headers: json, body: JSONWriter.bytes(value))
    }

    /// The app id of `text` when it is the key's account's (checked in the key's round trip).
    func ownedApp(_ text: String, field: String) throws -> UUID {
        guard let id = PrefixedID.parse(text, as: .app), principal.appOwned == true else {
            throw APIError.notFound("no such push app", field: field)
        }
        return id
    }

    func visibleDevice(_ text: String?) throws -> StoredDevice {
        guard let text, let id = PrefixedID.parse(text, as: .device), let d = try reads.device(id: id) else {
            throw APIError.notFound("no such device")
        }
        return d
    }

    func visibleApp(_ text: String?) throws -> PushApp {
        guard let text, let id = PrefixedID.parse(text, as: .app), let a = try reads.app(id: id) else {
            throw APIError.notFound("no such push app")
        }
        return a
    }

    func visibleNotification(_ text: String?) throws -> APINotification {
        guard let text, let id = PrefixedID.parse(text, as: .notification), let n = try reads.notification(id: id) else {
            throw APIError.notFound("no such notification")
        }
        return n
    }
}
