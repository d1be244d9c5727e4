/// Series that must exist before their first event, so `increase()` in alert rules sees a step
/// from 0 (a series born at 1 shows no increase).
extension WorkerMetrics {
    /// The credential kinds of R-APP-3, the label values of `pushfleet_credentials_invalid_total`.
    public static let credentialKinds = ["apns", "fcm", "webpush"]

    /// Creates the zero-valued series `pushfleet_credentials_invalid_total{kind}` for every kind
    /// (idempotent: adds 0).
    public func preregisterSeries() {
        for kind in Self.credentialKinds { credentialsInvalid.increment([kind], by: 0) }
    }
}
