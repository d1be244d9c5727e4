import Foundation
import PushCore

/// The device registry the API calls into (R-DEV-1..8): validation in PushCore, invariants in
/// `push_register_device` (sql/0003), so concurrent callers cannot break them.
public final class DeviceRegistry {
    /// The session every call runs on (one thread at a time, like the connection itself).
    public let connection: PGConnection
    /// Active device cap per app and mode (R-DEV-6); nil = PushCore's `DeviceLimits.perApp`.
    public var appLimitOverride: Int64?

    /// A registry on `connection`; `appLimitOverride` replaces the R-DEV-6 cap (tests use small numbers).
    public init(connection: PGConnection, appLimitOverride: Int64? = nil) {
        self.connection = connection
        self.appLimitOverride = appLimitOverride
    }

    /// How many times `register` runs the registration when the server aborts it with a deadlock
    /// (`40P01`) or a serialization failure (`40001`) before giving up and throwing that error.
    public static let maxRegistrationAttempts = 5

    /// Registers (upserts) a validated device for `appID` (R-DEV-2, R-DEV-4..8) in one statement,
    /// with its preview token (issue 24 part 2): a fresh token is made for every call and stored
    /// (as its SHA-256, `push_register_device_v3`) only when the device is new or
    /// `rotatePreviewToken` asks; the result's `previewToken` is that token then, nil otherwise.
    ///
    /// Outside a caller's transaction, a deadlock or serialization failure between concurrent
    /// registrations is retried (up to `maxRegistrationAttempts` runs, 5 to 80 ms apart with jitter),
    /// so it never reaches the caller unless it persists; inside one, the transaction is already
    /// aborted and the error is thrown for the caller to retry the whole block.
    /// - Returns: the device as stored (`device`), whether it was created or reactivated, and the
    ///   user's devices deactivated with `DEVICE_LIMIT` (R-DEV-5).
    /// - Throws: `PushError` `PUSH_DEVICE_LIMIT` (R-DEV-6, HTTP 409 in the API), `NOT_FOUND` for
    ///   an unknown or deleted app, `VALIDATION_ERROR` naming a field out of the bounds of
    ///   `push_register_device_v2` (sql/0006); `PGError` on database failure.
    public func register(appID: UUID, _ d: DeviceRegistration, rotatePreviewToken: Bool = false) throws -> RegistrationResult {
        var generator = SystemRandomNumberGenerator()
        let previewToken = PreviewTokenFormat.generate(using: &generator)
        var raw: [UInt8]? = nil, kid: String? = nil
        if case .set(let r, let k) = d.key { raw = r; kid = k }
        let params: [PGValue?] = [
            .uuid(appID), .text(d.mode.rawValue), .text(d.platform.rawValue), d.token.map(PGValue.text),
            d.subscription.map { .text($0.endpoint) }, d.subscription.map { .bytea($0.p256dh) },
            d.subscription.map { .bytea($0.auth) }, .text(d.userID),
            d.apnsEnvironment.map { .text($0.rawValue) }, .text(d.key.action), raw.map(PGValue.bytea),
            kid.map(PGValue.text), .int64(appLimitOverride ?? DeviceLimits.perApp(d.mode)), .int(DeviceLimits.perUser),
            .bytea(try PreviewTokenFormat.hash(previewToken)), .bool(rotatePreviewToken),
        ]
        var attempt = 1
        while true {
            do {
                let r = try connection.exec(RegistryQueries.registerDevice, params)
                let device = StoredDevice(
                    id: try r.uuid(0, "device_id"), appID: try r.uuid(0, "app_id"), platform: try r.string(0, "platform"),
                    userID: try r.string(0, "user_id"), apnsEnvironment: try r.decode(0, "apns_environment"),
                    active: try r.bool(0, "active"), encryptionKeyID: try r.decode(0, "kid"),
                    createdAt: try r.date(0, "created_at"), lastRegisteredAt: try r.date(0, "last_registered_at"))
                return RegistrationResult(deviceID: device.id, created: try r.bool(0, "created"),
                                          reactivated: try r.bool(0, "reactivated"),
                                          evicted: try PGArrayText.uuids(r.string(0, "evicted")), device: device,
                                          previewToken: try r.bool(0, "preview_token_set") ? previewToken : nil)
            } catch let e as PGError {
                if let domain = Self.domainError(e) { throw domain }
                guard Self.isConcurrencyConflict(e), attempt < Self.maxRegistrationAttempts,
                      !connection.isInTransaction else { throw e }
                Self.pause(beforeAttempt: attempt + 1)
                attempt += 1
            }
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

    /// `40001` serialization failure or `40P01` deadlock: the statement was rolled back whole and
    /// may run again.
    static func isConcurrencyConflict(_ e: PGError) -> Bool {
        e.sqlState == "40001" || e.sqlState == "40P01"
    }

    /// Sleeps before retry `attempt` (2, 3, ...): 5 ms doubled per retry, capped at 80 ms, plus up
    /// to 50 % jitter so the parties of a deadlock do not meet again.
    static func pause(beforeAttempt attempt: Int) {
        let base = min(5.0 * Double(1 << min(attempt - 2, 4)), 80.0)
        Thread.sleep(forTimeInterval: (base + Double.random(in: 0...(base / 2))) / 1000)
    }

    /// Maps `CODE: message` errors raised by the SQL functions to `PushError` (see `StoreErrors`).
    public static func domainError(_ e: PGError) -> PushError? { StoreErrors.domainError(e) }
}
