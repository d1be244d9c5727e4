import Foundation
import PushAcceptance
import PushCore
import PushStore

/// The API's typed bodies as the acceptance service's requests (R-API-6: the API decodes and
/// answers; every rule of what is accepted is `AcceptanceService`'s), and its refusals as the
/// API's errors.
enum AcceptanceMapping {
    static func registration(_ b: DeviceBody, appID: UUID, mode: Mode) -> DeviceRegistrationRequest {
        let key: DeviceRegistrationRequest.EncryptionKeyChange
        switch b.encryptionPublicKey {
        case .absent: key = .keep
        case .null: key = .remove
        case .value(let text): key = .set(text)
        }
        return DeviceRegistrationRequest(
            appID: appID, mode: mode, platform: b.platform, token: b.token,
            subscription: b.subscription.map { .init(endpoint: $0.endpoint, p256dh: $0.p256dh, auth: $0.auth) },
            userID: b.userID, apnsEnvironment: b.apnsEnvironment, encryptionKey: key)
    }

    static func send(_ b: NotificationBody, appID: UUID, mode: Mode, deviceIDs: [UUID]?, idempotencyKey: String?) -> SendRequest {
        var r = SendRequest(appID: appID, mode: mode, userIDs: b.userIDs)
        r.deviceIDs = deviceIDs
        r.title = b.title
        r.body = b.body
        r.data = b.data
        r.badge = b.badge
        r.sound = b.sound
        r.threadID = b.threadID
        r.collapseKey = b.collapseKey
        r.priority = b.priority
        r.sendAt = b.sendAt
        r.ttlSeconds = b.ttl
        r.idempotencyKey = idempotencyKey
        if let phone = b.smsPhone, let text = b.smsText { r.smsFallback = .init(phone: phone, text: text) }
        return r
    }

    /// A refusal as the API answers it: 422 `VALIDATION_ERROR` and `PUSH_PAYLOAD_TOO_LARGE` (with
    /// `bytes_to_cut`), 404 `NOT_FOUND`, 409 `PUSH_DEVICE_LIMIT`, `IDEMPOTENCY_KEY_REUSED`,
    /// `NOT_CANCELLABLE`. The idempotency key, a header here, is named `Idempotency-Key`.
    static func apiError(_ e: AcceptanceError) -> APIError {
        let field = e.field == "idempotency_key" ? "Idempotency-Key" : e.field
        let status: Int
        switch e.code {
        case .notFound: status = 404
        case .pushDeviceLimit, .idempotencyKeyReused, .notCancellable: status = 409
        default: status = 422
        }
        return APIError(status: status, code: e.code.rawValue, message: e.message, field: field, bytesToCut: e.bytesToCut)
    }

    /// A store's own refusal (`PushError`), as the acceptance service would give it.
    static func apiError(_ e: PushError) -> APIError { apiError(AcceptanceError(e)) }
}

extension APIDevice {
    /// The device as a registration stored it.
    init(_ d: StoredDevice) {
        self.init(id: d.id, appID: d.appID, platform: d.platform, userID: d.userID, apnsEnvironment: d.apnsEnvironment,
                  active: d.active, encryptionKeyID: d.encryptionKeyID, createdAt: d.createdAt,
                  lastRegisteredAt: d.lastRegisteredAt)
    }
}

extension APIApp {
    /// The app as the acceptance service answered it.
    init(_ a: PushApp) {
        self.init(id: a.id, name: a.name, requireEncryption: a.requireEncryption, placeholderTitle: a.placeholderTitle,
                  placeholderBody: a.placeholderBody, createdAt: a.createdAt)
    }
}
