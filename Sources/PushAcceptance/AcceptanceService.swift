import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore

/// The one acceptance path (R-API-6) the CLI and the API both call: request validation (R-DEV-1,
/// R-DEV-3, R-SEND-1, R-SEND-13, R-LIM-1), content building, the exact 4096-byte rule against the
/// targeted devices (R-SEND-7, PushCore's `PayloadSizeRule`), then the SQL function that stores
/// it (`push_enqueue`, `push_register_device_v2`, `push_app_create`, `push_app_update`,
/// `push_cancel`, `push_delete_device`), which bounds every field again for any other caller.
/// No HTTP and no command-line parsing here.
///
/// Every refusal is an `AcceptanceError` (a stable code, a message that never quotes content, the
/// field at fault, the bytes to cut). Any other error thrown is the database's (`PGError`: the
/// connection failed, a timeout), which the API answers 503.
///
/// Runs on the connection it is given (the API hands it a pooled one), one call at a time, each
/// in its own statements: a send costs two round trips (the app and its targeted devices, then
/// `push_enqueue`), a registration one. Every check that needs no database runs before the
/// connection is first used, so bad input is refused even with no database reachable.
public final class AcceptanceService {
    private var session: PGConnection?
    private let open: (() throws -> PGConnection)?
    /// Replaces the R-DEV-6 cap of active devices per app and mode (nil: 1,000,000 live, 1,000
    /// test); tests use small numbers.
    public var appDeviceLimit: Int64?
    /// The providers served: which platforms register and how, each one's payload writer.
    public var providers: ProviderTable = .standard
    private var platformsServed = false

    /// A service on `connection`.
    public init(connection: PGConnection, appDeviceLimit: Int64? = nil) {
        self.session = connection
        self.open = nil
        self.appDeviceLimit = appDeviceLimit
    }

    /// A service that opens its connection with `open` when a call first needs the database (the
    /// CLI: input refused before connecting).
    public init(connecting open: @escaping () throws -> PGConnection, appDeviceLimit: Int64? = nil) {
        self.session = nil
        self.open = open
        self.appDeviceLimit = appDeviceLimit
    }

    /// The session calls run on, opened on first use for `init(connecting:)`.
    /// - Throws: `PGError` when it cannot be opened.
    public func connection() throws -> PGConnection {
        if let session { return session }
        guard let open else { throw PGError(code: .usage, message: "AcceptanceService has no connection") }
        let c = try open()
        session = c
        return c
    }

    /// Tells the database the platforms `providers` serves (`push_platforms`, sql/0024: what
    /// `push_register_device_v2` and `push_enqueue` accept, and which encrypt themselves), one
    /// statement. A service that opens its own connection (the CLI's, `init(connecting:)`) does it
    /// before its first registration or send; the API's readiness probe does it for the API.
    /// - Throws: `PGError` on database failure (or a schema older than sql/0024).
    public func servePlatforms() throws {
        try PlatformStore(connection: try connection()).serve(providers.servedPlatforms)
        platformsServed = true
    }

    /// `servePlatforms` once, for a service that opened its own connection.
    private func servePlatformsOnce() throws {
        if open != nil && !platformsServed { try servePlatforms() }
    }

    // MARK: - Notifications

