import Foundation
import PushCore
import PushStore

/// `pushfleet webhooks ...` (issue 19): a thin client of `WebhookEndpointStore`, the library the
/// HTTP API routes to as well. Secrets are printed once (`secret`), at creation and rotation.
extension Commands {
    static let webhooksHelp = """
    Usage: pushfleet webhooks create --app APP --mode test|live --url URL [--events TYPE[,TYPE...]]
           pushfleet webhooks list --app APP [--mode test|live]
           pushfleet webhooks show|enable|disable|delete|rotate-secret ENDPOINT
           pushfleet webhooks update ENDPOINT [--url URL] [--events TYPE[,TYPE...]]
           pushfleet webhooks attempts (--endpoint ENDPOINT | --event EVENT | --app APP) [--limit N]
           pushfleet webhooks resend EVENT [--endpoint ENDPOINT]
      Event types: push_device.deactivated, push_app.credentials_invalid, push_app.encryption_disabled (the
      default set), push_notification.finished and push_notification.sms_finished (opt-in). Test endpoints get
      test events, live ones live events.
      The signing secret (whsec_...) is shown once; after rotate-secret the previous one also signs for 24 h.
      Endpoints are https (loopback refused); PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK=1 admits loopback for local
      testing, and http:// to it in test mode. Secrets are sealed with PUSHFLEET_CREDENTIALS_KEY.
      ENDPOINT is a UUID or pwh_...; EVENT is the body's id (pevt_...) or its UUID.
    """

    /// An endpoint as printed, with the secret only when just made. The endpoint is named by its
    /// API id (`pwh_...`), as the API and the docs name it; input takes that or the bare UUID.
    struct WebhookEndpointView: Encodable {
        var id: String
        @LowercaseUUID var appId: UUID
        var mode: String
        var url: String
        var eventTypes: [String]
        var enabled: Bool
        var disabledReason: String?
        var disabledAt: Date?
        var failingSince: Date?
        var lastSuccessAt: Date?
        var lastFailureAt: Date?
        var previousSecretExpiresAt: Date?
        var pending: Int
        var createdAt: Date
        var secret: String?

        init(_ e: WebhookEndpoint, secret: WebhookSecret? = nil) {
            id = PrefixedID.format(.webhookEndpoint, e.id)
            appId = e.appID
            mode = e.mode.rawValue
            url = e.url
            eventTypes = e.eventTypes
            enabled = e.enabled
            disabledReason = e.disabledReason
            disabledAt = e.disabledAt
            failingSince = e.failingSince
            lastSuccessAt = e.lastSuccessAt
            lastFailureAt = e.lastFailureAt
            previousSecretExpiresAt = e.previousSecretExpiresAt
            pending = e.pending
            createdAt = e.createdAt
            self.secret = secret?.text
        }

        var line: String {
            let state = enabled ? "enabled" : "DISABLED(\(disabledReason ?? "?") at \(iso(disabledAt)))"
            return "\(id)  \(mode)  \(state)  pending=\(pending)"
                + (failingSince.map { "  failing_since=\(iso($0))" } ?? "")
                + "  events=\(eventTypes.joined(separator: ","))  \(url)"
                + (secret.map { "\nsecret (shown once): \($0)" } ?? "")
        }
    }

