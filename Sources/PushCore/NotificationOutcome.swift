/// A notification's final status once every delivery has ended (R-SEND-6, R-SEND-9).
public struct NotificationOutcome: Sendable, Hashable {
    /// Final status.
    public let status: NotificationStatus
    /// Why nothing was sent (`ENCRYPTION_KEY_MISSING`, `NO_DEVICES`, `ALL_DEVICES_REFUSED`); also kept
    /// with `smsFallback`; nil when `sent`.
    public let errorCode: ErrorCode?
    /// Deliveries that net one charge (R-SEND-9 `device_count`).
    public let deviceCount: Int

    /// Makes an outcome.
    public init(status: NotificationStatus, errorCode: ErrorCode?, deviceCount: Int) {
        self.status = status
        self.errorCode = errorCode
        self.deviceCount = deviceCount
    }

    /// The outcome for the deliveries' endings.
    ///
    /// At least one `.sent` → `sent`. Otherwise the SMS fallback goes out if there is one
    /// (`smsFallback`), else `failed`, with the code: `NO_DEVICES` when the send-time audience was
    /// empty (`DEVICE_GONE` endings are devices charged at acceptance but not in that audience, so
    /// they are left out of this test), `ENCRYPTION_KEY_MISSING` when every other ending was that,
    /// `ALL_DEVICES_REFUSED` otherwise.
    public static func final(endings: [DeliveryEnding], hasSMSFallback: Bool) -> NotificationOutcome {
        let count = endings.reduce(0) { $0 + (LedgerRule.countsInDeviceCount($1) ? 1 : 0) }
        if endings.contains(.sent) {
            return NotificationOutcome(status: .sent, errorCode: nil, deviceCount: count)
        }
        let audience = endings.filter { $0 != .failed(.deviceGone) }
        let code: ErrorCode
        if audience.isEmpty {
            code = .noDevices
        } else if audience.allSatisfy({ $0 == .failed(.encryptionKeyMissing) }) {
            code = .encryptionKeyMissing
        } else {
            code = .allDevicesRefused
        }
        return NotificationOutcome(status: hasSMSFallback ? .smsFallback : .failed, errorCode: code, deviceCount: count)
    }
}