    /// Accepts one notification (R-SEND-1): validates every field, builds its content, refuses it
    /// `PUSH_PAYLOAD_TOO_LARGE` with the bytes to cut when the largest payload among the devices it
    /// targets now would exceed 4096 bytes (or when no payload kind could ever carry it, whatever
    /// the audience), then enqueues it (charges, job, NOTIFY in one statement). A whole-app
    /// audience (`audience: all`, issue 22) is measured against any device of its platforms
    /// (`DeliveryPlanner.anyDeviceOf`), not read device by device, and is charged at send time.
    ///
    /// An idempotency key already used in the app and mode answers the first notification
    /// (`created` false) when every field but `send_at` is the same, and `IDEMPOTENCY_KEY_REUSED`
    /// otherwise (R-API-5); a true replay is answered even if the audience changed since.
    /// - Parameter now: the acceptance time `send_at`'s window is judged from.
    /// - Throws: `AcceptanceError` (`VALIDATION_ERROR`, `NOT_FOUND` for an unknown or deleted app,
    ///   `PUSH_PAYLOAD_TOO_LARGE`, `IDEMPOTENCY_KEY_REUSED`); `PGError` on database failure.
    public func send(_ request: SendRequest, now: Date = Date()) throws -> SendResult {
        let valid = try SendValidation.validate(request, now: now, platforms: providers.platforms)
        try servePlatformsOnce()
        let store = NotificationStore(connection: try connection())
        guard let preview = try store.sendPreview(appID: request.appID, mode: request.mode.rawValue,
                                                  userIDs: request.userIDs, deviceIDs: request.deviceIDs),
              !preview.app.deleted else {
            throw AcceptanceError(.notFound, "app_id: no push app \(PrefixedID.format(.app, request.appID))", field: "app_id")
        }
        let planner = DeliveryPlanner(content: valid.content,
                                      placeholders: AppPlaceholders(title: preview.app.placeholderTitle,
                                                                    body: preview.app.placeholderBody,
                                                                    titleLocKey: preview.app.placeholderTitleLocKey,
                                                                    bodyLocKey: preview.app.placeholderBodyLocKey),
                                      requireEncryption: preview.app.requireEncryption, mode: request.mode,
                                      contentMode: preview.app.contentMode, platforms: providers.planning)
        let floor = planner.contentFloorCheck
        if !floor.fits { throw AcceptanceError.tooLarge(floor) }
        // A whole-app audience is known only at its send time: measure any device it may hold.
        let devices = request.wholeAppAudience != nil ? planner.anyDeviceOf(platforms: request.platforms?.map(Platform.init(rawValue:)))
            : preview.audience.map {
                DeviceSnapshot(platform: Platform(rawValue: $0.platform), token: $0.address,
                               apnsEnvironment: $0.apnsEnvironment.flatMap(APNsEnvironment.init(rawValue:)),
                               publicKey: $0.publicKey, kid: $0.kid)
            }
        if let worst = planner.acceptanceSizeCheck(devices: devices), !worst.fits {
            // A replay is judged by push_enqueue against its first notification, not by today's devices.
            let replay = try request.idempotencyKey.map {
                try store.notificationID(appID: request.appID, mode: request.mode.rawValue, idempotencyKey: $0)
            } ?? nil
            if replay == nil { throw AcceptanceError.tooLarge(worst) }
        }
        let (id, created) = try Self.stored { try store.enqueue(valid.enqueue) }
        return SendResult(notificationID: id, created: created,
                          smsSegments: request.smsFallback.map { SMSSegments($0.text) })
    }

    /// Cancels a notification whose send time has not come (refunding it). With `appID` or `mode`
    /// given, a notification of another app or mode is `NOT_FOUND`, exactly like one that does not
    /// exist (R-MODE-1; the API also scopes by account).
    /// - Throws: `AcceptanceError` `NOT_FOUND`, or `NOT_CANCELLABLE` once its send time came or it
    ///   is final; `PGError` on database failure.
    public func cancelNotification(id: UUID, appID: UUID? = nil, mode: Mode? = nil) throws {
        let store = NotificationStore(connection: try connection())
        let shown = PrefixedID.format(.notification, id)
        guard let scope = try store.scope(id: id), appID.map({ $0 == scope.appID }) ?? true,
              mode.map({ $0.rawValue == scope.mode }) ?? true else {
            throw AcceptanceError(.notFound, "no notification \(shown)")
        }
        guard try store.cancel(id: id) else {
            throw AcceptanceError(.notCancellable, "notification \(shown) cannot be cancelled: its send time has come or it is final")
        }
    }

