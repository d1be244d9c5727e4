import struct Foundation.Date
import struct Foundation.UUID

/// The body of a webhook (R-HOOK-1): `{"id", "type", "created_at", "data"}`, compact JSON with
/// prefixed ids (R-API-4). `data` is built from an allow-list per type, never by copying the
/// stored event, so nothing else can leave (no notification content, no device token):
///
/// | type | `data` members, in order |
/// |---|---|
/// | `push_device.deactivated` | `app_id`, `device_id`, `user_id`, `mode`, `reason`, `notification_id` (null unless a notification's delivery caused it) |
/// | `push_app.credentials_invalid` | `app_id`, `mode` (`live`), `kind` (`apns`, `fcm`, `webpush`), `reason` (the provider's) |
/// | `push_app.encryption_disabled` | `app_id`, `mode` (`live`) |
/// | `push_notification.finished` | `app_id`, `notification_id`, `mode`, `status`, `device_count`, `error_code` (null when none), `sms` (`queued` when the SMS fallback was queued, else null) |
/// | `push_notification.sms_finished` | `app_id`, `notification_id`, `mode`, `status` (`queued`, `failed`, `unknown`), `provider`, `provider_message_id`, `error_code`, `provider_error_code`, `segments` (each null when none; never the phone or the text) |
///
/// The same inputs give the same bytes on every attempt (the signature is over them).
public enum WebhookBody {
    /// One stored event, as `push_events` holds it.
    public struct Event: Sendable, Equatable {
        /// `push_events.public_id`: the body's `id` (`pevt_...`).
        public var publicID: UUID
        /// `push_events.type`.
        public var type: String
        /// `push_events.created_at`: the body's `created_at`.
        public var createdAt: Date
        /// `push_events.app_id`.
        public var appID: UUID
        /// `push_events.payload` as JSON text (written by the SQL that recorded the change).
        public var payload: String

        /// Memberwise initializer.
        public init(publicID: UUID, type: String, createdAt: Date, appID: UUID, payload: String) {
            self.publicID = publicID
            self.type = type
            self.createdAt = createdAt
            self.appID = appID
            self.payload = payload
        }
    }

    /// Why an event has no body.
    public enum Failure: Error, Equatable, Sendable {
        /// A type this release does not know (a newer release recorded it): the event waits.
        case unknownType(String)
        /// The stored payload lacks a member the type needs, or is not a JSON object (a bug).
        case malformed(String)
    }

    /// The body bytes of `event`.
    /// - Throws: `Failure`.
    public static func bytes(_ event: Event) throws -> [UInt8] {
        guard let type = WebhookEventType(rawValue: event.type) else { throw Failure.unknownType(event.type) }
        guard case .object(let p)? = try? JSONParser.parse(event.payload) else {
            throw Failure.malformed("payload is not a JSON object")
        }
        let app = JSONValue.string(PrefixedID.format(.app, event.appID))
        var data: [JSONObject.Member]
        switch type {
        case .pushDeviceDeactivated:
            data = [.init("app_id", app),
                    .init("device_id", try id(p, "device_id", .device)),
                    .init("user_id", try string(p, "user_id")),
                    .init("mode", try string(p, "mode")),
                    .init("reason", try string(p, "reason")),
                    .init("notification_id", try optionalID(p, "notification_id", .notification))]
        case .pushAppCredentialsInvalid:
            data = [.init("app_id", app), .init("mode", .string(Mode.live.rawValue)),
                    .init("kind", try string(p, "kind")), .init("reason", try string(p, "reason"))]
        case .pushAppEncryptionDisabled:
            data = [.init("app_id", app), .init("mode", .string(Mode.live.rawValue))]
        case .pushNotificationFinished:
            guard case .number(let count)? = p["device_count"] else { throw Failure.malformed("device_count") }
            data = [.init("app_id", app),
                    .init("notification_id", try id(p, "notification_id", .notification)),
                    .init("mode", try string(p, "mode")),
                    .init("status", try string(p, "status")),
                    .init("device_count", .number(count)),
                    .init("error_code", try optionalString(p, "error_code")),
                    .init("sms", try optionalString(p, "sms"))]
        case .pushNotificationSMSFinished:
            data = [.init("app_id", app),
                    .init("notification_id", try id(p, "notification_id", .notification)),
                    .init("mode", try string(p, "mode")),
                    .init("status", try string(p, "status")),
                    .init("provider", try optionalString(p, "provider")),
                    .init("provider_message_id", try optionalString(p, "provider_message_id")),
                    .init("error_code", try optionalString(p, "error_code")),
                    .init("provider_error_code", try optionalString(p, "provider_error_code")),
                    .init("segments", try optionalNumber(p, "segments"))]
        }
        let body = JSONObject([
            .init("id", .string(PrefixedID.format(.event, event.publicID))),
            .init("type", .string(type.rawValue)),
            .init("created_at", .string(RFC3339.utcMilliseconds(event.createdAt))),
            .init("data", .object(JSONObject(data))),
        ])
        return JSONWriter.bytes(.object(body))
    }

    // MARK: - Members

    private static func string(_ p: JSONObject, _ key: String) throws -> JSONValue {
        guard case .string(let s)? = p[key] else { throw Failure.malformed(key) }
        return .string(s)
    }

    private static func optionalString(_ p: JSONObject, _ key: String) throws -> JSONValue {
        switch p[key] {
        case nil, .null?: return .null
        case .string(let s)?: return .string(s)
        default: throw Failure.malformed(key)
        }
    }

    private static func optionalNumber(_ p: JSONObject, _ key: String) throws -> JSONValue {
        switch p[key] {
        case nil, .null?: return .null
        case .number(let n)?: return .number(n)
        default: throw Failure.malformed(key)
        }
    }

    private static func id(_ p: JSONObject, _ key: String, _ kind: IDKind) throws -> JSONValue {
        guard case .string(let s)? = p[key], let u = UUID(uuidString: s) else { throw Failure.malformed(key) }
        return .string(PrefixedID.format(kind, u))
    }

    private static func optionalID(_ p: JSONObject, _ key: String, _ kind: IDKind) throws -> JSONValue {
        if p[key] == nil || p[key] == .null { return .null }
        return try id(p, key, kind)
    }
}
