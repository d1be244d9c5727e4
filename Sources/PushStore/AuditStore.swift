import Foundation
import Glibc
import PushCore

/// One entry of the audit log (issue 15 part 5).
public struct AuditEvent: Sendable, Equatable {
    /// The event id (`paud_` + hex).
    public var id: UUID
    /// The account it belongs to.
    public var accountID: UUID
    /// The app concerned; nil for a key's events.
    public var appID: UUID?
    /// Who: an API key's display prefix, `oauth:` + a token's subject, or `cli:` + a login.
    public var actor: String
    /// What: `api_key.created`, `api_key.revoked`, `credentials.set`, `credentials.removed`,
    /// `app.require_encryption_changed`.
    public var action: String
    /// The object acted on, as a prefixed id.
    public var target: String?
    /// Identifiers only (never a secret), as compact JSON object text.
    public var details: String
    /// When.
    public var createdAt: Date
}

/// The audit log (`push_audit_events`, sql/0015; SQL in `AuditQueries`). The stores that make the
/// changes record them here on the session and in the transaction of the change.
public struct AuditStore {
    /// Actions recorded.
    public enum Action: String, Sendable, CaseIterable {
        /// An API key was created.
        case keyCreated = "api_key.created"
        /// An API key was revoked (once: a second revocation records nothing).
        case keyRevoked = "api_key.revoked"
        /// A credential set was stored or replaced.
        case credentialsSet = "credentials.set"
        /// A credential set was removed.
        case credentialsRemoved = "credentials.removed"
        /// `require_encryption` changed value.
        case requireEncryptionChanged = "app.require_encryption_changed"
        /// `content_mode` changed value (R-IDS-1).
        case contentModeChanged = "app.content_mode_changed"
    }

    /// Who acts when the caller names nobody (a library call outside the CLI and the API).
    public static let unnamedActor = "operator"

    /// The CLI's actor: `cli:` and the login of the user running it (`USER`, `LOGNAME`), else the
    /// name of the process's effective uid (`passwdName`; a container, a Kubernetes Job or a
    /// systemd unit sets neither variable), else `uid:N`.
    public static func cliActor(_ env: [String: String] = ProcessInfo.processInfo.environment,
                                passwdName: () -> String? = effectiveUserName) -> String {
        let named: [String?] = [env["USER"], env["LOGNAME"], passwdName()]
        let login: String = named.compactMap { $0 }.first { !$0.isEmpty } ?? "uid:\(geteuid())"
        return "cli:" + String(login.prefix(100))
    }

    /// The passwd entry's name of the effective uid (`getpwuid_r`), nil when it has none.
    public static func effectiveUserName() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return nil
        }
        return String(cString: name)
    }

    /// The session every call runs on.
    public let connection: PGConnection

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// Records one event (`accountID` nil: the app's account). An actor is cut to 300 characters.
    /// - Throws: `PGError`.
    public func record(accountID: UUID?, appID: UUID?, actor: String, action: Action, target: String?,
                       details: JSONObject = JSONObject()) throws {
        let who = actor.isEmpty ? Self.unnamedActor : String(actor.prefix(300))
        _ = try connection.exec(AuditQueries.record, [
            accountID.map(PGValue.uuid), appID.map(PGValue.uuid), .text(who), .text(action.rawValue),
            target.map(PGValue.text), .text(String(decoding: JSONWriter.bytes(.object(details)), as: UTF8.self)),
        ])
    }

    /// The account's events newest first, optionally of one app, within `appIDs` when given, after
    /// the event `after` of the previous page (which must be the account's).
    /// - Throws: `PushError` `NOT_FOUND` (field `app_id`) when `appID` is not a live app of the
    ///   account within `appIDs`, (field `starting_after`) for a cursor that is not the account's;
    ///   `PGError`.
    public func list(accountID: UUID, appID: UUID?, appIDs: [UUID]? = nil, after: UUID?, limit: Int) throws -> APIPage<AuditEvent> {
        if let appID { try AccountStore(connection: connection).requireOwnedApp(appID, accountID: accountID, appIDs: appIDs) }
        if let after, try connection.exec(AuditQueries.visible, [.uuid(after), .uuid(accountID)]).rowCount == 0 {
            throw PushError(.notFound, "no such audit event for starting_after", field: "starting_after")
        }
        let r = try connection.exec(AuditQueries.list, [
            .uuid(accountID), appID.map(PGValue.uuid), appIDs.map { .uuidArray($0) }, after.map(PGValue.uuid), .int(limit + 1),
        ])
        let all = try r.rows.map { i in
            AuditEvent(id: try r.uuid(i, "id"), accountID: try r.uuid(i, "account_id"), appID: try r.decode(i, "app_id"),
                       actor: try r.string(i, "actor"), action: try r.string(i, "action"), target: try r.decode(i, "target"),
                       details: try r.string(i, "details"), createdAt: try r.date(i, "created_at"))
        }
        return APIPage(items: Array(all.prefix(limit)), hasMore: all.count > limit)
    }
}
