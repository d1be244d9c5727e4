import Foundation
import PushAcceptance
import PushCore
import PushStore

/// The routes of issue 15: the audit log (part 5), the usage report (part 4) and per-user erasure
/// (part 6). Thin over the libraries the CLI calls too (`AuditStore`, `UsageStore`,
/// `AcceptanceService.eraseUser`), scoped to the credential's account, mode and apps.
extension APIRoutes {
    /// `GET /v1/push/audit?app_id=`: the account's audit events newest first (push_apps r).
    func listAuditEvents() throws -> HTTPResponse {
        let q = try ListQuery.parse(request.query, filters: ["app_id"])
        let app = try q.filters["app_id"].map(Self.appFilter)
        let after = try q.startingAfter.map { text -> UUID in
            guard let id = PrefixedID.parse(text, as: .auditEvent) else {
                throw APIError.notFound("no such audit event for starting_after", field: "starting_after")
            }
            return id
        }
        let page: APIPage<AuditEvent>
        do {
            page = try AuditStore(connection: connection).list(accountID: principal.accountID, appID: app,
                                                              appIDs: principal.appIDs, after: after, limit: q.limit)
        } catch let e as PushError where e.code == .notFound {
            throw APIError.notFound(e.message, field: e.field)
        }
        return ok(ResponseBodies.list(page, Self.auditEvent))
    }

    /// An `app_id` filter's id; whether the credential may see the app is the store's answer
    /// (`AccountStore.requireOwnedApp`, the one check the CLI's reports make too).
    static func appFilter(_ text: String) throws -> UUID {
        guard let id = PrefixedID.parse(text, as: .app) else { throw APIError.notFound("no such push app", field: "app_id") }
        return id
    }

    static func auditEvent(_ e: AuditEvent) -> JSONValue {
        .object(JSONObject([
            .init("id", .string(PrefixedID.format(.auditEvent, e.id))), .init("object", .string("audit_event")),
            .init("app_id", e.appID.map { .string(PrefixedID.format(.app, $0)) } ?? .null),
            .init("actor", .string(e.actor)), .init("action", .string(e.action)),
            .init("target", e.target.map(JSONValue.string) ?? .null),
            .init("details", (try? JSONParser.parse(e.details)) ?? .object(JSONObject())),
            .init("created_at", ResponseBodies.time(e.createdAt)),
        ]))
    }

    /// `GET /v1/push/usage?app_id=&from=&to=&starting_after=`: deliveries charged net of refunds
    /// per app and day, in the credential's mode only (push_apps r); pages of at most 10,000 rows,
    /// `next_starting_after` naming where the next one starts while `has_more`.
    func usage() throws -> HTTPResponse {
        var filters: [String: String] = [:]
        var seen = Set<String>()
        for item in request.query {
            let name = String(item.name.prefix(64))
            guard item.validUTF8 else { throw APIError.invalidRequest("\(name) is not valid UTF-8 (after percent-decoding)", field: name) }
            guard ["app_id", "from", "to", "starting_after"].contains(item.name) else { throw APIError.unknownQueryArgument(item.name) }
            guard seen.insert(item.name).inserted else { throw APIError.validation("\(name) is given twice", field: name) }
            guard let value = item.value else { throw APIError.validation("\(name) needs a value", field: name) }
            filters[item.name] = value
        }
        let app = try filters["app_id"].map(Self.appFilter)
        let range: UsageRange
        do { range = try UsageRange.parse(from: filters["from"], to: filters["to"]) } catch let e as PushError {
            throw APIError.validation(e.message, field: e.field)
        }
        let after = try filters["starting_after"].map { text -> UsageCursor in
            guard let c = UsageCursor.parse(text), c.mode == principal.mode.rawValue else {
                throw APIError.notFound("no such usage row for starting_after", field: "starting_after")
            }
            return c
        }
        let report = try UsageStore(connection: connection).report(accountID: principal.accountID, appID: app,
                                                                   appIDs: principal.appIDs, mode: principal.mode, range: range,
                                                                   after: after)
        return ok(.object(JSONObject([
            .init("object", .string("list")), .init("data", .array(report.rows.map(Self.usageRow))),
            .init("has_more", .bool(report.next != nil)),
            .init("next_starting_after", report.next.map { .string($0.text) } ?? .null),
        ])))
    }

    static func usageRow(_ u: UsageRow) -> JSONValue {
        .object(JSONObject([
            .init("object", .string("usage")), .init("app_id", .string(PrefixedID.format(.app, u.appID))),
            .init("mode", .string(u.mode)), .init("day", .string(u.day)), .init("charged", ResponseBodies.int(u.charged)),
            .init("refunded", ResponseBodies.int(u.refunded)), .init("net", ResponseBodies.int(u.net)),
            .init("sms", ResponseBodies.int(u.sms)),
        ]))
    }

    /// `DELETE /v1/push/users/{user_id}?app_id=`: erases one user of the app in the credential's
    /// mode (push_devices d and push w); idempotent.
    func eraseUser(_ raw: String?) throws -> HTTPResponse {
        var appText: String?
        for item in request.query {
            guard item.name == "app_id" else { throw APIError.unknownQueryArgument(item.name) }
            guard appText == nil else { throw APIError.validation("app_id is given twice", field: "app_id") }
            appText = item.value
        }
        guard let appText else { throw APIError.validation("app_id is required", field: "app_id") }
        let app = try ownedApp(appText, field: "app_id")
        // The path segment as libmicrohttpd decoded it (percent-escapes resolved); a user id holding
        // `/` cannot be named in a path: `pushfleet users erase` takes any.
        guard let user = raw else { throw APIError.validation("the user id is required", field: "user_id") }
        let erased = try accepted { try acceptance.eraseUser(appID: app, mode: principal.mode, userID: user) }
        return ok(Self.userErasure(appID: app, userID: user, mode: principal.mode, erased))
    }

    static func userErasure(appID: UUID, userID: String, mode: Mode, _ erased: UserErasure) -> JSONValue {
        .object(JSONObject([
            .init("object", .string("push_user_erasure")), .init("app_id", .string(PrefixedID.format(.app, appID))),
            .init("user_id", .string(userID)), .init("mode", .string(mode.rawValue)),
            .init("devices_deactivated", ResponseBodies.int(erased.devicesDeactivated)),
            .init("notifications_erased", ResponseBodies.int(erased.notificationsErased)),
            .init("notifications_unnamed", ResponseBodies.int(erased.notificationsUnnamed)),
            .init("payloads_erased", ResponseBodies.int(erased.payloadsErased)),
        ]))
    }
}

/// The API's JSON objects that `pushfleet audit`, `usage` and `users erase` print under `--json`
/// too, so a script reads one shape from either (members in the API's order, times RFC 3339 UTC
/// with milliseconds, counts as numbers).
public enum APIBodies {
    /// One audit event, as in `GET /v1/push/audit`'s `data`.
    public static func auditEvent(_ e: AuditEvent) -> JSONValue { APIRoutes.auditEvent(e) }
    /// One usage row, as in `GET /v1/push/usage`'s `data`.
    public static func usageRow(_ u: UsageRow) -> JSONValue { APIRoutes.usageRow(u) }
    /// The answer of `DELETE /v1/push/users/{user_id}`.
    public static func userErasure(appID: UUID, userID: String, mode: Mode, _ erased: UserErasure) -> JSONValue {
        APIRoutes.userErasure(appID: appID, userID: userID, mode: mode, erased)
    }
}
