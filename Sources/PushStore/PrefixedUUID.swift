import Foundation
import PushCore

/// The kind of object a `PrefixedUUID` names, as a type.
public protocol PrefixedIDKind: Sendable {
    /// Its prefix (R-API-4).
    static var kind: IDKind { get }
}

/// Marks an app id (`papp_`).
public enum AppIDKind: PrefixedIDKind { public static let kind = IDKind.app }
/// Marks a device id (`pdev_`).
public enum DeviceIDKind: PrefixedIDKind { public static let kind = IDKind.device }
/// Marks a notification id (`pnot_`).
public enum NotificationIDKind: PrefixedIDKind { public static let kind = IDKind.notification }

/// An id that `Codable` writes with its type prefix (`pdev_` + 32 lower-case hex digits, R-API-4),
/// as the API, the webhooks and the CLI's JSON name objects. Reads either that form or a dashed
/// UUID (in either case), as the CLI accepts both.
@propertyWrapper
public struct PrefixedUUID<Kind: PrefixedIDKind>: Sendable, Hashable, Codable {
    /// The id.
    public var wrappedValue: UUID

    /// Wraps an id.
    public init(wrappedValue: UUID) { self.wrappedValue = wrappedValue }

    /// Reads a prefixed id of `Kind` or a dashed UUID.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = PrefixedID.parseLenient(text, as: Kind.kind) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "not a \(Kind.kind.rawValue)_ id or a UUID"))
        }
        wrappedValue = id
    }

    /// Writes the prefixed id.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(PrefixedID.format(Kind.kind, wrappedValue))
    }
}

/// `PrefixedUUID` for an optional id (JSON `null` when absent).
@propertyWrapper
public struct PrefixedOptionalUUID<Kind: PrefixedIDKind>: Sendable, Hashable, Codable {
    /// The id, or nil.
    public var wrappedValue: UUID?

    /// Wraps an optional id.
    public init(wrappedValue: UUID?) { self.wrappedValue = wrappedValue }

    /// Reads null, a prefixed id of `Kind` or a dashed UUID.
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try PrefixedUUID<Kind>(from: decoder).wrappedValue
    }

    /// Writes null or the prefixed id.
    public func encode(to encoder: Encoder) throws {
        guard let id = wrappedValue else {
            var c = encoder.singleValueContainer()
            try c.encodeNil()
            return
        }
        try PrefixedUUID<Kind>(wrappedValue: id).encode(to: encoder)
    }
}

/// `PrefixedUUID` for a list of ids.
@propertyWrapper
public struct PrefixedUUIDs<Kind: PrefixedIDKind>: Sendable, Hashable, Codable {
    /// The ids.
    public var wrappedValue: [UUID]

    /// Wraps ids.
    public init(wrappedValue: [UUID]) { self.wrappedValue = wrappedValue }

    /// Reads an array of prefixed ids of `Kind` or dashed UUIDs.
    public init(from decoder: Decoder) throws {
        wrappedValue = try [PrefixedUUID<Kind>](from: decoder).map(\.wrappedValue)
    }

    /// Writes the prefixed ids.
    public func encode(to encoder: Encoder) throws {
        try wrappedValue.map(PrefixedUUID<Kind>.init(wrappedValue:)).encode(to: encoder)
    }
}
