import Foundation
import PushCore
import PushProviders
import PushStore

// Tests store and check the standard kinds' sets by kind; the product picks the rules from its
// provider table (`AcceptanceService.setCredentials`), as these do from the standard one.

extension CredentialStore {
    /// Stores a set of `kind` checked by the standard table's rules for it (`ProviderTable.credentialRules`).
    /// - Throws: as `set(appID:rules:config:secret:actor:)`; `VALIDATION_ERROR` for a kind no rules serve.
    @discardableResult
    public func set(appID: UUID, kind: CredentialKind, config: [String: String], secret: [UInt8],
                    actor: String = AuditStore.unnamedActor) throws -> CredentialSummary {
        try set(appID: appID, rules: try ProviderTable.standard.credentialRules(for: kind), config: config,
                secret: secret, actor: actor)
    }
}

extension CredentialValidation {
    /// Checks a set of `kind` with the standard table's rules for it.
    /// - Returns: the config to store. - Throws: `VALIDATION_ERROR`.
    public static func validate(kind: CredentialKind, config: [String: String], secret: [UInt8]) throws -> [String: String] {
        try ProviderTable.standard.credentialRules(for: kind).validate(config: config, secret: secret)
    }
}
