import PushProviders

/// Series that must exist before their first event, so `increase()` in alert rules sees a step
/// from 0 (a series born at 1 shows no increase).
extension WorkerMetrics {
    /// Creates the zero-valued series `pushfleet_credentials_invalid_total{kind}` for every
    /// credential kind of `providers` (idempotent: adds 0).
    public func preregisterSeries(providers: ProviderTable = .standard) {
        for kind in providers.credentialKinds { credentialsInvalid.increment([kind.rawValue], by: 0) }
    }
}
