import XCTest
@testable import PushCore

/// R-SEND-9 ledger netting for every ending, and R-SEND-6 notification outcomes.
final class LedgerRuleTests: XCTestCase {
    /// Every ending with whether it nets one charge.
    static let endings: [(DeliveryEnding, Bool)] = {
        var rows: [(DeliveryEnding, Bool)] = [(.sent, true), (.appMismatch(.device), true), (.appMismatch(.credentials), false)]
        for code in ErrorCode.allCases {
            rows.append((.failed(code), code == .unregistered || code == .invalidToken))
        }
        return rows
    }()

    func testEveryEndingNetsExactlyOneChargeOrZero() {
        for (ending, netsOne) in Self.endings {
            XCTAssertEqual(LedgerRule.netsCharge(ending), netsOne, "\(ending)")
            XCTAssertEqual(LedgerRule.countsInDeviceCount(ending), netsOne, "\(ending)")
            for charged in [false, true] {
                let action = LedgerRule.action(for: ending, chargedAtAcceptance: charged)
                let charges = (charged ? 1 : 0) + (action == .charge ? 1 : 0)
                let refunds = action == .refund ? 1 : 0
                XCTAssertLessThanOrEqual(charges, 1, "never two charges")
                XCTAssertEqual(charges - refunds, netsOne ? 1 : 0, "\(ending) charged=\(charged)")
            }
        }
    }

    func testSpecNamedEndings() {
        XCTAssertEqual(LedgerRule.action(for: .sent, chargedAtAcceptance: true), LedgerAction.none)
        XCTAssertEqual(LedgerRule.action(for: .sent, chargedAtAcceptance: false), .charge)
        XCTAssertEqual(LedgerRule.action(for: .failed(.unregistered), chargedAtAcceptance: true), LedgerAction.none)
        XCTAssertEqual(LedgerRule.action(for: .failed(.invalidToken), chargedAtAcceptance: false), .charge)
        XCTAssertEqual(LedgerRule.action(for: .appMismatch(.device), chargedAtAcceptance: true), LedgerAction.none)
        for code in [ErrorCode.encryptionKeyMissing, .pushPayloadTooLarge, .expired, .credentialsInvalid, .deviceGone,
                     .retriesExhausted, .appMismatch] {
            XCTAssertEqual(LedgerRule.action(for: .failed(code), chargedAtAcceptance: true), .refund, "\(code)")
            XCTAssertEqual(LedgerRule.action(for: .failed(code), chargedAtAcceptance: false), LedgerAction.none, "\(code)")
        }
        XCTAssertEqual(LedgerRule.action(for: .appMismatch(.credentials), chargedAtAcceptance: true), .refund)
    }

    func testEndingStatusAndCode() {
        XCTAssertEqual(DeliveryEnding.sent.status, .sent)
        XCTAssertNil(DeliveryEnding.sent.errorCode)
        XCTAssertEqual(DeliveryEnding.appMismatch(.device).errorCode, .appMismatch)
        XCTAssertEqual(DeliveryEnding.failed(.expired).status, .failed)
        XCTAssertEqual(DeliveryEnding.failed(.expired).errorCode, .expired)
    }
}

final class NotificationOutcomeTests: XCTestCase {
    func testAnySentDeliveryMakesItSent() {
        let outcome = NotificationOutcome.final(endings: [.failed(.encryptionKeyMissing), .sent, .failed(.unregistered)],
                                                hasSMSFallback: true)
        XCTAssertEqual(outcome, NotificationOutcome(status: .sent, errorCode: nil, deviceCount: 2))
    }

    func testAllRefusedForMissingKeyFailsWithEncryptionKeyMissing() {
        let outcome = NotificationOutcome.final(endings: [.failed(.encryptionKeyMissing), .failed(.encryptionKeyMissing)],
                                                hasSMSFallback: false)
        XCTAssertEqual(outcome, NotificationOutcome(status: .failed, errorCode: .encryptionKeyMissing, deviceCount: 0))
    }

    func testEmptyAudienceFailsWithNoDevices() {
        XCTAssertEqual(NotificationOutcome.final(endings: [], hasSMSFallback: false).errorCode, .noDevices)
        XCTAssertEqual(NotificationOutcome.final(endings: [.failed(.deviceGone)], hasSMSFallback: false).errorCode, .noDevices,
                       "DEVICE_GONE devices are not in the send-time audience")
    }

    func testMixedRefusalsFailWithAllDevicesRefused() {
        let outcome = NotificationOutcome.final(endings: [.failed(.encryptionKeyMissing), .failed(.pushPayloadTooLarge),
                                                          .failed(.unregistered), .failed(.deviceGone)], hasSMSFallback: false)
        XCTAssertEqual(outcome, NotificationOutcome(status: .failed, errorCode: .allDevicesRefused, deviceCount: 1))
        XCTAssertEqual(NotificationOutcome.final(endings: [.failed(.encryptionKeyMissing), .failed(.deviceGone)],
                                                 hasSMSFallback: false).errorCode, .encryptionKeyMissing)
    }

    func testNothingSentWithFallbackSendsSMS() {
        for endings: [DeliveryEnding] in [[], [.failed(.encryptionKeyMissing)], [.failed(.expired), .appMismatch(.device)]] {
            XCTAssertEqual(NotificationOutcome.final(endings: endings, hasSMSFallback: true).status, .smsFallback)
        }
    }
}
