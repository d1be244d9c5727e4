import Foundation
import PushAcceptance
import PushCore
import PushStore
import PushWorker

/// `pushfleet audit`, `pushfleet usage`, `pushfleet users erase` (issue 15 parts 5, 4, 6): thin
/// over `AuditStore`, `UsageStore` and `AcceptanceService.eraseUser`, the libraries the API calls.
extension Commands {
    static let accessHelp = """
    Usage: pushfleet audit --account ACCOUNT [--app APP] [--limit N] [--json]
             key creations and revocations, credential changes, require_encryption changes: who, what, when
           pushfleet usage --account ACCOUNT [--app APP] [--mode test|live] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--json]
             deliveries charged, refunded and net per app, mode and UTC day, from the ledger (R-SEND-9);
             default: the 30 days ending today; at most 366 days
           pushfleet users erase --app APP --mode test|live USER_ID [--json]
             deactivates the user's devices and erases their content (idempotent)
    """

    struct AuditOut: Encodable {
        var id, actor, action: String
        var appId, target: String?
        var details: String
        var createdAt: Date
        init(_ e: AuditEvent) {
            id = PrefixedID.format(.auditEvent, e.id)
            actor = e.actor
            action = e.action
            appId = e.appID.map { PrefixedID.format(.app, $0) }
            target = e.target
            details = e.details
            createdAt = e.createdAt
        }
    }

    static func audit(_ args: Arguments, _ out: Output) throws {
        guard let account = try args.uuid("account") else { throw CLIError.usage("--account is required (pacc_... or a UUID)") }
        let page = try AuditStore(connection: try connect()).list(accountID: account, appID: try args.uuid("app"), after: nil,
                                                                 limit: try args.int("limit", in: 1...10_000) ?? 100)
        let events = page.items.map(AuditOut.init)
        out.emit(events) {
            events.isEmpty ? "no audit events" : events.map {
                "\(Log.timestamp($0.createdAt))  \($0.action)  by \($0.actor)  \($0.target ?? "-")  \($0.details)"
            }.joined(separator: "\n")
        }
    }

    struct UsageOut: Encodable {
        var appId, mode, day: String
        var charged, refunded, net: Int
    }

    static func usage(_ args: Arguments, _ out: Output) throws {
        guard let account = try args.uuid("account") else { throw CLIError.usage("--account is required (pacc_... or a UUID)") }
        let mode = try args.value("mode").map { text -> Mode in
            guard let m = Mode(rawValue: text) else { throw PushError(.validationError, "mode: must be test or live", field: "mode") }
            return m
        }
        let range = try UsageRange.parse(from: args.value("from"), to: args.value("to"))
        let report = try UsageStore(connection: try connect()).report(accountID: account, appID: try args.uuid("app"), mode: mode,
                                                                      range: range)
        let rows = report.rows.map {
            UsageOut(appId: PrefixedID.format(.app, $0.appID), mode: $0.mode, day: $0.day, charged: $0.charged,
                     refunded: $0.refunded, net: $0.net)
        }
        out.emit(rows) {
            (rows.isEmpty ? "no deliveries charged" : rows.map {
                "\($0.day)  \($0.appId)  \($0.mode)  charged \($0.charged)  refunded \($0.refunded)  net \($0.net)"
            }.joined(separator: "\n")) + (report.truncated ? "\n(first \(UsageStore.maxRows) rows: narrow by --app or days)" : "")
        }
    }

    static func users(_ sub: String, _ args: Arguments, _ out: Output) throws {
        guard sub == "erase" else { throw CLIError.usage("users \(sub.prefix(20)): unknown; see pushfleet users --help") }
        guard args.positional.count > 2 else { throw CLIError.usage("give the user id: pushfleet users erase --app APP --mode M USER_ID") }
        let app = try appID(args, position: 99)
        let erased = try service().eraseUser(appID: app, mode: try mode(args), userID: args.positional[2])
        out.emit(KV(fields: ["app_id": PrefixedID.format(.app, app), "devices_deactivated": String(erased.devicesDeactivated),
                             "notifications_erased": String(erased.notificationsErased),
                             "notifications_unnamed": String(erased.notificationsUnnamed),
                             "payloads_erased": String(erased.payloadsErased)])) {
            "erased: \(erased.devicesDeactivated) devices deactivated, \(erased.notificationsErased) notifications erased, \(erased.notificationsUnnamed) no longer naming the user, \(erased.payloadsErased) stored payloads erased"
        }
    }
}
