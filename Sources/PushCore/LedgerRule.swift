/// How one delivery ended, as far as the ledger and the notification's outcome care (R-SEND-9).
public enum DeliveryEnding: Sendable, Hashable {
    /// Accepted by the provider.
    case sent
    /// `APP_MISMATCH` (R-PRV-2) with who was blamed.
    case appMismatch(AppMismatchBlame)
    /// Any other final failure, by code. `.failed(.appMismatch)` is read as blamed on the credentials.
    case failed(ErrorCode)
    /// A failure code this release does not know (a newer release wrote it, R-SEND-9's codes are
    /// only ever added), with what that release's ledger rows net for it.
    case unknown(code: String, netsCharge: Bool)

    /// The delivery row's final status.
    public var status: DeliveryStatus { self == .sent ? .sent : .failed }

    /// The delivery row's `error_code` (nil when sent, or not one this release knows).
    public var errorCode: ErrorCode? {
        switch self {
        case .sent, .unknown: return nil
        case .appMismatch: return .appMismatch
        case .failed(let code): return code
        }
    }

    /// A recorded ending read back from the store: the row's `error_code` (nil when sent) and
    /// whether its ledger rows net one charge. The net is read only where the code alone does not
    /// say it: who an `APP_MISMATCH` was blamed on (R-PRV-2), and a code this release does not know.
    public init(recordedCode code: String?, netsCharge: Bool) {
        guard let code else { self = .sent; return }
        switch ErrorCode(rawValue: code) {
        case .appMismatch?: self = .appMismatch(netsCharge ? .device : .credentials)
        case let known?: self = .failed(known)
        case nil: self = .unknown(code: code, netsCharge: netsCharge)
        }
    }
}

/// Who an `APP_MISMATCH` answer is blamed on (R-PRV-2).
public enum AppMismatchBlame: String, Sendable, Hashable, CaseIterable {
    /// Credentials verified before: the device is the exception; deactivate it (nets one charge).
    case device
    /// Credentials never verified: mark them invalid, keep the device (nets zero).
    case credentials
}

/// What the ledger must receive for one delivery (R-SEND-9).
public enum LedgerAction: String, Sendable, Hashable, CaseIterable {
    /// Nothing to write: the acceptance rows already net the right amount.
    case none
    /// Write the refund row (charged at acceptance, ending nets zero).
    case refund
    /// Write the missing charge row (not charged at acceptance, ending nets one).
    case charge
}

/// R-SEND-9: a delivery nets exactly one charge when it ends `sent`, `UNREGISTERED`,
/// `INVALID_TOKEN`, or `APP_MISMATCH` blamed on the device; every other ending nets zero
/// (`ENCRYPTION_KEY_MISSING`, `PUSH_PAYLOAD_TOO_LARGE`, `EXPIRED`, `CREDENTIALS_INVALID`,
/// `APP_MISMATCH` blamed on the credentials, `DEVICE_GONE`, `RETRIES_EXHAUSTED`, and any other code).
/// At most one charge and one refund row per (notification, device): the actions below never
/// need a second of either.
public enum LedgerRule {
    /// True when `ending` nets one charge (and counts in `device_count`).
    public static func netsCharge(_ ending: DeliveryEnding) -> Bool {
        switch ending {
        case .sent: return true
        case .appMismatch(let blame): return blame == .device
        case .failed(let code): return code == .unregistered || code == .invalidToken
        case .unknown(_, let nets): return nets
        }
    }

    /// The row to write so the delivery nets what it should, given whether a charge row was written
    /// at acceptance.
    public static func action(for ending: DeliveryEnding, chargedAtAcceptance: Bool) -> LedgerAction {
        switch (netsCharge(ending), chargedAtAcceptance) {
        case (true, true), (false, false): return .none
        case (true, false): return .charge
        case (false, true): return .refund
        }
    }

    /// True when the delivery counts in the notification's `device_count` (R-SEND-9).
    public static func countsInDeviceCount(_ ending: DeliveryEnding) -> Bool { netsCharge(ending) }
}
