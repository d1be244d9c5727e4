import Foundation
import PushCore
import PushStore

/// `pushfleet ledger check [--since RFC3339] [--until RFC3339] [--limit N]`: audits R-SEND-8/9 over
/// notifications accepted in [since, until). Exit 0 when sound; exit 1 with one line per
/// violation (code LEDGER_VIOLATIONS on stderr) otherwise.
extension Commands {
    /// The JSON answer of `ledger check`.
    struct LedgerCheckOutput: Encodable {
        var scope: LedgerCheckScope
        var violations: [LedgerViolation]
    }

    static let ledgerHelp = """
    Usage: pushfleet ledger check [--since RFC3339] [--until RFC3339] [--limit N]
      Audits the ledger of notifications accepted in [since, until): at most one charge and one refund
      per (notification, device); no refund without a charge; every final delivery nets one charge when
      sent / UNREGISTERED / INVALID_TOKEN / device-blamed APP_MISMATCH, else zero (R-SEND-9); every final
      notification's device_count equals its devices netting one. Exit 1 listing violations (at most N, default 100).
    """

    static func ledger(_ sub: String, _ args: Arguments, _ out: Output) throws {
        guard sub == "check" else { throw CLIError.usage("ledger \(sub.prefix(20)): unknown; see pushfleet ledger --help") }
        let since = try args.date("since")
        let until = try args.date("until")
        let limit = try args.int("limit") ?? 100
        let store = LedgerStore(connection: try connect())
        let violations = try store.check(since: since, until: until, limit: limit)
        let scope = try store.checkScope(since: since, until: until)
        out.emit(LedgerCheckOutput(scope: scope, violations: violations)) {
            let head = "ledger check: \(scope.notifications) notifications (\(scope.finalNotifications) final), "
                + "\(scope.ledgerRows) ledger rows, \(scope.deliveries) deliveries: "
                + (violations.isEmpty ? "no violations" : "\(violations.count)\(violations.count == limit ? "+" : "") violations")
            let lines = violations.map { v in
                "\(v.violation)  notification=\(PrefixedID.format(.notification, v.notificationID))  device=\(v.deviceID.map { PrefixedID.format(.device, $0) } ?? "-")  \(v.detail)"
            }
            return ([head] + lines).joined(separator: "\n")
        }
        if !violations.isEmpty {
            throw CLIError(code: "LEDGER_VIOLATIONS", message: "\(violations.count) ledger violation(s) found", exitCode: 1)
        }
    }
}
