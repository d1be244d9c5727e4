import Foundation
import PushCore
import PushCrypto
import PushStore

/// The writes of the API, through the product's acceptance path (R-API-6): device registration
/// and deletion, notifications sent and cancelled, apps created and changed. Each call takes the
/// API's typed body and the key's account and mode, and throws `APIError` for a refusal.
struct AcceptanceBridge {
    let connection: PGConnection
    let mode: Mode

    /// Registers (upserts) a device (R-DEV-1..8); the caller checked that the app is the key's.
    func register(appID: UUID, _ b: DeviceBody) throws -> RegistrationResult {
        let key: String?? = switch b.encryptionPublicKey {
        case .absent: .none
        case .null: .some(nil)
        case .value(let text): .some(text)
        }
        do {
            let reg = try DeviceRegistration.validate(
                mode: mode.rawValue, platform: b.platform, token: b.token, userID: b.userID,
                apnsEnvironment: b.apnsEnvironment, encryptionPublicKey: key,
                subscriptionEndpoint: b.subscription?.endpoint, subscriptionP256dh: b.subscription?.p256dh,
                subscriptionAuth: b.subscription?.auth)
            return try DeviceRegistry(connection: connection).register(appID: appID, reg)
        } catch let e as PushError { throw Self.apiError(e) }
    }

    /// Deactivates a device (R-DEV-7); false when it was not active.
    func deleteDevice(appID: UUID, deviceID: UUID) throws -> Bool {
        try DeviceRegistry(connection: connection).delete(appID: appID, mode: mode, deviceID: deviceID)
    }

    /// Accepts a notification: validation, the exact size rule against the targeted devices
    /// (R-SEND-7), then `push_enqueue`. Returns its id and whether it was created (false: an
    /// idempotent replay).
    func send(appID: UUID, _ b: NotificationBody, deviceIDs: [UUID]?, idempotencyKey: String?) throws -> (id: UUID, created: Bool) {
        do {
            var q = EnqueueRequest(appID: appID, mode: mode.rawValue, userIDs: b.userIDs)
            guard !q.userIDs.isEmpty else { throw APIError.validation("user_ids must name at least one user", field: "user_ids") }
            if let bad = q.userIDs.first(where: { $0.isEmpty || $0.count > 255 }) {
                throw APIError.validation("user_ids: each must be 1 to 255 characters, got \(bad.count)", field: "user_ids")
            }
            q.deviceIDs = deviceIDs
            q.title = b.title; q.body = b.body; q.data = b.data; q.badge = b.badge; q.sound = b.sound
            q.threadID = b.threadID; q.collapseKey = b.collapseKey; q.priority = b.priority; q.sendAt = b.sendAt
            q.ttlSeconds = b.ttl; q.idempotencyKey = idempotencyKey; q.smsPhone = b.smsPhone; q.smsText = b.smsText
            if let p = q.priority, Priority(rawValue: p) == nil {
                throw APIError.validation("priority must be high or normal", field: "priority")
            }
            let content = NotificationContent(title: q.title, body: q.body, data: try q.data.map(JSONParser.parseDataObject),
                                              badge: q.badge, sound: q.sound, threadId: q.threadID, collapseKey: q.collapseKey,
                                              priority: Priority(rawValue: q.priority ?? "high") ?? .high)
            try content.validate()
            guard let appRow = try AppStore(connection: connection).appGet(id: appID), !appRow.deleted else {
                throw APIError.notFound("no such push app", field: "app_id")
            }
            let store = NotificationStore(connection: connection)
            let planner = DeliveryPlanner(content: content,
                                          placeholders: AppPlaceholders(title: appRow.placeholderTitle, body: appRow.placeholderBody),
                                          requireEncryption: appRow.requireEncryption, mode: mode)
            let snapshots = try store.audiencePreview(q).map {
                DeviceSnapshot(platform: $0.platform, token: $0.address,
                               apnsEnvironment: $0.apnsEnvironment.flatMap(APNsEnvironment.init(rawValue:)),
                               publicKey: $0.publicKey, kid: $0.kid)
            }
            if let worst = planner.acceptanceSizeCheck(devices: snapshots), let error = worst.error {
                var e = Self.apiError(error)
                e.bytesToCut = worst.bytesToCut
                throw e
            }
            return try store.enqueue(q)
        } catch let e as PushError { throw Self.apiError(e) }
    }

    /// Cancels a notification whose send time has not come (refunded); false when too late.
    func cancel(id: UUID) throws -> Bool {
        try NotificationStore(connection: connection).cancel(id: id)
    }

    func createApp(accountID: UUID, _ b: AppBody) throws -> PushApp {
        try AppStore(connection: connection).appCreate(name: b.name ?? "", requireEncryption: b.requireEncryption,
                                                       placeholderTitle: b.placeholderTitle,
                                                       placeholderBody: b.placeholderBody, accountID: accountID)
    }

    func updateApp(id: UUID, _ b: AppBody) throws -> PushApp? {
        try AppStore(connection: connection).appUpdate(id: id, requireEncryption: b.requireEncryption,
                                                       placeholderTitle: b.placeholderTitle,
                                                       placeholderBody: b.placeholderBody, name: b.name)
    }

    /// A product refusal as the API's error: the status of its code, `field` from the message's
    /// leading `field:` when it names one.
    static func apiError(_ e: PushError) -> APIError {
        var field: String?
        if let colon = e.message.firstIndex(of: ":") {
            let word = e.message[..<colon]
            if !word.isEmpty, word.count <= 64, word.allSatisfy({ $0.isLowercase || $0 == "_" || $0 == "." }) { field = String(word) }
        }
        switch e.code {
        case .validationError: return .validation(e.message, field: field)
        case .invalidData: return .validation(e.message, field: "data")
        case .pushPayloadTooLarge: return APIError(status: 422, code: e.code.rawValue, message: e.message)
        case .pushDeviceLimit: return APIError(status: 409, code: e.code.rawValue, message: e.message)
        case .notFound: return .notFound(e.message, field: field)
        default: return APIError(status: 422, code: e.code.rawValue, message: e.message, field: field)
        }
    }
}
