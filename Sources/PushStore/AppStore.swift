import Foundation
import PushCore

/// A push app as stored (R-APP-1).
public struct PushApp: Sendable, Codable, Equatable {
    @PrefixedUUID<AppIDKind> public var id: UUID
    public var name: String
    public var requireEncryption: Bool
    public var placeholderTitle: String
    public var placeholderBody: String
    /// `placeholder_title_loc_key` (R-KIND-3): sent as `title-loc-key` instead of the title when set.
    public var placeholderTitleLocKey: String?
    /// `placeholder_body_loc_key` (R-KIND-3): sent as `loc-key` instead of the body when set.
    public var placeholderBodyLocKey: String?
    public var deleted: Bool
    /// `confirm_deliveries` (R-IDS-4): a device's first preview fetch or receipt marks its delivery
    /// confirmed. Off by default (the operator then learns when and from where a device showed it).
    public var confirmDeliveries: Bool = false
    /// `preview_window_seconds` (issue 24 part 4): how long an `ids_only` notification's content is
    /// kept for the device's fetch after its send time, never past its expiry. 72 hours by default.
    public var previewWindowSeconds: Int = AppPreviewSettings.defaultWindowSeconds
    /// When the app was created.
    public var createdAt: Date
    /// When its fields last changed.
    public var updatedAt: Date
    /// `content_mode` (R-IDS-1, sql/0019): what its iOS and Android pushes carry, read at each
    /// notification's send time.
    public var contentMode: ContentMode = .sealed
}

/// An app's preview settings (issue 24 parts 4 and 5) as a create or update gives them; nil leaves
/// one unchanged (or at its default). Bounds are `push_app_set_preview`'s (sql/0020).
public struct AppPreviewSettings: Sendable, Equatable {
    /// The default preview window: 72 hours.
    public static let defaultWindowSeconds = 259_200
    /// `confirm_deliveries`.
    public var confirmDeliveries: Bool?
    /// `preview_window_seconds`, 60 to 2,419,200.
    public var windowSeconds: Int?
    /// Settings; both nil by default.
    public init(confirmDeliveries: Bool? = nil, windowSeconds: Int? = nil) {
        self.confirmDeliveries = confirmDeliveries
        self.windowSeconds = windowSeconds
    }
}

/// Push apps: create, update (policy and placeholders), get, delete (soft).
public final class AppStore {
    public let connection: PGConnection

    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Creates an app through `push_app_create` (sql/0008); nil arguments take the defaults of R-APP-1
    /// (no placeholder loc keys). `accountID` owns it (R-API-1); nil: the default account (sql/0008).
    /// Placeholder loc keys (R-KIND-3) and the content mode (R-IDS-1) are set by `push_app_update`
    /// in the same transaction (sql/0011 and sql/0019 leave `push_app_create` as it is).
    /// - Throws: `PushError` `VALIDATION_ERROR` naming the field out of its bounds (R-LIM-1),
    ///   `NOT_FOUND` for an unknown account; `PGError` on database failure.
    public func appCreate(name: String, requireEncryption: Bool? = nil, placeholderTitle: String? = nil,
                          placeholderBody: String? = nil, placeholderTitleLocKey: String? = nil,
                          placeholderBodyLocKey: String? = nil, accountID: UUID? = nil,
                          preview: AppPreviewSettings = AppPreviewSettings(),
                          contentMode: ContentMode? = nil) throws -> PushApp {
        func create(_ c: PGConnection) throws -> PushApp {
            try Self.decode(c.exec(RegistryQueries.appCreate, [
                .text(name), requireEncryption.map(PGValue.bool), placeholderTitle.map(PGValue.text),
                placeholderBody.map(PGValue.text), accountID.map(PGValue.uuid),
            ]), 0)
        }
        // The app as `push_app_set_preview` answers it (sql/0020): every column, the preview
        // settings included, in the creating transaction.
        return try StoreErrors.mapped {
            try connection.transaction { c in
                let app = try create(c)
                if placeholderTitleLocKey != nil || placeholderBodyLocKey != nil || contentMode != nil {
                    _ = try c.exec(RegistryQueries.appUpdate, [
                        .uuid(app.id), nil, nil, nil, nil, placeholderTitleLocKey.map(PGValue.text),
                        placeholderBodyLocKey.map(PGValue.text), contentMode.map { PGValue.text($0.rawValue) },
                    ])
                }
                return try Self.setPreview(c, id: app.id, preview) ?? app
            }
        }
    }

