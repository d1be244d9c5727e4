import Foundation
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore
import PushTestSupport
@testable import PushWorker
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

    // The fleet scenarios of `FleetTests.swift`: two workers on their own connections (the claim's SKIP LOCKED), `run`, stopping.
    func testTwoWorkersDrainingOneAudienceEndEveryDeliveryExactlyOnce() throws { try conformTwoWorkersDrainingOneAudienceEndEveryDeliveryExactlyOnce() }
    func testRunLoopSendsQueuedWorkAndStopsWhenAsked() throws { try conformRunLoopSendsQueuedWorkAndStopsWhenAsked() }
    func testStopRequestedReleasesClaimedJobsUntouched() throws { try conformStopRequestedReleasesClaimedJobsUntouched() }

    // The scrape scenario of `MetricsServerTests.swift`: a worker's loop on PostgreSQL sessions, counted.
    func testScrapeShowsClaimsAndDeliveriesOfARun() throws { try conformScrapeShowsClaimsAndDeliveriesOfARun() }
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

/// `LiveWebPushGuardScenarios` (LiveWebPushGuardTests.swift, run there on the in-memory store) on
/// PostgreSQL: VAPID sets sealed by `CredentialStore`, their verdicts written with the records; and
/// `pushfleet apps vapid create`, which stores a set through the database the worker reads.
final class PGLiveWebPushGuardTests: LiveWebPushGuardScenarios {
    override class var backend: Backend { .postgres }
    func testVAPIDKeyRefused403InvalidatesCredentialsOnceKeepsDevicesThenFailsWithoutRequestUntilReplacedR_APP_4() throws {
        try vapidKeyRefused403InvalidatesCredentialsOnceKeepsDevicesThenFailsWithoutRequestUntilReplacedR_APP_4()
    }
    func testNoVAPIDSetFailsLiveWebDeliveryCredentialsInvalidWithoutRequestR_APP_4() throws {
        try noVAPIDSetFailsLiveWebDeliveryCredentialsInvalidWithoutRequestR_APP_4()
    }
    func testEndpointResolvingToLoopbackWithoutAllowLoopbackFailsInvalidSubscriptionWithoutRequestR_DEV_1() throws {
        try endpointResolvingToLoopbackWithoutAllowLoopbackFailsInvalidSubscriptionWithoutRequestR_DEV_1()
    }
    func testTestModeWebDevicesGoToTheSimulatorEncryptedWithoutCredentialsR_MODE_2_R_SEND_11() throws {
        try inTestModeWebDevicesGoToTheSimulatorEncryptedWithoutCredentialsR_MODE_2_R_SEND_11()
    }
    func testWebpushCredentialValidationRefusesBadSubjectAndBadKeyR_APP_3() throws {
        try webpushCredentialValidationRefusesBadSubjectAndBadKeyR_APP_3()
    }

    func testVapidCreateCommandStoresASetWhoseKeyTheWorkerSignsWith() throws {
        let exe = LiveWebPushCLI.executable
        guard FileManager.default.isExecutableFile(atPath: exe) else {
            return XCTFail("pushfleet is not built at \(exe) (swift build first)")
        }
        let rawKey = try SecretBox.generateKey()
        keys = try CredentialKeys(current: rawKey)
        try makeWorker()
        let env = ["DATABASE_URL": database.conninfo, "PUSHFLEET_CREDENTIALS_KEY": Base64URL.encode(rawKey)]
        let help = try LiveWebPushCLI.run(exe, ["apps", "vapid", "create", "--help"], environment: env)
        XCTAssertEqual(help.status, 0, help.output)
        XCTAssertTrue(help.output.contains("applicationServerKey"), help.output)
        let keyless = try LiveWebPushCLI.run(exe, ["apps", "vapid", "create", appID.uuidString, "--subject", Self.subject],
                                             environment: ["DATABASE_URL": database.conninfo])
        XCTAssertNotEqual(keyless.status, 0)
        XCTAssertTrue(keyless.output.contains("VALIDATION_ERROR"), keyless.output)
        XCTAssertNil(try credential(.webpush), "nothing stored without a sealing key")
        let run = try LiveWebPushCLI.run(exe, ["apps", "vapid", "create", appID.uuidString, "--subject", Self.subject],
                                         environment: env)
        XCTAssertEqual(run.status, 0, run.output)
        let printed = try XCTUnwrap(run.output.split(separator: "\n").first { $0.hasPrefix("applicationServerKey: ") })
        let serverKey = String(printed.dropFirst("applicationServerKey: ".count))
        XCTAssertEqual(serverKey.count, 87)
        XCTAssertEqual(Base64URL.decode(serverKey)?.first, 0x04)

        let set = try XCTUnwrap(try CredentialStore(connection: conn, keys: keys).load(appID: appID).first { $0.summary.kind == .webpush })
        XCTAssertEqual(set.summary.identifiers["subject"], Self.subject)
        XCTAssertEqual(set.summary.identifiers["public_key"], serverKey)
        XCTAssertEqual(try VAPIDKeys(privateKeyPEM: String(decoding: set.secret, as: UTF8.self)).publicKeyBase64URL, serverKey)
        XCTAssertFalse(run.output.contains("PRIVATE"), "the private key is never printed")

        // A subscription made with that applicationServerKey gets a notification signed by it.
        let s = try fake.take("ok")
        let d = try webDevice(s)
        let n = try send()
        try drain()
        XCTAssertEqual(try delivery(n, d).status, "sent")
        XCTAssertEqual((fake.log(path: s.path).first?["vapid"] as? [String: Any])?["k"] as? String, serverKey)
    }
}
