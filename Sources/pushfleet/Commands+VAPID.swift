import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import PushStore

/// `pushfleet apps vapid create APP_ID --subject mailto:...` (issue 7, RFC 8292): generates the
/// app's VAPID key pair, stores it as the app's `webpush` credential set (sealed like the others),
/// and prints the public key in the form browsers' `applicationServerKey` takes.
extension Commands {
    static let vapidHelp = """
    Usage: pushfleet apps vapid create APP_ID --subject mailto:ops@example.com|https://example.com
      Generates a P-256 VAPID key pair for the app (replacing any previous one: browsers must then
      subscribe again with the new key) and prints the public key (base64url, 65-byte point) to pass as
      applicationServerKey to PushManager.subscribe(). The private key is sealed with PUSHFLEET_CREDENTIALS_KEY.
    """

    static func vapid(_ args: Arguments, _ out: Output) throws {
        let sub = args.positional.count > 2 ? args.positional[2] : ""
        if args.flag("help") { print(vapidHelp); return }
        guard sub == "create" else {
            throw CLIError.usage("apps vapid: give create (see pushfleet apps vapid --help)")
        }
        guard args.positional.count > 3, let appID = PrefixedID.parseLenient(args.positional[3], as: .app) else {
            throw CLIError.usage("give the app id (papp_... or a UUID)")
        }
        var request = CredentialRequest(kind: .webpush, config: ["subject": try args.required("subject")])
        request.actor = AuditStore.cliActor()
        let result = try service().setCredentials(appID: appID, request, keys: try CredentialKeys.fromEnvironment())
        let summary = result.summary
        let publicKey = result.applicationServerKey ?? summary.identifiers["public_key"] ?? ""
        out.emit(KV(fields: ["app_id": PrefixedID.format(.app, appID), "application_server_key": publicKey,
                             "state": summary.state.rawValue])) {
            "VAPID key pair stored for app \(PrefixedID.format(.app, appID)) (state \(summary.state.rawValue))\napplicationServerKey: \(publicKey)"
        }
    }
}