    /// Revokes a notification's content for preview fetches (issue 24 part 4, R-IDS-2): for every
    /// device, which erases its stored content (at once when the notification is final, else as soon as
    /// it becomes final: its remaining batches still push it), or only
    /// the devices of `userIDs` (1 to 1,000 ids of 1 to 255 characters per call, at most 1,000
    /// revoked users per notification in all; the content stays for the others). Later fetches
    /// answer the same 404 as every other refusal. With `appID` or `mode` given, a notification of
    /// another app or mode is `NOT_FOUND` (R-MODE-1), as in `cancelNotification`.
    /// - Throws: `AcceptanceError` `NOT_FOUND`, `VALIDATION_ERROR` (field `user_ids`); `PGError`.
    public func revokeNotification(id: UUID, appID: UUID? = nil, mode: Mode? = nil, userIDs: [String]? = nil) throws {
        if let users = userIDs {
            guard (1...1000).contains(users.count) else {
                throw AcceptanceError(.validationError, "user_ids must hold 1 to 1000 user ids", field: "user_ids")
            }
            for u in users where u.isEmpty || u.unicodeScalars.count > DeviceRegistration.maxUserIDLength
                || u.unicodeScalars.contains("\u{0}") {
                throw AcceptanceError(.validationError, "user_ids: each must be 1 to \(DeviceRegistration.maxUserIDLength) characters, without NUL",
                                      field: "user_ids")
            }
        }
        let conn = try connection()
        let store = NotificationStore(connection: conn)
        let shown = PrefixedID.format(.notification, id)
        guard let scope = try store.scope(id: id), appID.map({ $0 == scope.appID }) ?? true,
              mode.map({ $0.rawValue == scope.mode }) ?? true else {
            throw AcceptanceError(.notFound, "no notification \(shown)")
        }
        guard try Self.stored({ try PreviewStore(connection: conn).revoke(notificationID: id, userIDs: userIDs) }) else {
            throw AcceptanceError(.notFound, "no notification \(shown)")
        }
    }

    // MARK: - Devices

    /// Registers (upserts) a device (R-DEV-1..8): every field validated (the token's alphabet, the
    /// user id, the key on the P-256 curve and unpadded, the subscription's endpoint and keys),
    /// then `push_register_device_v2` (the per-user and per-app limits, R-DEV-5/6).
    /// - Returns: the device as stored, whether it was created or reactivated, and the user's devices
    ///   deactivated with `DEVICE_LIMIT`.
    /// - Throws: `AcceptanceError` `VALIDATION_ERROR` naming the field, `NOT_FOUND` (app),
    ///   `PUSH_DEVICE_LIMIT`; `PGError` on database failure.
    public func registerDevice(_ request: DeviceRegistrationRequest) throws -> DeviceRegistrationResult {
        let key: String??
        switch request.encryptionKey {
        case .keep: key = .none
        case .remove: key = .some(nil)
        case .set(let text): key = .some(text)
        }
        let registration: DeviceRegistration
        do {
            registration = try DeviceRegistration.validate(
                mode: request.mode.rawValue, platform: request.platform, token: request.token, userID: request.userID,
                apnsEnvironment: request.apnsEnvironment, encryptionPublicKey: key,
                subscriptionEndpoint: request.subscription?.endpoint, subscriptionP256dh: request.subscription?.p256dh,
                subscriptionAuth: request.subscription?.auth, platforms: providers.addressing,
                allowLoopbackEndpoints: request.allowLoopbackEndpoints)
        } catch let e as PushError {
            throw AcceptanceError(e)
        }
        try servePlatformsOnce()
        let registry = DeviceRegistry(connection: try connection(), appLimitOverride: appDeviceLimit)
        let r = try Self.stored {
            try registry.register(appID: request.appID, registration, rotatePreviewToken: request.rotatePreviewToken)
        }
        return DeviceRegistrationResult(device: r.device, created: r.created, reactivated: r.reactivated, evicted: r.evicted,
                                        previewToken: r.previewToken)
    }

    /// Deletes (deactivates) a device of `appID` and `mode` (R-DEV-7; registering its token again
    /// reactivates it).
    /// - Throws: `AcceptanceError` `NOT_FOUND` when no active device of that app and mode has the
    ///   id; `PGError` on database failure.
    public func deleteDevice(appID: UUID, mode: Mode, deviceID: UUID) throws {
        let registry = DeviceRegistry(connection: try connection())
        guard try Self.stored({ try registry.delete(appID: appID, mode: mode, deviceID: deviceID) }) else {
            throw AcceptanceError(.notFound, "no active device \(PrefixedID.format(.device, deviceID)) in this app and mode")
        }
    }

