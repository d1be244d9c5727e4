import Foundation
import PushCore
import PushStore

/// The readable form of `pushfleet notifications show`.
enum Report {
    static func text(_ r: NotificationReport) -> String {
        var lines: [String] = []
        lines.append("notification \(PrefixedID.format(.notification, r.id))  mode=\(r.mode)  status=\(r.status)  encrypted=\(r.encrypted.map(String.init) ?? "-")  content_mode=\(r.contentMode?.rawValue ?? "-")  device_count=\(r.deviceCount)  confirmed_count=\(r.confirmedCount)  error_code=\(r.errorCode ?? "-")")
        let audience = r.audience == "all" ? "all devices of the app" : "user_ids \(r.userIDs.joined(separator: ","))"
        lines.append("  audience \(audience)" + (r.platforms.map { "  platforms \($0.joined(separator: ","))" } ?? ""))
        if r.revokedAt != nil || !r.revokedUserIDs.isEmpty {
            lines.append("  revoked \(r.revokedAt.map { iso($0) } ?? "for \(r.revokedUserIDs.count) user(s)")")
        }
        lines.append("  accepted \(iso(r.acceptedAt))  send_at \(iso(r.sendAt))  started \(iso(r.startedAt))  finished \(iso(r.finishedAt))")
        for d in r.deliveries {
            lines.append("  delivery \(PrefixedID.format(.device, d.deviceID))  \(d.status)  encrypted=\(d.encrypted)  error_code=\(d.errorCode ?? "-")  attempts=\(d.attempts)  provider=\(d.provider ?? "-")  id=\(d.providerMessageID ?? "-")"
                         + (d.confirmedAt.map { "  confirmed \(iso($0))" } ?? ""))
            if let p = d.payload { lines.append("    payload (\(d.payloadBytes ?? 0) bytes): \(p)") }
        }
        for l in r.ledger {
            // An `sms` row is the notification's, of no device.
            let device = l.kind == "sms" ? "" : "  device \(PrefixedID.format(.device, l.deviceID))"
            lines.append("  ledger \(l.kind)\(device)  \(l.reason ?? "")")
        }
        if let s = r.sms {
            lines.append("  sms \(s.status)  provider=\(s.provider ?? "-")  id=\(s.providerMessageID ?? "-")  error_code=\(s.errorCode ?? "-")"
                         + "  provider_error_code=\(s.providerErrorCode ?? "-")  attempts=\(s.attempts)"
                         + "  segments=\(s.segments.map(String.init) ?? "-") \(s.encoding ?? "")  queued \(iso(s.queuedAt))  sent \(iso(s.sentAt))"
                         + (s.erased ? "  (phone and text erased)" : ""))
            if let request = s.request { lines.append("    request (test mode, not sent): \(request)") }
            if s.status == "unknown" {
                lines.append("    outcome unknown: the request was written and no answer came; it is not sent again (check with the provider)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
