import Foundation
import PushAcceptance
import PushAPI
import PushCore
import PushStore
import PushWorker

/// `pushfleet audit`, `pushfleet usage`, `pushfleet users erase` (issue 15 parts 5, 4, 6): thin
/// over `AuditStore`, `UsageStore` and `AcceptanceService.eraseUser`, the libraries the API calls;
/// `--json` prints the API's objects (`APIBodies`): arrays of them for the lists.
extension Commands {
    static let accessHelp = """
    Usage: pushfleet audit --account ACCOUNT [--app APP] [--limit N] [--json]
             key creations and revocations, credential changes, require_encryption changes: who, what, when
           pushfleet usage --account ACCOUNT [--app APP] [--mode test|live] [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                           [--starting-after CURSOR] [--json]
             deliveries charged, refunded and net, and SMS taken, per app, mode and UTC day, from the ledger (R-SEND-9);
             default: the 30 days ending today; at most 366 days; pages of 10,000 rows (the cursor of the next is printed)
           pushfleet users erase --app APP --mode test|live USER_ID [--json]
             deactivates the user's devices and erases their content (idempotent)
    """

    static func audit(_ args: Arguments, _ out: Output) throws {
        guard let account = try args.uuid("account") else { throw CLIError.usage("--account is required (pacc_... or a UUID)") }
        let page = try AuditStore(connection: try connect()).list(accountID: account, appID: try args.uuid("app"), after: nil,
                                                                 limit: try args.int("limit", in: 1...10_000) ?? 100)
        let events = page.items
        out.emit(api: .array(events.map(APIBodies.auditEvent))) {
            events.isEmpty ? "no audit events" : events.map {
                "\(RFC3339.utcMilliseconds($0.createdAt))  \($0.action)  by \($0.actor)  \($0.target ?? "-")  \($0.details)"
            }.joined(separator: "\n")
        }
    }

    static func usage(_ args: Arguments, _ out: Output) throws {
        guard let account = try args.uuid("account") else { throw CLIError.usage("--account is required (pacc_... or a UUID)") }
        let mode = try args.value("mode").map { text -> Mode in
            guard let m = Mode(rawValue: text) else { throw PushError(.validationError, "mode: must be test or live", field: "mode") }
            return m
        }
        let range = try UsageRange.parse(from: args.value("from"), to: args.value("to"))
        let after = try args.value("starting-after").map { text -> UsageCursor in
            guard let c = UsageCursor.parse(text) else {
                throw PushError(.notFound, "no such usage row for starting_after", field: "starting_after")
            }
            return c
        }
        let report = try UsageStore(connection: try connect()).report(accountID: account, appID: try args.uuid("app"), mode: mode,
                                                                      range: range, after: after)
        let rows = report.rows
        out.emit(api: .array(rows.map(APIBodies.usageRow))) {
            (rows.isEmpty ? "no deliveries charged" : rows.map {
                "\($0.day)  \(PrefixedID.format(.app, $0.appID))  \($0.mode)  charged \($0.charged)  refunded \($0.refunded)  net \($0.net)  sms \($0.sms)"
            }.joined(separator: "\n")) + (report.next.map { "\n(more rows: --starting-after \($0.text))" } ?? "")
        }
    }

    static func users(_ sub: String, _ args: Arguments, _ out: Output) throws {
        guard sub == "erase" else { throw CLIError.usage("users \(sub.prefix(20)): unknown; see pushfleet users --help") }
        guard args.positional.count > 2 else { throw CLIError.usage("give the user id: pushfleet users erase --app APP --mode M USER_ID") }
        let app = try appID(args, position: 99)
        let erasureMode = try Self.mode(args)
        let erased = try service().eraseUser(appID: app, mode: erasureMode, userID: args.positional[2])
        out.emit(api: APIBodies.userErasure(appID: app, userID: args.positional[2], mode: erasureMode, erased)) {
            "erased: \(erased.devicesDeactivated) devices deactivated, \(erased.notificationsErased) notifications erased, \(erased.notificationsUnnamed) no longer naming the user, \(erased.payloadsErased) stored payloads erased"
        }
    }
}
