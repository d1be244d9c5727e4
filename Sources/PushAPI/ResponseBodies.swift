import Foundation
import PushCore
import PushStore
import PushWorker

/// The API's JSON answers (snake_case as in the seeds, ids prefixed by R-API-4, times RFC 3339
/// UTC with milliseconds). Members come in a fixed order. Pure.
enum ResponseBodies {
    static func time(_ date: Date?) -> JSONValue { date.map { .string(RFC3339.utcMilliseconds($0)) } ?? .null }
    static func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
    static func bool(_ b: Bool?) -> JSONValue { b.map(JSONValue.bool) ?? .null }
    static func int(_ n: Int) -> JSONValue { .number(String(n)) }

    static func device(_ d: StoredDevice) -> JSONValue {
        .object(JSONObject([
            .init("id", .string(PrefixedID.format(.device, d.id))), .init("object", .string("push_device")),
            .init("app_id", .string(PrefixedID.format(.app, d.appID))), .init("platform", .string(d.platform)),
            .init("user_id", .string(d.userID)), .init("apns_environment", text(d.apnsEnvironment)),
            .init("active", .bool(d.active)), .init("encryption_key_id", text(d.encryptionKeyID)),
            .init("created_at", time(d.createdAt)), .init("last_registered_at", time(d.lastRegisteredAt)),
        ]))
    }

    static func app(_ a: PushApp) -> JSONValue {
        .object(JSONObject([
            .init("id", .string(PrefixedID.format(.app, a.id))), .init("object", .string("push_app")),
            .init("name", .string(a.name)), .init("require_encryption", .bool(a.requireEncryption)),
            .init("placeholder_title", .string(a.placeholderTitle)), .init("placeholder_body", .string(a.placeholderBody)),
            .init("placeholder_title_loc_key", text(a.placeholderTitleLocKey)),
            .init("placeholder_body_loc_key", text(a.placeholderBodyLocKey)),
            .init("confirm_deliveries", .bool(a.confirmDeliveries)),
            .init("preview_window_seconds", int(a.previewWindowSeconds)),
            .init("content_mode", .string(a.contentMode.rawValue)), .init("created_at", time(a.createdAt)),
        ]))
    }

    static func notification(_ n: APINotification) -> JSONValue {
        var members: [JSONObject.Member] = [
            .init("id", .string(PrefixedID.format(.notification, n.id))), .init("object", .string("push_notification")),
            .init("app_id", .string(PrefixedID.format(.app, n.appID))), .init("status", .string(n.status)),
            .init("encrypted", bool(n.encrypted)), .init("content_mode", text(n.contentMode?.rawValue)),
            .init("device_count", int(n.deviceCount)),
            .init("confirmed_count", int(n.confirmedCount)), .init("revoked", .bool(n.revoked)),
            .init("audience", .string(n.audience)), .init("user_count", n.userCount.map(int) ?? .null),
            .init("platforms", n.platforms.map { .array($0.map(JSONValue.string)) } ?? .null),
            .init("error_code", text(n.errorCode)), .init("send_at", time(n.sendAt)),
            .init("created_at", time(n.acceptedAt)), .init("finished_at", time(n.finishedAt)),
            .init("sms", n.sms.map(sms) ?? .null),
        ]
        if let deliveries = n.deliveries {
            members.append(.init("deliveries", .array(deliveries.map { d in
                .object(JSONObject([
                    .init("device_id", .string(PrefixedID.format(.device, d.deviceID))), .init("status", .string(d.status)),
                    .init("encrypted", .bool(d.encrypted)), .init("error_code", text(d.errorCode)),
                    .init("attempts", int(d.attempts)), .init("confirmed_at", time(d.confirmedAt)),
                ]))
            })))
        }
        return .object(JSONObject(members))
    }

    /// A notification's SMS fallback (R-SMS-1): what `notifications show` prints, never the phone.
    /// `status` is `pending`, `sending`, `queued` (the provider took it), `failed` or `unknown`;
    /// `request` is test mode's form body (until erased).
    static func sms(_ s: SMSReport) -> JSONValue {
        .object(JSONObject([
            .init("status", .string(s.status)), .init("provider", text(s.provider)),
            .init("provider_message_id", text(s.providerMessageID)), .init("error_code", text(s.errorCode)),
            .init("provider_error_code", text(s.providerErrorCode)), .init("error_detail", text(s.errorDetail)),
            .init("attempts", int(s.attempts)), .init("segments", s.segments.map(int) ?? .null),
            .init("encoding", text(s.encoding)), .init("request", text(s.request)),
            .init("queued_at", time(s.queuedAt)), .init("sent_at", time(s.sentAt)), .init("finished_at", time(s.finishedAt)),
            .init("erased", .bool(s.erased)),
        ]))
    }

    /// A webhook endpoint; `secret` only in the answers of creation and rotation (shown once).
    static func webhookEndpoint(_ e: WebhookEndpoint, secret: WebhookSecret? = nil) -> JSONValue {
        var members: [JSONObject.Member] = [
            .init("id", .string(PrefixedID.format(.webhookEndpoint, e.id))), .init("object", .string("push_webhook_endpoint")),
            .init("app_id", .string(PrefixedID.format(.app, e.appID))), .init("mode", .string(e.mode.rawValue)),
            .init("url", .string(e.url)), .init("event_types", .array(e.eventTypes.map(JSONValue.string))),
            .init("enabled", .bool(e.enabled)), .init("disabled_reason", text(e.disabledReason)),
            .init("disabled_at", time(e.disabledAt)), .init("failing_since", time(e.failingSince)),
            .init("last_success_at", time(e.lastSuccessAt)), .init("last_failure_at", time(e.lastFailureAt)),
            .init("previous_secret_expires_at", time(e.previousSecretExpiresAt)), .init("pending", int(e.pending)),
            .init("created_at", time(e.createdAt)), .init("updated_at", time(e.updatedAt)),
        ]
        if let secret { members.append(.init("secret", .string(secret.text))) }
        return .object(JSONObject(members))
    }

    static func list<T>(_ page: APIPage<T>, _ encode: (T) -> JSONValue) -> JSONValue {
        .object(JSONObject([
            .init("object", .string("list")), .init("data", .array(page.items.map(encode))),
            .init("has_more", .bool(page.hasMore)),
        ]))
    }
}
