/// A resource an API key may be granted access to (R-API-2).
public enum APIResource: String, Sendable, Hashable, CaseIterable {
    /// Devices and browsers: `w` registers, `d` removes.
    case pushDevices = "push_devices"
    /// Notifications and device reads: `r` lists and reads devices and reads notifications, `w`
    /// sends and cancels.
    case push = "push"
    /// Push apps: `r` reads, `w` creates and changes (changing `require_encryption` also needs a
    /// live key).
    case pushApps = "push_apps"
    /// Webhook endpoints (R-API-2; for the webhook endpoints' routes).
    case webhooks = "webhooks"

    /// The access letters this resource takes, in canonical order.
    public var letters: [APIAccess] {
        switch self {
        case .pushDevices: return [.write, .delete]
        case .push, .pushApps, .webhooks: return [.read, .write]
        }
    }
}

/// One letter of a permission: read, write, delete.
public enum APIAccess: Character, Sendable, Hashable, CaseIterable {
    /// `r`
    case read = "r"
    /// `w`
    case write = "w"
    /// `d`
    case delete = "d"
}

/// The permissions of an API key (R-API-2), written `push_devices:wd,push:rw,push_apps:rw`:
/// comma-separated `resource:letters`, each resource at most once, each letter one the resource
/// takes. Pure value; `text` is the canonical spelling that is stored.
public struct APIPermissions: Sendable, Hashable, CustomStringConvertible {
    /// Granted (resource, access) pairs.
    public private(set) var grants: Set<Grant>

    /// One granted pair.
    public struct Grant: Sendable, Hashable {
        /// The resource.
        public var resource: APIResource
        /// The access.
        public var access: APIAccess
        /// Makes a grant.
        public init(_ resource: APIResource, _ access: APIAccess) {
            self.resource = resource
            self.access = access
        }
    }

    /// Permissions from explicit grants.
    public init(_ grants: Set<Grant>) { self.grants = grants }

    /// Parses the written form.
    /// - Throws: `PushError` `VALIDATION_ERROR` naming the first bad part (an unknown resource, a
    ///   letter the resource does not take, a resource given twice, an empty list).
    public init(parsing text: String) throws {
        func bad(_ why: String) -> PushError { PushError(.validationError, "permissions: \(why)") }
        var grants = Set<Grant>()
        var seen = Set<APIResource>()
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard !text.isEmpty else { throw bad("give at least one resource:letters, e.g. push:rw") }
        for part in parts {
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count == 2, !pieces[1].isEmpty else {
                throw bad("\"\(part.prefix(40))\" is not resource:letters (e.g. push_devices:wd)")
            }
            guard let resource = APIResource(rawValue: String(pieces[0])) else {
                throw bad("unknown resource \"\(pieces[0].prefix(40))\" (push_devices, push, push_apps, webhooks)")
            }
            guard seen.insert(resource).inserted else { throw bad("\(resource.rawValue) is given twice") }
            for letter in pieces[1] {
                guard let access = APIAccess(rawValue: letter), resource.letters.contains(access) else {
                    throw bad("\(resource.rawValue) takes \(String(resource.letters.map(\.rawValue))), not \"\(letter)\"")
                }
                grants.insert(Grant(resource, access))
            }
        }
        self.grants = grants
    }

    /// True when `resource`'s `access` is granted.
    public func allows(_ resource: APIResource, _ access: APIAccess) -> Bool {
        grants.contains(Grant(resource, access))
    }

    /// Canonical text: resources in declaration order, letters in the resource's order.
    public var text: String {
        APIResource.allCases.compactMap { resource -> String? in
            let letters = resource.letters.filter { allows(resource, $0) }
            return letters.isEmpty ? nil : "\(resource.rawValue):\(String(letters.map(\.rawValue)))"
        }.joined(separator: ",")
    }

    /// `text`.
    public var description: String { text }
}
