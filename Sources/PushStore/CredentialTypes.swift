import Foundation
import PushCore
import PushCrypto

// `CredentialKind` (which provider a set serves) is PushCore's; the provider table maps it to its
// platform and client.

/// A credential set's state (R-APP-3): `unverified` until a live notification is accepted with it.
public enum CredentialState: String, Sendable, Hashable, Codable {
    case unverified, verified, invalid
}

/// A credential set without its secret: what `apps credentials show` prints and the planner reads.
public struct CredentialSummary: Sendable, Equatable, Codable {
    @PrefixedUUID<AppIDKind> public var appID: UUID
    public var kind: CredentialKind
    public var state: CredentialState
    /// First live acceptance (R-APP-3); kept for good once set, whatever state follows.
    public var firstAcceptedAt: Date?
    /// The provider's reason when `state` is `invalid` (R-PRV-2, R-PRV-3).
    public var invalidReason: String?
    public var updatedAt: Date
    /// Non-secret identifiers and overrides (`team_id`, `key_id`, `topic`, `project_id`, `client_email`,
    /// `account_sid`, `api_key_sid`, `from`, `messaging_service_sid`, base URLs).
    public var identifiers: [String: String]
    /// Changes whenever the set itself is replaced (hash of config and sealed secret), not on state moves;
    /// the worker rebuilds its provider clients when it changes.
    public var version: String
    /// Times the secret was re-sealed under a new `PUSHFLEET_CREDENTIALS_KEY`, plus one.
    public var keyVersion: Int

    /// True when the set had a live notification accepted (blame rule of R-PRV-2).
    public var isVerified: Bool { firstAcceptedAt != nil }

    /// Makes a summary (the store's decoder and test doubles).
    public init(appID: UUID, kind: CredentialKind, state: CredentialState, firstAcceptedAt: Date?, invalidReason: String?,
                updatedAt: Date, identifiers: [String: String], version: String, keyVersion: Int) {
        self.appID = appID
        self.kind = kind
        self.state = state
        self.firstAcceptedAt = firstAcceptedAt
        self.invalidReason = invalidReason
        self.updatedAt = updatedAt
        self.identifiers = identifiers
        self.version = version
        self.keyVersion = keyVersion
    }
}

/// Where the worker's live router reads credential sets: `PGCredentialSource` (PostgreSQL) in
/// production, an in-memory one in tests.
public protocol CredentialSource: AnyObject, Sendable {
    /// False when no secret can be opened (no `PUSHFLEET_CREDENTIALS_KEY`): every live set is unusable.
    var canOpenSecrets: Bool { get }
    /// The app's sets without secrets (R-APP-3 states).
    func states(appID: UUID) throws -> [CredentialSummary]
    /// The app's sets with their secrets opened.
    func load(appID: UUID) throws -> [CredentialSet]
}

/// A credential set with its opened secret (the `.p8` PEM text, the service-account JSON bytes, the
/// VAPID private key PEM, or Twilio's auth token or API key secret).
/// `description` never shows the secret.
public struct CredentialSet: Sendable, CustomStringConvertible {
    public var summary: CredentialSummary
    /// The secret in clear; keep it in memory only.
    public var secret: [UInt8]

    /// Makes a set.
    public init(summary: CredentialSummary, secret: [UInt8]) {
        self.summary = summary
        self.secret = secret
    }

    public var description: String {
        "CredentialSet(\(summary.kind.rawValue), app \(summary.appID.uuidString.lowercased()), state \(summary.state.rawValue), secret \(secret.count) bytes)"
    }
}

/// The AES-256-GCM keys that seal credential secrets at rest: `PUSHFLEET_CREDENTIALS_KEY` (current,
/// seals and opens) and optional `PUSHFLEET_CREDENTIALS_KEY_PREVIOUS` (opens only, during a rotation).
public struct CredentialKeys: Sendable {
    /// 32 bytes.
    public var current: [UInt8]
    /// 32 bytes, or nil.
    public var previous: [UInt8]?

    /// - Throws: `VALIDATION_ERROR` unless each key is 32 bytes.
    public init(current: [UInt8], previous: [UInt8]? = nil) throws {
        guard current.count == SecretBox.keyLength, previous.map({ $0.count == SecretBox.keyLength }) ?? true else {
            throw PushError(.validationError, "credential keys must be 32 bytes")
        }
        self.current = current
        self.previous = previous
    }

    /// Opens `box` (`SecretBox`, bound to `aad`) with the current key, else the previous one; nil
    /// when neither opens it.
    public func open(_ box: [UInt8], aad: [UInt8]) -> [UInt8]? {
        for key in [current] + (previous.map { [$0] } ?? []) {
            if let plain = try? SecretBox.open(box, key: key, aad: aad) { return plain }
        }
        return nil
    }

    /// Environment variable of the current key.
    public static let currentVariable = "PUSHFLEET_CREDENTIALS_KEY"
    /// Environment variable of the previous key (opens only).
    public static let previousVariable = "PUSHFLEET_CREDENTIALS_KEY_PREVIOUS"

    /// Reads both keys from `environment` (base64url, 32 bytes each).
    /// - Throws: `VALIDATION_ERROR` when the current key is missing, or a key is not base64url of 32 bytes
    ///   (the message names the variable, never its value).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> CredentialKeys {
        guard let text = environment[currentVariable], !text.isEmpty else {
            throw PushError(.validationError, "\(currentVariable) is not set (base64url of 32 random bytes)")
        }
        let previous = try environment[previousVariable].flatMap { $0.isEmpty ? nil : try decode($0, name: previousVariable) }
        return try CredentialKeys(current: try decode(text, name: currentVariable), previous: previous)
    }

    static func decode(_ text: String, name: String) throws -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "=", with: "")
        guard let bytes = Base64URL.decode(trimmed), bytes.count == SecretBox.keyLength else {
            throw PushError(.validationError, "\(name) must be base64url of exactly 32 bytes")
        }
        return bytes
    }
}
