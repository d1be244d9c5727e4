import Foundation
import PushAcceptance
import PushCore
import PushProviders
import PushStore

/// `pushfleet apps credentials ...` (R-APP-3): set, show, remove, rotate-key. Secrets are read from
/// files, sealed before they reach the database, and never printed.
extension Commands {
    static let credentialsHelp = """
    Usage: pushfleet apps credentials set APP_ID --kind apns --team-id TEAM --key-id KEY --topic BUNDLE_ID --p8-file FILE
                                      [--apns-base-url-production URL] [--apns-base-url-sandbox URL]
           pushfleet apps credentials set APP_ID --kind fcm --service-account-file FILE [--fcm-base-url URL] [--fcm-token-uri URL]
           pushfleet apps credentials set APP_ID --kind twilio --account-sid AC... (--auth-token-file FILE |
                                      --api-key-sid SK... --api-key-secret-file FILE) (--from SENDER | --messaging-service-sid MG...)
                                      [--twilio-base-url URL]
           pushfleet apps credentials show APP_ID
           pushfleet apps credentials remove APP_ID --kind apns|fcm|webpush|twilio
           pushfleet apps credentials rotate-key
      Web Push (VAPID) sets are made by pushfleet apps vapid create. The twilio set is the app's SMS provider
      for live SMS fallbacks (R-SMS-1); test mode never uses it.
      Secrets are sealed with PUSHFLEET_CREDENTIALS_KEY (base64url, 32 bytes). A new set starts unverified;
      replacing a set resets its state, its first acceptance time is kept (R-APP-3). rotate-key re-seals every
      set under PUSHFLEET_CREDENTIALS_KEY, opening each with it or PUSHFLEET_CREDENTIALS_KEY_PREVIOUS, the
      fleet's sealed APNs provider tokens, and every webhook endpoint's signing secrets.
    """

    /// A set as printed: identifiers and state, never the secret.
    struct CredentialView: Encodable {
        var appId: UUID
        var kind: String
        var state: String
        var firstAcceptedAt: Date?
        var invalidReason: String?
        var updatedAt: Date
        var identifiers: [String: String]

        init(_ s: CredentialSummary) {
            appId = s.appID
            kind = s.kind.rawValue
            state = s.state.rawValue
            firstAcceptedAt = s.firstAcceptedAt
            invalidReason = s.invalidReason
            updatedAt = s.updatedAt
            identifiers = s.identifiers
        }

        var line: String {
            let ids = identifiers.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "  ")
            return "\(kind)  state=\(state)  first_accepted_at=\(iso(firstAcceptedAt))"
                + (invalidReason.map { "  invalid_reason=\($0)" } ?? "") + "  \(ids)"
        }
    }

    /// A secret file's bytes. - Throws: `VALIDATION_ERROR` naming the path when it cannot be read.
    static func secretFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PushError(.validationError, "cannot read \(path)")
        }
        return Array(data)
    }

    /// Without trailing newlines and spaces.
    static func trimmed(_ secret: [UInt8]) -> [UInt8] {
        var s = secret
        while let last = s.last, last == 0x0A || last == 0x0D || last == 0x20 { s.removeLast() }
        return s
    }

    static func credentials(_ args: Arguments, _ out: Output) throws {
        let sub = args.positional.count > 2 ? args.positional[2] : ""
        let env = ProcessInfo.processInfo.environment
        switch sub {
        case "set":
            let appID = try appID(args, position: 3)
            let keys = try CredentialKeys.fromEnvironment(env)
            let kind = CredentialKind(rawValue: try args.required("kind"))
            guard kind == .apns || kind == .fcm || kind == .twilio else {
                throw PushError(.validationError, "kind: must be apns, fcm or twilio (webpush: apps vapid create)")
            }
            var request = CredentialRequest(kind: kind)
            switch kind {
            case .apns:
                request.config["team_id"] = try args.required("team-id")
                request.config["key_id"] = try args.required("key-id")
                request.config["topic"] = try args.required("topic")
                request.p8 = try secretFile(try args.required("p8-file"))
            case .twilio:
                request.config["account_sid"] = try args.required("account-sid")
                request.config["api_key_sid"] = args.value("api-key-sid")
                request.config["from"] = args.value("from")
                request.config["messaging_service_sid"] = args.value("messaging-service-sid")
                // A token file written by `echo` ends with a newline.
                if args.value("api-key-sid") == nil {
                    request.authToken = trimmed(try secretFile(try args.required("auth-token-file")))
                } else {
                    request.apiKeySecret = trimmed(try secretFile(try args.required("api-key-secret-file")))
                }
            default:
                request.serviceAccount = try secretFile(try args.required("service-account-file"))
            }
            for key in (try? service().providers.credentialRules(for: kind))?.overrideKeys ?? [] {
                if let v = args.value(key.replacingOccurrences(of: "_", with: "-")) { request.config[key] = v }
            }
            request.actor = AuditStore.cliActor()
            let summary = try service().setCredentials(appID: appID, request, keys: keys).summary
            out.emit(CredentialView(summary)) { "stored " + CredentialView(summary).line }
        case "show":
            let appID = try appID(args, position: 3)
            let views = try CredentialStore(connection: try connect(), keys: nil).states(appID: appID).map(CredentialView.init)
            out.emit(views) { views.isEmpty ? "no credential sets" : views.map(\.line).joined(separator: "\n") }
        case "remove":
            let appID = try appID(args, position: 3)
            let kind = CredentialKind(rawValue: try args.required("kind"))
            guard try service().removeCredentials(appID: appID, kind: kind, actor: AuditStore.cliActor()) else {
                throw PushError(.notFound, "no \(kind.rawValue) set for app \(PrefixedID.format(.app, appID))")
            }
            out.emit(KV(fields: ["removed": kind.rawValue])) { "removed the \(kind.rawValue) set" }
        case "rotate-key":
            let keys = try CredentialKeys.fromEnvironment(env)
            let conn = try connect()
            let n = try CredentialStore(connection: conn, keys: keys).rotateKey()
            let hooks = try WebhookEndpointStore(connection: conn, keys: keys).rotateKey()
            out.emit(ResealOutput(resealed: n, webhookEndpointsResealed: hooks)) {
                "re-sealed \(n) credential set(s) and the secrets of \(hooks) webhook endpoint(s) under \(CredentialKeys.currentVariable)"
            }
        default:
            print(credentialsHelp)
            if !args.flag("help") { throw CLIError.usage("apps credentials: give set, show, remove or rotate-key") }
        }
    }
}
