import Foundation
import PushCore

/// A push app as stored (R-APP-1).
public struct PushApp: Sendable, Codable, Equatable {
    public var id: UUID
    public var name: String
    public var requireEncryption: Bool
    public var placeholderTitle: String
    public var placeholderBody: String
    public var deleted: Bool
}

/// Push apps: create, update (policy and placeholders), get, delete (soft).
public final class AppStore {
    public let connection: PGConnection

    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Creates an app; nil arguments take the defaults of R-APP-1. `accountID` owns it (R-API-1);
    /// nil: the default account (sql/0008). - Throws: `PushError` `NOT_FOUND` for an unknown account.
    public func appCreate(name: String, requireEncryption: Bool? = nil, placeholderTitle: String? = nil,
                          placeholderBody: String? = nil, accountID: UUID? = nil) throws -> PushApp {
        let r = try connection.exec(RegistryQueries.appCreate, [
            .text(name), requireEncryption.map(PGValue.bool), placeholderTitle.map(PGValue.text),
            placeholderBody.map(PGValue.text), accountID.map(PGValue.uuid),
        ])
        guard r.rowCount == 1 else { throw PushError(.notFound, "no such account") }
        return try Self.decode(r)
    }

    /// Updates the given fields; nil leaves a field unchanged. Takes effect for notifications
    /// already queued too (R-APP-2: the policy is read at send time). Turning `require_encryption`
    /// off records a `push_app.encryption_disabled` event (live mode) in the same statement.
    /// Returns nil for an unknown app.
    public func appUpdate(id: UUID, requireEncryption: Bool? = nil, placeholderTitle: String? = nil,
                          placeholderBody: String? = nil, name: String? = nil) throws -> PushApp? {
        let r = try connection.exec(RegistryQueries.appUpdate, [
            .uuid(id), requireEncryption.map(PGValue.bool), placeholderTitle.map(PGValue.text),
            placeholderBody.map(PGValue.text), name.map(PGValue.text),
        ])
        return r.rowCount == 0 ? nil : try Self.decode(r)
    }

    /// The app, or nil.
    public func appGet(id: UUID) throws -> PushApp? {
        let r = try connection.exec(RegistryQueries.appGet, [.uuid(id)])
        return r.rowCount == 0 ? nil : try Self.decode(r)
    }

    /// Soft-deletes the app: its queued notifications end NO_DEVICES with DEVICE_GONE refunds.
    @discardableResult
    public func appDelete(id: UUID) throws -> Bool {
        try connection.exec(RegistryQueries.appDelete, [.uuid(id)]).affectedRowCount == 1
    }

    private static func decode(_ r: PGResult) throws -> PushApp {
        PushApp(id: try r.uuid(0, "id"), name: try r.string(0, "name"),
                requireEncryption: try r.bool(0, "require_encryption"),
                placeholderTitle: try r.string(0, "placeholder_title"),
                placeholderBody: try r.string(0, "placeholder_body"), deleted: try r.bool(0, "deleted"))
    }
}
