import PushCore
import PushProviders

/// Test conveniences over the product's provider table (`ProviderTable.standard`): the planner
/// and the answer table as the worker builds them, without repeating the table in each test.
extension DeliveryPlanner {
    /// A planner with the standard table's payload writers.
    public init(content: NotificationContent, placeholders: AppPlaceholders, requireEncryption: Bool, mode: Mode,
                invalidCredentials: Set<Platform> = []) {
        self.init(content: content, placeholders: placeholders, requireEncryption: requireEncryption, mode: mode,
                  invalidCredentials: invalidCredentials, platforms: ProviderTable.standard.planning)
    }

    /// One-shot planning of `device` with the standard table's payload writers.
    public static func plan(content: NotificationContent, placeholders: AppPlaceholders, requireEncryption: Bool,
                            mode: Mode, invalidCredentials: Set<Platform> = [], device: DeviceSnapshot) -> PlanDecision {
        DeliveryPlanner(content: content, placeholders: placeholders, requireEncryption: requireEncryption, mode: mode,
                        invalidCredentials: invalidCredentials).plan(device)
    }
}

extension ProviderAnswerTable {
    /// Classifies with the rules the standard table gives `provider` (the simulator's for `.simulator`).
    public static func classify(_ answer: ProviderAnswer, provider: ProviderKind, credentialsVerified: Bool) -> AnswerOutcome {
        guard let rules = ProviderTable.standard.answerRules(provider) else {
            return .failed(PushError(.providerError, "no rules for \(provider.rawValue)"))
        }
        return classify(answer, rules: rules, credentialsVerified: credentialsVerified)
    }
}