    static func webhooks(_ sub: String, _ args: Arguments, _ out: Output) throws {
        let env = ProcessInfo.processInfo.environment
        // Input is checked before any connection: bad input is refused even with no database.
        func store(withKey: Bool = false) throws -> WebhookEndpointStore {
            WebhookEndpointStore(connection: try connect(), keys: withKey ? try CredentialKeys.fromEnvironment(env) : nil)
        }
        let events: [String]? = args.values("events").isEmpty ? nil
            : args.values("events").flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if events != nil { _ = try WebhookEndpointRules.eventTypes(events) }
        switch sub {
        case "create":
            guard let app = try args.uuid("app") else { throw CLIError.usage("--app is required") }
            let m = try mode(args), url = try args.required("url")
            try WebhookEndpointRules.validateURL(url, mode: m,
                                                 allowLoopback: WebhookEndpointStore.allowLoopback(env))
            let made = try store(withKey: true).create(appID: app, mode: m, url: url, eventTypes: events)
            let view = WebhookEndpointView(made.endpoint, secret: made.secret)
            out.emit(view) { view.line }
        case "list":
            guard let app = try args.uuid("app") else { throw CLIError.usage("--app is required") }
            let m = try args.value("mode").map { _ in try mode(args) }
            let views = try store().list(appID: app, mode: m).map { WebhookEndpointView($0) }
            out.emit(views) { views.isEmpty ? "no webhook endpoints" : views.map(\.line).joined(separator: "\n") }
        case "show", "enable", "disable", "delete", "rotate-secret", "update":
            let id = try endpointID(args.positional.count > 2 ? args.positional[2] : nil)
            let shown = PrefixedID.format(.webhookEndpoint, id)
            if sub == "update" && args.value("url") == nil && events == nil { throw CLIError.usage("give --url and/or --events") }
            let store = try store(withKey: sub == "rotate-secret")
            if sub == "delete" {
                guard try store.delete(id: id) else { throw PushError(.notFound, "no webhook endpoint \(shown)") }
                out.emit(KV(fields: ["deleted": shown])) { "webhook endpoint \(shown) deleted, with its pending deliveries" }
                return
            }
            let view: WebhookEndpointView?
            switch sub {
            case "show": view = try store.get(id: id).map { WebhookEndpointView($0) }
            case "enable": view = try store.update(id: id, enabled: true).map { WebhookEndpointView($0) }
            case "disable": view = try store.update(id: id, enabled: false).map { WebhookEndpointView($0) }
            case "update":
                view = try store.update(id: id, url: args.value("url"), eventTypes: events).map { WebhookEndpointView($0) }
            default:
                view = try store.rotateSecret(id: id).map { WebhookEndpointView($0.endpoint, secret: $0.secret) }
            }
            guard let view else { throw PushError(.notFound, "no webhook endpoint \(shown)") }
            out.emit(view) { view.line }
        case "attempts":
            let endpoint = try args.value("endpoint").map { try endpointID($0) }
            let event = try args.value("event").map { try eventID($0) }
            let app = try args.uuid("app")
            guard endpoint != nil || event != nil || app != nil else {
                throw CLIError.usage("give --endpoint, --event or --app")
            }
            let limit = try args.int("limit", in: 1...1000) ?? 50
            let list = try store().attempts(endpointID: endpoint, eventID: event, appID: app, limit: limit)
            out.emit(list) {
                list.isEmpty ? "no attempts" : list.map { a in
                    "\(iso(a.attemptedAt))  \(PrefixedID.format(.event, a.eventID))  \(a.eventType)  attempt \(a.attempt)  "
                        + "\(a.result)  \(a.statusCode.map(String.init) ?? "-")  \(a.error ?? "")  \(a.durationMillis ?? 0) ms  "
                        + "endpoint=\(PrefixedID.format(.webhookEndpoint, a.endpointID))  webhook-id=\(a.webhookID)"
                }.joined(separator: "\n")
            }
        case "resend":
            let event = try eventID(args.positional.count > 2 ? args.positional[2] : nil)
            let endpoint = try args.value("endpoint").map { try endpointID($0) }
            let n = try store().resend(eventID: event, endpointID: endpoint)
            out.emit(KV(fields: ["queued": String(n)])) {
                n == 0 ? "nothing queued: every delivery of this event is still pending"
                    : "queued \(n) deliver\(n == 1 ? "y" : "ies") of \(PrefixedID.format(.event, event)) (same webhook-id)"
            }
        default:
            print(webhooksHelp)
            throw CLIError.usage("webhooks \(sub.prefix(20)): unknown")
        }
    }

    private static func endpointID(_ text: String?) throws -> UUID {
        guard let text, let id = PrefixedID.parseLenient(text, as: .webhookEndpoint) else {
            throw CLIError.usage("give the endpoint id (a UUID or pwh_...)")
        }
        return id
    }

    private static func eventID(_ text: String?) throws -> UUID {
        guard let text, let id = PrefixedID.parseLenient(text, as: .event) else {
            throw CLIError.usage("give the event id (pevt_... as in the webhook body, or its UUID)")
        }
        return id
    }
}
