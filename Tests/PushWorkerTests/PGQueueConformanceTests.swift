import XCTest

/// The queue store's conformance suite (`QueueConformance+*.swift`) on PostgreSQL
/// (`PGQueueStore`): the same scenarios as `MemoryQueueConformanceTests`.
final class PGQueueConformanceTests: PGWorkerTestCase {
    func testPushesSentWhileTheSessionBrokeAreRecordedOnTheNextAndNeverSentAgain() throws { try conformPushesSentWhileTheSessionBrokeAreRecordedOnTheNextAndNeverSentAgain() }
    func testADeferredOutcomeWhoseLeaseWasLostMeanwhileIsLeftToTheNewOwner() throws { try conformADeferredOutcomeWhoseLeaseWasLostMeanwhileIsLeftToTheNewOwner() }
    func testAWorkerAskedToStopRecordsWhatItSentBeforeExiting() throws { try conformAWorkerAskedToStopRecordsWhatItSentBeforeExiting() }
    func testJobsClaimedButNotSentWhenTheSessionBrokeAreGivenBackOnTheNext() throws { try conformJobsClaimedButNotSentWhenTheSessionBrokeAreGivenBackOnTheNext() }
    func testAHeldJobIsExtendedAndNeverLost() throws { try conformAHeldJobIsExtendedAndNeverLost() }
    func testAJobTakenOverIsReportedLostAfterTwoMissedHeartbeats() throws { try conformAJobTakenOverIsReportedLostAfterTwoMissedHeartbeats() }
    func testAJobRecordedThenLetGoBeforeTheNextHeartbeatIsNeverLost() throws { try conformAJobRecordedThenLetGoBeforeTheNextHeartbeatIsNeverLost() }
    func testLostLeaseRecordsNothingAndTheRescuedJobCompletesOnce() throws { try conformLostLeaseRecordsNothingAndTheRescuedJobCompletesOnce() }
    func testALostLeaseInTheGroupLosesOnlyThatJobsRecord() throws { try conformALostLeaseInTheGroupLosesOnlyThatJobsRecord() }
    func testExpiredLeaseIsRescuedAndCompletedExactlyOnce() throws { try conformExpiredLeaseIsRescuedAndCompletedExactlyOnce() }
    func testFailuresAreLeaseGuardedAndSetAsideOnceOutOfAttempts() throws { try conformFailuresAreLeaseGuardedAndSetAsideOnceOutOfAttempts() }
    func testScheduledJobIsNotClaimedBeforeSendAt() throws { try conformScheduledJobIsNotClaimedBeforeSendAt() }
    func testClaimTakesAppsInTurnAndPriorityWithinAnApp() throws { try conformClaimTakesAppsInTurnAndPriorityWithinAnApp() }
    func testClaimsKeepToTheirDeviceBudgets() throws { try conformClaimsKeepToTheirDeviceBudgets() }
    func testAnAppsBudgetLetsAnotherAppsSingleNotificationsFillTheClaim() throws { try conformAnAppsBudgetLetsAnotherAppsSingleNotificationsFillTheClaim() }
    func testLedgerNetsForEveryEnding() throws { try conformLedgerNetsForEveryEnding() }
    func testAcceptanceChargesAreTheDevicesTheCorePolicyDeliversTo() throws { try conformAcceptanceChargesAreTheDevicesTheCorePolicyDeliversTo() }
    func testTokenMovedBeforeSendTimeIsDeviceGoneAndRefunded() throws { try conformTokenMovedBeforeSendTimeIsDeviceGoneAndRefunded() }
    func testAppDeletedBeforeSendTimeEndsNoDevicesWithDeviceGoneRefunds() throws { try conformAppDeletedBeforeSendTimeEndsNoDevicesWithDeviceGoneRefunds() }
    func testVerdictOlderThanReRegistrationDoesNotDeactivate() throws { try conformVerdictOlderThanReRegistrationDoesNotDeactivate() }
    func testFinalStatesAndTheSMSOutbox() throws { try conformFinalStatesAndTheSMSOutbox() }
    func testAFinalGivenWithTheLastBatchIsStoredAsToldAndNoDecisionIsAsked() throws { try conformAFinalGivenWithTheLastBatchIsStoredAsToldAndNoDecisionIsAsked() }

    func testClaimTakesEachAppsFirstJobBeforeAnyAppsSecond() throws { try conformClaimTakesEachAppsFirstJobBeforeAnyAppsSecond() }
    func testTheStoredExpiryReachesTheWorker() throws { try conformTheStoredExpiryReachesTheWorker() }

    // The kind scenarios of `PushKindWorkerTests.swift` (R-KIND-1..3): push_enqueue's kind columns read back by the claim.
    func testBackgroundPushOnEveryPlatform() throws { try conformBackgroundPushOnEveryPlatform() }
    func testLocalizedAlertWithPresentationFields() throws { try conformLocalizedAlertWithPresentationFields() }
    func testBackgroundPushKeepsTheEncryptionPolicyAndTheRefunds() throws { try conformBackgroundPushKeepsTheEncryptionPolicyAndTheRefunds() }

    // The enqueue and cancel scenarios of `LedgerTests.swift` (push_enqueue, push_cancel, push_expires_at).
    func testIdempotencyKeyTwiceMakesOneNotificationAndOneSetOfCharges() throws { try conformIdempotencyKeyTwiceMakesOneNotificationAndOneSetOfCharges() }
    func testCancelBeforeSendTimeRefundsAllAndAfterStartReturnsFalse() throws { try conformCancelBeforeSendTimeRefundsAllAndAfterStartReturnsFalse() }
    func testExpiresAtIsStoredAsTheLaterOfAcceptedAndSendAtPlusTTL() throws { try conformExpiresAtIsStoredAsTheLaterOfAcceptedAndSendAtPlusTTL() }

    // The send-time targeting scenarios of `SendTimeTargetingTests.swift` (R-SEND-1): push_start_notifications, the batch load.
    func testADeviceMovedToAUserOutsideTheAudienceAfterTheStartIsNotSent() throws { try conformADeviceMovedToAUserOutsideTheAudienceAfterTheStartIsNotSent() }
    func testAMoveStampedJustBeforeTheStartButUnseenByItIsStillCaught() throws { try conformAMoveStampedJustBeforeTheStartButUnseenByItIsStillCaught() }
    func testDevicesRegisteredBeforeTheStartAreTargetedWithoutSearchingTheAudience() throws { try conformDevicesRegisteredBeforeTheStartAreTargetedWithoutSearchingTheAudience() }
}

/// `ContentModeScenarios` (R-IDS-1, LiveContentModeTests.swift, run there on the in-memory store as
/// `MemoryContentModeTests`) on PostgreSQL: push_enqueue, push_start_notifications, the claim, push_record.
final class LiveContentModeTests: ContentModeScenarios {
    override class var backend: Backend { .postgres }
    func testIDsOnlyAppSendsOnlyTheMarkerToAPNsAndFCMForKeyedAndKeylessDevices() throws {
        try idsOnlyAppSendsOnlyTheMarkerToAPNsAndFCMForKeyedAndKeylessDevices()
    }
    func testSealedAgainAtSendTimeRefusesWhatNoLongerFitsAndRefunds() throws { try sealedAgainAtSendTimeRefusesWhatNoLongerFitsAndRefunds() }
    func testIDsOnlyAtSendTimeDeliversToAKeylessDeviceChargedThen() throws { try idsOnlyAtSendTimeDeliversToAKeylessDeviceChargedThen() }
}
