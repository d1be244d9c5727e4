import Foundation
import PushCore

/// The platforms the deployment serves, as the SQL functions read them (`push_platforms`,
/// sql/0024): `push_register_device_v2` takes each platform's addressing from it, `push_enqueue`
/// bounds a whole-app audience's `platforms` by it, and the acceptance charges' policy
/// (`push_policy_delivers`) reads which platforms encrypt themselves. The product's processes tell
/// it their provider table's platforms (`serve`) when the schema is ready; SQL decides nothing here.
public struct PlatformStore {
    /// The session the calls run on.
    public let connection: PGConnection

    /// A store on `connection`.
    public init(connection: PGConnection) { self.connection = connection }

    /// Writes `platforms` into `push_platforms` in one statement (rows locked in platform order, so
    /// processes starting together never wait on each other in a cycle): a new platform is added, a
    /// changed one updated, an unchanged one left as it is; a row of a platform absent from
    /// `platforms` stays (another release may still serve it). Returns the rows written.
    /// - Throws: `PGError` (`push_platforms` missing: the schema is older than sql/0024).
    @discardableResult
    public func serve(_ platforms: [PlatformTraits]) throws -> Int {
        let sorted = platforms.sorted { $0.platform.rawValue < $1.platform.rawValue }
        return try connection.exec(RegistryQueries.servePlatforms, [
            .textArray(sorted.map { $0.platform.rawValue }), .textArray(sorted.map { Self.spelling($0.addressing) }),
            .boolArray(sorted.map(\.encryptsItself)),
        ]).affectedRowCount
    }

    /// The rows of `push_platforms`, in platform order.
    public func served() throws -> [PlatformTraits] {
        let r = try connection.exec(RegistryQueries.servedPlatforms, [])
        return try (0..<r.rowCount).map { i in
            let spelling = try r.string(i, "addressing")
            guard let addressing = Self.addressing(spelling) else {
                throw PGError(code: .decode, message: "push_platforms.addressing: unknown spelling \(spelling.prefix(40))")
            }
            return PlatformTraits(platform: Platform(rawValue: try r.string(i, "platform")), addressing: addressing,
                                  encryptsItself: try r.bool(i, "encrypts_itself"))
        }
    }

    /// `push_platforms.addressing`'s spelling of `a`.
    public static func spelling(_ a: DeviceAddressing) -> String {
        switch a {
        case .token(apnsEnvironment: false): return "token"
        case .token(apnsEnvironment: true): return "token_with_environment"
        case .subscription: return "subscription"
        }
    }

    /// The addressing `spelling` names, nil for another text.
    public static func addressing(_ spelling: String) -> DeviceAddressing? {
        switch spelling {
        case "token": return .token(apnsEnvironment: false)
        case "token_with_environment": return .token(apnsEnvironment: true)
        case "subscription": return .subscription
        default: return nil
        }
    }
}
