import Foundation
import PushAcceptance
import PushStore

/// Prints results for people (text) or scripts (`--json`: one JSON document on stdout). Ids are
/// typed by their wrappers (apps, devices and notifications as `papp_`/`pdev_`/`pnot_` ids, R-API-4, by
/// `PrefixedUUID`; other UUIDs lower case, `LowercaseUUID`), never by rewriting the text; booleans and numbers are JSON
/// booleans and numbers in every command.
struct Output {
    let json: Bool

    func emit<T: Encodable>(_ value: T, text: () -> String) {
        if json {
            if let data = try? Self.encoder.encode(value) {
                FileHandle.standardOutput.write(data)
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        } else {
            print(text())
        }
    }

    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .iso8601
        e.keyEncodingStrategy = .convertToSnakeCase
        return e
    }
}

/// `{"key": "value"}` for small answers whose values are all strings (ids, names).
struct KV: Encodable {
    var fields: [String: String]
    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(fields)
    }
}

/// `pushfleet migrate --json`: the versions applied and the schema version, as numbers.
struct MigrateOutput: Encodable {
    var applied: [Int]
    var version: Int
}

/// `pushfleet jobs retry --json`.
struct RetryOutput: Encodable {
    var retried: Int64
}

/// `pushfleet apps credentials rotate-key --json`.
struct ResealOutput: Encodable {
    var resealed: Int
    /// Webhook endpoints whose signing secrets were re-sealed too.
    var webhookEndpointsResealed: Int
}

/// `pushfleet send --json`: `created` is a boolean (true: a new notification; false: a replay of
/// the idempotency key answered with the first one, `replayed` true).
struct SendOutput: Encodable {
    @PrefixedUUID<NotificationIDKind> var notificationID: UUID
    var created: Bool
    var replayed: Bool
    /// The SMS fallback's segment count and encoding (R-SMS-1), when it has one.
    var smsSegments: Int?
    var smsEncoding: String?
}

/// `pushfleet devices register --json`: the device as stored, and what the registration did.
struct RegisterOutput: Encodable {
    @PrefixedUUID<DeviceIDKind> var deviceID: UUID
    var created: Bool
    var reactivated: Bool
    @PrefixedUUIDs<DeviceIDKind> var evicted: [UUID]
    var device: StoredDevice

    init(_ r: DeviceRegistrationResult) {
        deviceID = r.device.id
        created = r.created
        reactivated = r.reactivated
        evicted = r.evicted
        device = r.device
    }
}

func iso(_ d: Date?) -> String {
    guard let d else { return "-" }
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.string(from: d)
}