    /// Erases one user of `appID` and `mode` for a data-protection request (issue 15 part 6;
    /// `push_erase_user`, sql/0015): their devices deactivated, the content and SMS parts of the
    /// notifications addressed to them alone erased, the user dropped from the others, their
    /// deliveries' stored payloads erased. Idempotent: erasing again answers zeros.
    /// - Throws: `AcceptanceError` `VALIDATION_ERROR` (field `user_id`) for a user id that is not
    ///   1 to 255 characters or holds NUL; `PGError` on database failure.
    public func eraseUser(appID: UUID, mode: Mode, userID: String) throws -> UserErasure {
        guard !userID.isEmpty, userID.unicodeScalars.count <= DeviceRegistration.maxUserIDLength,
              !userID.unicodeScalars.contains("\u{0}") else {
            throw AcceptanceError(.validationError, "user_id must be 1 to \(DeviceRegistration.maxUserIDLength) characters, without NUL",
                                  field: "user_id")
        }
        let conn = try connection()
        return try Self.stored { try UserErasure.run(conn, appID: appID, mode: mode, userID: userID) }
    }

    // MARK: - Apps

    /// Creates a push app (R-APP-1) in `request.accountID`'s account (R-API-1): name 1 to 200
    /// characters, placeholders at most 128 bytes each as escaped in JSON (R-LIM-1).
    /// - Throws: `AcceptanceError` `VALIDATION_ERROR` naming the field, `NOT_FOUND` for an unknown
    ///   account; `PGError` on database failure.
    public func createApp(_ request: AppCreateRequest) throws -> PushApp {
        try AppValidation.check(name: request.name, placeholderTitle: request.placeholderTitle,
                                placeholderBody: request.placeholderBody, placeholderTitleLocKey: request.placeholderTitleLocKey,
                                placeholderBodyLocKey: request.placeholderBodyLocKey)
        let contentMode = try AppValidation.contentMode(request.contentMode)
        try AppValidation.previewWindow(request.previewWindowSeconds)
        let store = AppStore(connection: try connection())
        return try Self.stored {
            try store.appCreate(name: request.name, requireEncryption: request.requireEncryption,
                                placeholderTitle: request.placeholderTitle, placeholderBody: request.placeholderBody,
                                placeholderTitleLocKey: request.placeholderTitleLocKey,
                                placeholderBodyLocKey: request.placeholderBodyLocKey, accountID: request.accountID,
                                preview: AppPreviewSettings(confirmDeliveries: request.confirmDeliveries,
                                                            windowSeconds: request.previewWindowSeconds),
                                contentMode: contentMode)
        }
    }

