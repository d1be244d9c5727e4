import Foundation
import PushAcceptance
import PushCore
import PushStore

/// The commands that accept something (apps, devices, notifications): thin clients of
/// `AcceptanceService` (R-API-6), which validates, measures and stores exactly as the API does.
/// Here only the command line is parsed.
extension Commands {
    /// The acceptance service, connecting only once a call needs the database (bad input is
    /// refused before).
    static func service() -> AcceptanceService { AcceptanceService(connecting: { try connect() }) }

    // MARK: - apps

    static func apps(_ sub: String, _ args: Arguments, _ out: Output) throws {
        let app: PushApp?
        switch sub {
        case "create":
            var create = AppCreateRequest(
                name: try args.required("name"), requireEncryption: try args.bool("require-encryption"),
                placeholderTitle: args.value("placeholder-title"), placeholderBody: args.value("placeholder-body"),
                placeholderTitleLocKey: args.value("placeholder-title-loc-key"),
                placeholderBodyLocKey: args.value("placeholder-body-loc-key"), accountID: try args.uuid("account"),
                contentMode: args.value("content-mode"))
            let preview = try previewSettings(args)
            create.confirmDeliveries = preview.confirmDeliveries
            create.previewWindowSeconds = preview.windowSeconds
            app = try service().createApp(create)
        case "update":
            let id = try appID(args, position: 2)
            var update = AppUpdateRequest(
                name: args.value("name"), requireEncryption: try args.bool("require-encryption"),
                placeholderTitle: args.value("placeholder-title"), placeholderBody: args.value("placeholder-body"),
                placeholderTitleLocKey: args.value("placeholder-title-loc-key"),
                placeholderBodyLocKey: args.value("placeholder-body-loc-key"), contentMode: args.value("content-mode"))
            update.actor = AuditStore.cliActor()
            let preview = try previewSettings(args)
            update.confirmDeliveries = preview.confirmDeliveries
            update.previewWindowSeconds = preview.windowSeconds
            app = try service().updateApp(id: id, update)
        case "show":
            app = try AppStore(connection: try connect()).appGet(id: try appID(args, position: 2))
        case "delete":
            let id = try appID(args, position: 2)
            let store = AppStore(connection: try connect())
            guard try store.appDelete(id: id) else { throw PushError(.notFound, "no push app \(PrefixedID.format(.app, id))") }
            app = try store.appGet(id: id)
        default:
            throw CLIError.usage("apps \(sub.prefix(20)): unknown; see pushfleet apps --help")
        }
        guard let app else { throw PushError(.notFound, "no such push app") }
        out.emit(app) {
            "app \(PrefixedID.format(.app, app.id))  name=\(app.name)  require_encryption=\(app.requireEncryption)  content_mode=\(app.contentMode.rawValue)  placeholder_title=\"\(app.placeholderTitle)\"\(app.placeholderTitleLocKey.map { "  placeholder_title_loc_key=\($0)" } ?? "")\(app.placeholderBodyLocKey.map { "  placeholder_body_loc_key=\($0)" } ?? "")  confirm_deliveries=\(app.confirmDeliveries)  preview_window=\(app.previewWindowSeconds)s\(app.deleted ? "  (deleted)" : "")"
        }
    }

    /// `--confirm-deliveries true|false` and `--preview-window SECONDS` (issue 24; bounds are
    /// `push_app_set_preview`'s).
    static func previewSettings(_ args: Arguments) throws -> AppPreviewSettings {
        AppPreviewSettings(confirmDeliveries: try args.bool("confirm-deliveries"), windowSeconds: try args.int("preview-window"))
    }

    static func appID(_ args: Arguments, position: Int) throws -> UUID {
        let text = args.positional.count > position ? args.positional[position] : args.value("app")
        guard let text, let id = PrefixedID.parseLenient(text, as: .app) else { throw CLIError.usage("give the app id (papp_... or a UUID)") }
        return id
    }

    // MARK: - devices

