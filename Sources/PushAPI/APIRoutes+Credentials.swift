import Foundation
import PushAcceptance
import PushCore
import PushProviders
import PushStore

/// The body of `PUT /v1/push/apps/{id}/credentials/{kind}` (issue 15 part 2, issue 20 part 1):
/// the members of the kind, type-checked here (400 naming the field) and unknown ones refused
/// (422); what they must be is `AcceptanceService.setCredentials`'s (the CLI's checks, once).
/// APNs `team_id`, `key_id`, `topic`, `p8` (PEM text); FCM `service_account` (Google's JSON
/// object); Web Push `subject`; Twilio `account_sid`, `auth_token` or `api_key_sid` +
/// `api_key_secret`, `from` or `messaging_service_sid`; each kind's endpoint overrides
/// (`apns_base_url_production`, `apns_base_url_sandbox`, `fcm_base_url`, `fcm_token_uri`,
/// `twilio_base_url`: https URLs).
struct CredentialBody {
    var request: CredentialRequest

    /// The kinds a path may name: the standard providers' and the SMS provider's; each kind's
    /// plain identifiers and overrides are its rules' (`CredentialRules`, its secrets are read apart).
    static let kinds: [CredentialKind] = ProviderTable.standard.credentialKinds + CredentialKind.sms.sorted { $0.rawValue < $1.rawValue }

    /// Decodes a body for `kind` (a kind the path names; nil: 404 before any body is read).
    static func decode(_ body: [UInt8], kind: CredentialKind) throws -> CredentialBody {
        var f = try JSONFields.parseBody(body)
        var request = CredentialRequest(kind: kind)
        let rules = try? ProviderTable.standard.credentialRules(for: kind)
        let names = (rules?.identifierKeys ?? []) + (rules?.overrideKeys ?? []).sorted()
        for name in names {
            if let value = try f.string(name) { request.config[name] = value }
        }
        switch kind {
        case .apns:
            request.p8 = try f.string("p8").map { Array($0.utf8) }
        case .fcm:
            request.serviceAccount = try f.object("service_account").map { JSONWriter.bytes(.object($0)) }
        case .twilio:
            request.authToken = try f.string("auth_token").map { Array($0.utf8) }
            request.apiKeySecret = try f.string("api_key_secret").map { Array($0.utf8) }
        default:
            break
        }
        try f.finish()
        return CredentialBody(request: request)
    }

    /// The kind a path's `{kind}` segment names. - Throws: 404 for any other segment.
    static func kind(_ segment: String?) throws -> CredentialKind {
        guard let segment, let kind = kinds.first(where: { $0.rawValue == segment }) else {
            let names = kinds.map(\.rawValue)
            throw APIError.notFound("no such credential kind: use \(names.dropLast().joined(separator: ", ")) or \(names.last ?? "")")
        }
        return kind
    }
}

/// `/v1/push/apps/{id}/credentials` (R-APP-3, R-SMS-1): an app's credential sets, through the
/// acceptance service the CLI's `apps credentials` calls. Sets serve live mode only, so every
/// route needs a live key (a test key: 403 `PERMISSION_DENIED`, after the app's ownership: another
/// account's app is 404 like a missing one). Secrets are write-only: sealed under the server's
/// `PUSHFLEET_CREDENTIALS_KEY` (none: 503) and never answered or logged.
extension APIRoutes {
    /// The credential routes' checks before their body is judged: the app's ownership (404), then
    /// a live key (403), so a test key learns nothing from a body's errors. Nothing for other routes.
    func preflight(_ route: APIRoute, id: String?) throws {
        guard route == .setCredentials || route == .deleteCredentials || route == .listCredentials else { return }
        _ = try visibleApp(id)
        try requireLiveKey()
    }

    func requireLiveKey() throws {
        guard principal.mode == .live else {
            throw APIError.forbidden("credential sets serve live mode only (R-APP-3): use a live key (mk_live_...)")
        }
    }

    /// Stores or replaces the set: 200 with its identifiers and state (`unverified` again, its
    /// `first_accepted_at` kept, R-APP-3); a Web Push set answers its new VAPID public key.
    func setCredentials(_ appText: String?, _ b: CredentialBody) throws -> HTTPResponse {
        let app = try visibleApp(appText)
        try requireLiveKey()
        guard let keys = webhooks.keys else {
            throw APIError.unavailable("this server has no PUSHFLEET_CREDENTIALS_KEY to seal credential secrets with")
        }
        var request = b.request
        request.actor = principal.actor
        let result = try accepted { try acceptance.setCredentials(appID: app.id, request, keys: keys) }
        return ok(ResponseBodies.credentialSet(result.summary))
    }

    /// The app's sets, by kind (one page: an app holds at most one set per kind).
    func listCredentials(_ appText: String?) throws -> HTTPResponse {
        let app = try visibleApp(appText)
        _ = try ListQuery.parse(request.query, filters: [])
        try requireLiveKey()
        let sets = try accepted { try acceptance.credentials(appID: app.id) }
        return ok(ResponseBodies.list(APIPage(items: sets, hasMore: false), ResponseBodies.credentialSet))
    }

    /// Removes the set (404 when the app has none of that kind).
    func deleteCredentials(_ appText: String?, kind: String?) throws -> HTTPResponse {
        let app = try visibleApp(appText)
        let k = try CredentialBody.kind(kind)
        try requireLiveKey()
        guard try accepted({ try acceptance.removeCredentials(appID: app.id, kind: k, actor: principal.actor) }) else {
            throw APIError.notFound("this app has no \(k.rawValue) credential set")
        }
        return ok(.object(JSONObject([
            .init("object", .string("push_credential_set")), .init("app_id", .string(PrefixedID.format(.app, app.id))),
            .init("kind", .string(k.rawValue)), .init("deleted", .bool(true)),
        ])))
    }
}

extension ResponseBodies {
    /// A credential set without its secret: identifiers (sorted), `state`, `first_accepted_at`
    /// (R-APP-3); `application_server_key` is a Web Push set's VAPID public key (null otherwise).
    static func credentialSet(_ s: CredentialSummary) -> JSONValue {
        .object(JSONObject([
            .init("object", .string("push_credential_set")), .init("app_id", .string(PrefixedID.format(.app, s.appID))),
            .init("kind", .string(s.kind.rawValue)), .init("state", .string(s.state.rawValue)),
            .init("first_accepted_at", time(s.firstAcceptedAt)), .init("invalid_reason", text(s.invalidReason)),
            .init("updated_at", time(s.updatedAt)),
            .init("identifiers", .object(JSONObject(s.identifiers.sorted { $0.key < $1.key }.map { .init($0.key, .string($0.value)) }))),
            .init("application_server_key", s.kind == .webpush ? text(s.identifiers["public_key"]) : .null),
        ]))
    }
}