    /// Changes the given fields of a push app (R-APP-1, R-APP-2: the policy and the content mode of
    /// R-IDS-1 are read at send time, so they apply to queued notifications too); turning `require_encryption` off records a
    /// `push_app.encryption_disabled` event for the live mode.
    /// - Throws: `AcceptanceError` `VALIDATION_ERROR` naming the field, `NOT_FOUND` for an unknown
    ///   or deleted app; `PGError` on database failure.
    public func updateApp(id: UUID, _ request: AppUpdateRequest) throws -> PushApp {
        try AppValidation.check(name: request.name, placeholderTitle: request.placeholderTitle,
                                placeholderBody: request.placeholderBody, placeholderTitleLocKey: request.placeholderTitleLocKey,
                                placeholderBodyLocKey: request.placeholderBodyLocKey)
        let contentMode = try AppValidation.contentMode(request.contentMode)
        try AppValidation.previewWindow(request.previewWindowSeconds)
        let conn = try connection()
        func update(_ c: PGConnection) throws -> PushApp? {
            try Self.stored({
                try AppStore(connection: c).appUpdate(id: id, requireEncryption: request.requireEncryption,
                                                      placeholderTitle: request.placeholderTitle, placeholderBody: request.placeholderBody,
                                                      name: request.name, placeholderTitleLocKey: request.placeholderTitleLocKey,
                                                      placeholderBodyLocKey: request.placeholderBodyLocKey,
                                                      preview: AppPreviewSettings(confirmDeliveries: request.confirmDeliveries,
                                                                                  windowSeconds: request.previewWindowSeconds),
                                                      contentMode: contentMode)
            })
        }
        let app = request.requireEncryption == nil && contentMode == nil ? try update(conn) : try conn.transaction { c -> PushApp? in
            // The policy before the change, its row locked until the change commits, so the audit
            // log's old and new values are exact (issue 15 part 5). An unknown app: nothing to do.
            guard let before = try AppStore(connection: c).lockedPolicy(id: id) else { return nil }
            guard let app = try update(c) else { return nil }
            let audit = AuditStore(connection: c)
            if before.requireEncryption != app.requireEncryption {
                try audit.record(
                    accountID: nil, appID: id, actor: request.actor, action: .requireEncryptionChanged,
                    target: PrefixedID.format(.app, id),
                    details: JSONObject([.init("from", .bool(before.requireEncryption)), .init("to", .bool(app.requireEncryption))]))
            }
            if before.contentMode != app.contentMode {
                try audit.record(
                    accountID: nil, appID: id, actor: request.actor, action: .contentModeChanged,
                    target: PrefixedID.format(.app, id),
                    details: JSONObject([.init("from", .string(before.contentMode.rawValue)),
                                         .init("to", .string(app.contentMode.rawValue))]))
            }
            return app
        }
        guard let app else { throw AcceptanceError(.notFound, "no push app \(PrefixedID.format(.app, id))") }
        return app
    }

    // MARK: - Helpers

    /// Runs a storage step, turning the SQL functions' refusals (and the stores' `PushError`s)
    /// into `AcceptanceError`; database failures pass through.
    static func stored<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PushError {
            throw AcceptanceError(e)
        } catch let e as PGError {
            if let domain = StoreErrors.domainError(e) { throw AcceptanceError(domain) }
            throw e
        }
    }
}

/// The bounds of an app's fields (R-APP-1, R-LIM-1, R-KIND-3).
enum AppValidation {
    static func check(name: String?, placeholderTitle: String?, placeholderBody: String?,
                      placeholderTitleLocKey: String? = nil, placeholderBodyLocKey: String? = nil) throws {
        if let name {
            let n = AcceptanceLimits.characters(name)
            guard n >= 1, n <= AcceptanceLimits.maxAppNameCharacters, !name.utf8.contains(0) else {
                throw AcceptanceError.invalid("name", "must be 1 to \(AcceptanceLimits.maxAppNameCharacters) characters, without NUL")
            }
        }
        try SendValidation.clearField(placeholderTitle, "placeholder_title", max: AcceptanceLimits.maxPlaceholderTitleBytes)
        try SendValidation.clearField(placeholderBody, "placeholder_body", max: AcceptanceLimits.maxPlaceholderBodyBytes)
        try SendValidation.clearField(placeholderTitleLocKey, "placeholder_title_loc_key", max: AcceptanceLimits.maxPlaceholderLocKeyBytes)
        try SendValidation.clearField(placeholderBodyLocKey, "placeholder_body_loc_key", max: AcceptanceLimits.maxPlaceholderLocKeyBytes)
    }

    /// `preview_window_seconds` as sent: nil or within `AcceptanceLimits.previewWindowSeconds`, else
    /// `VALIDATION_ERROR` naming the field (the words of `push_app_set_preview`'s refusal).
    static func previewWindow(_ seconds: Int?) throws {
        guard let seconds, !AcceptanceLimits.previewWindowSeconds.contains(seconds) else { return }
        throw AcceptanceError.invalid("preview_window_seconds", "must be 60 to 2419200 seconds (28 days)")
    }

    /// `content_mode` as sent (R-IDS-1): nil, `sealed` or `ids_only`, else `VALIDATION_ERROR`.
    static func contentMode(_ text: String?) throws -> ContentMode? {
        guard let text else { return nil }
        guard let mode = ContentMode(text: text) else { throw AcceptanceError.invalid("content_mode", "must be sealed or ids_only") }
        return mode
    }
}