    static func devices(_ sub: String, _ args: Arguments, _ out: Output) throws {
        guard let app = try args.uuid("app") else { throw CLIError.usage("--app is required") }
        let mode = try self.mode(args)
        if args.flag("remove-key") && args.value("encryption-public-key") != nil {
            throw CLIError.usage("--remove-key and --encryption-public-key contradict each other: give one")
        }
        switch sub {
        case "register":
            let key: DeviceRegistrationRequest.EncryptionKeyChange = args.flag("remove-key") ? .remove
                : args.value("encryption-public-key").map { .set($0) } ?? .keep
            let web = args.value("endpoint") != nil || args.value("p256dh") != nil || args.value("auth") != nil
            let r = try service().registerDevice(DeviceRegistrationRequest(
                appID: app, mode: mode, platform: try args.required("platform"), token: args.value("token"),
                subscription: web ? .init(endpoint: args.value("endpoint"), p256dh: args.value("p256dh"),
                                          auth: args.value("auth")) : nil,
                userID: try args.required("user"), apnsEnvironment: args.value("apns-environment"), encryptionKey: key,
                allowLoopbackEndpoints: args.flag("allow-loopback-endpoints"),
                rotatePreviewToken: args.flag("rotate-preview-token")))
            out.emit(RegisterOutput(r)) {
                "device \(PrefixedID.format(.device, r.device.id))\(r.created ? " created" : r.reactivated ? " reactivated" : " updated")\(r.evicted.isEmpty ? "" : "; \(r.evicted.count) deactivated (DEVICE_LIMIT)")"
                    + (r.previewToken.map { "\npreview_token \($0)  (shown once: pass it to the app)" } ?? "")
            }
        case "delete":
            guard args.positional.count > 2, let id = PrefixedID.parseLenient(args.positional[2], as: .device) else {
                throw CLIError.usage("give the device id (pdev_... or a UUID)")
            }
            try service().deleteDevice(appID: app, mode: mode, deviceID: id)
            let shown = PrefixedID.format(.device, id)
            out.emit(KV(fields: ["deleted": shown])) { "device \(shown) deactivated" }
        case "list":
            let registry = DeviceRegistry(connection: try connect())
            let list = try registry.list(appID: app, mode: mode, userID: args.value("user"), active: try args.bool("active"))
            out.emit(list) {
                list.map { d in
                    "\(PrefixedID.format(.device, d.id))  \(d.platform)  user=\(d.userID)  kid=\(d.encryptionKeyID ?? "-")  \(d.active ? "active" : "inactive(\(d.deactivationReason ?? "?"))")"
                }.joined(separator: "\n")
            }
        default:
            throw CLIError.usage("devices \(sub.prefix(20)): unknown; see pushfleet devices --help")
        }
    }

    /// `--mode test|live`.
    static func mode(_ args: Arguments) throws -> Mode {
        guard let mode = Mode(rawValue: try args.required("mode")) else {
            throw PushError(.validationError, "mode: must be test or live", field: "mode")
        }
        return mode
    }

    // MARK: - send

