import Foundation
import PushCore

/// What a registration did (R-DEV-2, R-DEV-5, R-DEV-7).
public struct RegistrationResult: Sendable, Equatable, Codable {
    public var deviceID: UUID
    /// A new device (new token or endpoint).
    public var created: Bool
    /// A deactivated device registered again (R-DEV-7).
    public var reactivated: Bool
    /// Devices of the same user deactivated with DEVICE_LIMIT (R-DEV-5).
    public var evicted: [UUID]
}

/// A device as the API shows it: never its key, only `encryption_key_id` (R-DEV-3).
public struct DeviceInfo: Sendable, Codable, Equatable {
    public var id: UUID
    public var platform: String
    public var token: String?
    public var endpoint: String?
    public var userID: String
    public var apnsEnvironment: String?
    /// The kid of the device's key, nil when it has none.
    public var encryptionKeyID: String?
    public var active: Bool
    public var lastRegisteredAt: Date
    public var deactivatedAt: Date?
    public var deactivationReason: String?
}

/// The device registry the API calls into (R-DEV-1..8): validation in PushCore, invariants in
/// `push_register_device` (sql/0003), so concurrent callers cannot break them.
public final class DeviceRegistry {
    public let connection: PGConnection
    /// Active device cap per app and mode (R-DEV-6); nil = 1,000,000 live, 1,000 test.
    public var appLimitOverride: Int64?

    public init(connection: PGConnection, appLimitOverride: Int64? = nil) {
        self.connection = connection
        self.appLimitOverride = appLimitOverride
    }

    /// Registers (upserts) a validated device for `appID`. Throws `PushError` with
    /// `PUSH_DEVICE_LIMIT` (R-DEV-6, HTTP 409 in the API), `NOT_FOUND` for an unknown app, or
    /// `PGError` on database failure.
    public func register(appID: UUID, _ d: DeviceRegistration) throws -> RegistrationResult {
        var raw: [UInt8]? = nil, kid: String? = nil
        if case .set(let r, let k) = d.key { raw = r; kid = k }
        do {
            let r = try connection.exec(RegistryQueries.registerDevice, [
                .uuid(appID), .text(d.mode.rawValue), .text(d.platform.rawValue), d.token.map(PGValue.text),
                d.subscription.map { .text($0.endpoint) }, d.subscription.map { .bytea($0.p256dh) },
                d.subscription.map { .bytea($0.auth) }, .text(d.userID),
                d.apnsEnvironment.map { .text($0.rawValue) }, .text(d.key.action), raw.map(PGValue.bytea),
                kid.map(PGValue.text), appLimitOverride.map(PGValue.int64), nil,
            ])
            return RegistrationResult(deviceID: try r.uuid(0, "device_id"), created: try r.bool(0, "created"),
                                      reactivated: try r.bool(0, "reactivated"),
                                      evicted: try QueueStore.uuidArray(r.string(0, "evicted")))
        } catch let e as PGError {
            throw Self.domainError(e) ?? e
        }
    }

    /// Deletes (deactivates) a device (R-DEV-7). False when no active device has that id.
    public func delete(appID: UUID, mode: Mode, deviceID: UUID) throws -> Bool {
        try connection.exec(RegistryQueries.deleteDevice, [.uuid(appID), .text(mode.rawValue), .uuid(deviceID)])
            .bool(0, "deleted")
    }

    /// Devices of one app and mode (R-MODE-1), optionally one user's and only active ones; never keys.
    public func list(appID: UUID, mode: Mode, userID: String? = nil, active: Bool? = nil,
                     limit: Int = 1000) throws -> [DeviceInfo] {
        let r = try connection.exec(RegistryQueries.listDevices, [
            .uuid(appID), .text(mode.rawValue), userID.map(PGValue.text), active.map(PGValue.bool), .int(limit),
        ])
        return try r.rows.map { i in
            DeviceInfo(id: try r.uuid(i, "id"), platform: try r.string(i, "platform"), token: try r.decode(i, "token"),
                       endpoint: try r.decode(i, "endpoint"), userID: try r.string(i, "user_id"),
                       apnsEnvironment: try r.decode(i, "apns_environment"), encryptionKeyID: try r.decode(i, "kid"),
                       active: try r.bool(i, "active"), lastRegisteredAt: try r.date(i, "last_registered_at"),
                       deactivatedAt: try r.decode(i, "deactivated_at"),
                       deactivationReason: try r.decode(i, "deactivation_reason"))
        }
    }

    /// Maps `CODE: message` errors raised by the SQL functions to `PushError`.
    public static func domainError(_ e: PGError) -> PushError? {
        guard e.sqlState == "P0001", let colon = e.message.firstIndex(of: ":") else { return nil }
        let word = String(e.message[..<colon]).trimmingCharacters(in: .whitespaces)
        let rest = String(e.message[e.message.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        guard let code = ErrorCode(rawValue: word) else { return nil }
        return PushError(code, rest)
    }
}