    /// The app's `require_encryption` and `content_mode`, its row locked until the transaction
    /// ends; nil for an unknown or deleted app (primary key).
    public func lockedPolicy(id: UUID) throws -> (requireEncryption: Bool, contentMode: ContentMode)? {
        let r = try connection.exec(RegistryQueries.appLockPolicy, [.uuid(id)])
        return r.rowCount == 0 ? nil : (try r.bool(0, "require_encryption"), try r.decode(0, "content_mode"))
    }

    /// Updates the given fields through `push_app_update` (sql/0011); nil leaves a field unchanged, an
    /// empty placeholder loc key removes it.
    /// Takes effect for notifications already queued too (R-APP-2: the policy is read at send
    /// time); turning `require_encryption` off records `push_app.encryption_disabled`. Returns nil
    /// for an unknown or deleted app.
    /// - Throws: `PushError` `VALIDATION_ERROR` naming the field; `PGError` on database failure.
    public func appUpdate(id: UUID, requireEncryption: Bool? = nil, placeholderTitle: String? = nil,
                          placeholderBody: String? = nil, name: String? = nil, placeholderTitleLocKey: String? = nil,
                          placeholderBodyLocKey: String? = nil,
                          preview: AppPreviewSettings = AppPreviewSettings(),
                          contentMode: ContentMode? = nil) throws -> PushApp? {
        func update(_ c: PGConnection) throws -> PushApp? {
            _ = try Self.decode(c.exec(RegistryQueries.appUpdate, [
                .uuid(id), requireEncryption.map(PGValue.bool), placeholderTitle.map(PGValue.text),
                placeholderBody.map(PGValue.text), name.map(PGValue.text), placeholderTitleLocKey.map(PGValue.text),
                placeholderBodyLocKey.map(PGValue.text), contentMode.map { PGValue.text($0.rawValue) },
            ]), 0)
            return try Self.setPreview(c, id: id, preview)
        }
        do {
            // Inside a caller's transaction (the audit of require_encryption) as part of it.
            return try StoreErrors.mapped {
                connection.isInTransaction ? try update(connection) : try connection.transaction { try update($0) }
            }
        } catch let e as PushError where e.code == .notFound {
            return nil
        }
    }

    /// Sets the preview settings given (nil: unchanged) and reads the whole app back
    /// (`push_app_set_preview`, sql/0020); nil for an unknown or deleted app.
    static func setPreview(_ c: PGConnection, id: UUID, _ p: AppPreviewSettings) throws -> PushApp? {
        let r = try c.exec(RegistryQueries.appSetPreview, [
            .uuid(id), p.confirmDeliveries.map(PGValue.bool), p.windowSeconds.map(PGValue.int),
        ])
        return r.rowCount == 0 ? nil : try decode(r, 0)
    }

    /// The app, or nil.
    public func appGet(id: UUID) throws -> PushApp? {
        let r = try connection.exec(RegistryQueries.appGet, [.uuid(id)])
        return r.rowCount == 0 ? nil : try Self.decode(r, 0)
    }

    /// Soft-deletes the app: its queued notifications end NO_DEVICES with DEVICE_GONE refunds.
    @discardableResult
    public func appDelete(id: UUID) throws -> Bool {
        try connection.exec(RegistryQueries.appDelete, [.uuid(id)]).affectedRowCount == 1
    }

    /// The app of row `i`; the loc keys and content mode only where the result has them
    /// (`push_app_create` has not: a new app has none, and is `sealed`). Reads the columns of `RegistryQueries.appUpdateColumns` (or
    /// `appColumns`); `APIReadStore` decodes its app rows with it too.
    static func decode(_ r: PGResult, _ i: Int) throws -> PushApp {
        let locKeys = (try? r.columnIndex(named: "placeholder_title_loc_key")) != nil
        let preview = (try? r.columnIndex(named: "confirm_deliveries")) != nil
        let contentMode = (try? r.columnIndex(named: "content_mode")) != nil
        var app = PushApp(id: try r.uuid(i, "id"), name: try r.string(i, "name"),
                requireEncryption: try r.bool(i, "require_encryption"),
                placeholderTitle: try r.string(i, "placeholder_title"),
                placeholderBody: try r.string(i, "placeholder_body"),
                placeholderTitleLocKey: locKeys ? try r.decode(i, "placeholder_title_loc_key") : nil,
                placeholderBodyLocKey: locKeys ? try r.decode(i, "placeholder_body_loc_key") : nil,
                deleted: try r.bool(i, "deleted"),
                createdAt: try r.date(i, "created_at"), updatedAt: try r.date(i, "updated_at"),
                contentMode: contentMode ? try r.decode(i, "content_mode") : .sealed)
        if preview {
            app.confirmDeliveries = try r.bool(i, "confirm_deliveries")
            app.previewWindowSeconds = try r.int(i, "preview_window_seconds")
        }
        return app
    }
}
