import Foundation
import PushCore
import PushStore

/// `CredentialSource` over an in-memory queue's credential rows: the states the record path writes
/// (R-APP-3, R-PRV-2/3) and the identifiers and secrets a test stored.
final class InMemoryCredentialSource: CredentialSource, @unchecked Sendable {
    let queue: InMemoryQueue

    init(queue: InMemoryQueue) { self.queue = queue }

    var canOpenSecrets: Bool { true }

    func states(appID: UUID) throws -> [CredentialSummary] { try load(appID: appID).map(\.summary) }

    func load(appID: UUID) throws -> [CredentialSet] {
        queue.locked { q in
            q.credentials.compactMap { key, c -> CredentialSet? in
                let parts = key.split(separator: "/", maxSplits: 1)
                guard parts.count == 2, UUID(uuidString: String(parts[0])) == appID else { return nil }
                let summary = CredentialSummary(appID: appID, kind: CredentialKind(rawValue: String(parts[1])), state: c.state,
                                                firstAcceptedAt: c.firstAcceptedAt, invalidReason: c.invalidReason,
                                                updatedAt: c.updatedAt, identifiers: c.identifiers, version: c.version,
                                                keyVersion: 1)
                return CredentialSet(summary: summary, secret: c.secret)
            }.sorted { $0.summary.kind.rawValue < $1.summary.kind.rawValue }
        }
    }
}
