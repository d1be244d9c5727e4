import Foundation
import PushProviders

/// A resolver that answers from a fixed table and records its lookups (the send-time guard's DNS,
/// R-DEV-1); a name missing from the table does not resolve (`WebPushResolveError.failed`).
public final class StubWebPushResolver: WebPushResolver, @unchecked Sendable {
    private let table: [String: [String]]
    private let lock = NSLock()
    private var seen: [String] = []

    /// A resolver answering `table[host]` (IP address strings).
    public init(_ table: [String: [String]]) { self.table = table }

    /// Hosts looked up so far, in order.
    public var lookups: [String] { lock.withLock { seen } }

    /// The table's addresses for `host` (`port` is ignored).
    /// - Throws: `WebPushResolveError.failed` for a host missing from the table.
    public func addresses(host: String, port: Int) throws -> [String] {
        lock.withLock { seen.append(host) }
        guard let addresses = table[host] else { throw WebPushResolveError.failed(host: host, "no such name (stub)") }
        return addresses
    }
}
