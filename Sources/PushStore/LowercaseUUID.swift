import Foundation

/// A UUID that `Codable` writes in lower case, as PostgreSQL, APNs and every text output of this
/// product do (Foundation's own `UUID` coding writes upper case). The CLI's and the API's JSON
/// normalise ids this way, by type, and nothing else (issue 13: a post-pass over the text also
/// lower-cased UUID-shaped text inside titles and stored payload bytes).
@propertyWrapper
public struct LowercaseUUID: Sendable, Hashable, Codable {
    /// The id.
    public var wrappedValue: UUID

    /// Wraps an id.
    public init(wrappedValue: UUID) { self.wrappedValue = wrappedValue }

    /// Reads a UUID string in either case.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = UUID(uuidString: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a UUID"))
        }
        wrappedValue = id
    }

    /// Writes the id in lower case.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(wrappedValue.uuidString.lowercased())
    }
}

/// `LowercaseUUID` for an optional id (JSON `null` when absent).
@propertyWrapper
public struct LowercaseOptionalUUID: Sendable, Hashable, Codable {
    /// The id, or nil.
    public var wrappedValue: UUID?

    /// Wraps an optional id.
    public init(wrappedValue: UUID?) { self.wrappedValue = wrappedValue }

    /// Reads null or a UUID string in either case.
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try LowercaseUUID(from: decoder).wrappedValue
    }

    /// Writes null or the id in lower case.
    public func encode(to encoder: Encoder) throws {
        guard let id = wrappedValue else {
            var c = encoder.singleValueContainer()
            try c.encodeNil()
            return
        }
        try LowercaseUUID(wrappedValue: id).encode(to: encoder)
    }
}

/// `LowercaseUUID` for a list of ids.
@propertyWrapper
public struct LowercaseUUIDs: Sendable, Hashable, Codable {
    /// The ids.
    public var wrappedValue: [UUID]

    /// Wraps ids.
    public init(wrappedValue: [UUID]) { self.wrappedValue = wrappedValue }

    /// Reads an array of UUID strings in either case.
    public init(from decoder: Decoder) throws {
        wrappedValue = try [LowercaseUUID](from: decoder).map(\.wrappedValue)
    }

    /// Writes the ids in lower case.
    public func encode(to encoder: Encoder) throws {
        try wrappedValue.map(LowercaseUUID.init(wrappedValue:)).encode(to: encoder)
    }
}