    static func send(_ args: Arguments, _ out: Output) throws {
        guard let app = try args.uuid("app") else { throw CLIError.usage("--app is required") }
        let mode = try self.mode(args)
        let users = args.values("user")
        var q = SendRequest(appID: app, mode: mode, userIDs: users)
        q.audience = args.value("audience")   // `users` is the same as absent; the service judges the rest
        let platforms = args.values("platform")
        q.platforms = platforms.isEmpty ? nil : platforms
        let devices = try args.values("device").map { text -> UUID in
            guard let u = PrefixedID.parseLenient(text, as: .device) else { throw CLIError.usage("--device must be a device id (pdev_... or a UUID)") }
            return u
        }
        guard !users.isEmpty || q.wholeAppAudience != nil || q.platforms != nil else {
            if !devices.isEmpty { throw CLIError.usage("--user is required with --device, which narrows the users to some of their devices") }
            throw CLIError.usage("--user is required (repeat it for several users; --audience users is the same), or --audience all")
        }
        q.deviceIDs = devices.isEmpty ? nil : devices
        q.title = args.value("title")
        q.body = args.value("body")
        q.data = args.value("data")
        q.badge = try args.int("badge")
        q.sound = args.value("sound")
        q.threadID = args.value("thread-id")
        q.collapseKey = args.value("collapse-key")
        q.priority = args.value("priority")
        q.sendAt = try args.date("send-at")
        q.ttlSeconds = try args.int("ttl")
        q.idempotencyKey = args.value("idempotency-key")
        try kindOptions(args, into: &q)
        if args.value("sms-phone") != nil || args.value("sms-text") != nil {
            guard let phone = args.value("sms-phone"), let text = args.value("sms-text") else {
                throw CLIError.usage("--sms-phone and --sms-text go together")
            }
            q.smsFallback = .init(phone: phone, text: text)
        }
        let r = try service().send(q)
        let id = PrefixedID.format(.notification, r.notificationID)
        out.emit(SendOutput(notificationID: r.notificationID, created: r.created, replayed: r.replayed,
                            smsSegments: r.smsSegments?.count, smsEncoding: r.smsSegments?.encoding.rawValue)) {
            r.created ? id : "\(id) (a replay of the idempotency key: the first notification)"
        }
        // The id alone on stdout (scripts read it); what the SMS fallback costs goes beside it.
        if let s = r.smsSegments, !args.flag("json") {
            FileHandle.standardError.write(Data("sms fallback: \(s.count) segment\(s.count == 1 ? "" : "s"), \(s.encoding.rawValue)\n".utf8))
        }
    }

    /// The kind options of `send` (R-KIND-1..3); the acceptance service judges them.
    static func kindOptions(_ args: Arguments, into q: inout SendRequest) throws {
        q.pushType = args.value("push-type")
        q.interruptionLevel = args.value("interruption-level")
        q.relevanceScore = try args.number("relevance-score")
        q.category = args.value("category")
        q.targetContentID = args.value("target-content-id")
        if args.value("critical-sound") != nil || args.value("critical-volume") != nil {
            q.criticalSound = .init(name: args.value("critical-sound"), volume: try args.number("critical-volume"))
        }
        q.titleLocKey = args.value("title-loc-key")
        let titleArgs = args.values("title-loc-arg")
        q.titleLocArgs = titleArgs.isEmpty ? nil : titleArgs
        q.bodyLocKey = args.value("body-loc-key")
        let bodyArgs = args.values("body-loc-arg")
        q.bodyLocArgs = bodyArgs.isEmpty ? nil : bodyArgs
        q.channelID = args.value("channel-id")
    }

    // MARK: - notifications

    static func notifications(_ sub: String, _ args: Arguments, _ out: Output) throws {
        guard args.positional.count > 2, let id = PrefixedID.parseLenient(args.positional[2], as: .notification) else {
            throw CLIError.usage("give the notification id (pnot_... or a UUID)")
        }
        let shown = PrefixedID.format(.notification, id)
        switch sub {
        case "show":
            guard let r = try NotificationStore(connection: try connect()).report(id: id) else {
                throw PushError(.notFound, "no notification \(shown)")
            }
            out.emit(r) { Report.text(r) }
        case "cancel":
            try service().cancelNotification(id: id)
            out.emit(KV(fields: ["cancelled": shown])) { "cancelled \(shown) (refunded)" }
        case "revoke":
            let users = args.values("user")
            try service().revokeNotification(id: id, userIDs: users.isEmpty ? nil : users)
            out.emit(KV(fields: ["revoked": shown])) {
                "revoked \(shown) for \(users.isEmpty ? "every device" : "the devices of \(users.count) user(s)"): their preview fetches answer 404"
            }
        default:
            throw CLIError.usage("notifications \(sub.prefix(20)): unknown")
        }
    }
}
