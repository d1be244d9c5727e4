import Foundation
import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// R-PRV-1..3, R-DEV-8, R-MODE-2 (Apple's "Handling notification responses from APNs", Firebase's
/// "ErrorCode", RFC 8030): every row of the answer table.
final class ProviderAnswerTableTests: XCTestCase {
    private enum Want: Equatable {
        case sent, unregistered, invalidToken, appMismatch, credentials, tooLarge, transient, deferral, providerError
    }

    private func want(_ outcome: AnswerOutcome) -> Want {
        switch outcome {
        case .sent: return .sent
        case .deactivateDevice(let reason, _): return reason == .unregistered ? .unregistered : .invalidToken
        case .appMismatch: return .appMismatch
        case .credentialsInvalid: return .credentials
        case .payloadTooLarge: return .tooLarge
        case .transient: return .transient
        case .deferral: return .deferral
        case .failed(let error):
            XCTAssertEqual(error.code, .providerError)
            return .providerError
        }
    }

    private func answer(_ status: Int, _ reason: String?, retryAfter: Double? = nil) -> ProviderAnswer {
        ProviderAnswer(transport: .response, httpStatus: status, reason: reason, retryAfterSeconds: retryAfter)
    }

    /// APNs reasons with their statuses (Apple's "Handling notification responses from APNs") and the
    /// expected meaning.
    private let apnsRows: [(String, Int, Want)] = [
        ("Unregistered", 410, .unregistered), ("ExpiredToken", 410, .unregistered),
        ("BadDeviceToken", 400, .invalidToken), ("DeviceTokenNotForTopic", 400, .appMismatch),
        ("TopicDisallowed", 400, .credentials), ("InvalidProviderToken", 403, .credentials),
        ("BadEnvironmentKeyIdInToken", 403, .credentials), ("BadEnvironmentKeyInToken", 403, .credentials),
        ("BadCertificate", 403, .credentials), ("BadCertificateEnvironment", 403, .credentials),
        ("MissingProviderToken", 403, .credentials), ("BadTopic", 400, .credentials), ("MissingTopic", 400, .credentials),
        ("Forbidden", 403, .credentials), ("PayloadTooLarge", 413, .tooLarge),
        ("ExpiredProviderToken", 403, .transient), ("IdleTimeout", 400, .transient), ("UnrelatedKeyIdInToken", 403, .transient),
        ("InternalServerError", 500, .transient), ("ServiceUnavailable", 503, .transient), ("Shutdown", 503, .transient),
        ("TooManyProviderTokenUpdates", 429, .deferral), ("TooManyRequests", 429, .deferral),
        ("BadCollapseId", 400, .providerError), ("BadExpirationDate", 400, .providerError), ("BadMessageId", 400, .providerError),
        ("BadPriority", 400, .providerError), ("DuplicateHeaders", 400, .providerError), ("InvalidPushType", 400, .providerError),
        ("MissingDeviceToken", 400, .providerError), ("PayloadEmpty", 400, .providerError), ("BadPath", 404, .providerError),
        ("MethodNotAllowed", 405, .providerError),
    ]

    private let fcmRows: [(String, Int, Want)] = [
        ("UNREGISTERED", 404, .unregistered), ("SENDER_ID_MISMATCH", 403, .appMismatch),
        ("THIRD_PARTY_AUTH_ERROR", 401, .credentials), ("PERMISSION_DENIED", 403, .credentials),
        ("QUOTA_EXCEEDED", 429, .deferral), ("RESOURCE_EXHAUSTED", 429, .deferral),
        ("UNAVAILABLE", 503, .transient), ("INTERNAL", 500, .transient), ("UNAUTHENTICATED", 401, .transient),
        ("DEADLINE_EXCEEDED", 504, .transient),
    ]

    func testEveryAPNsRow() {
        XCTAssertEqual(Set(apnsRows.map(\.0)), Set(APNsAnswerRules.reasons.keys), "every table row is tested")
        for (reason, status, expected) in apnsRows {
            let outcome = ProviderAnswerTable.classify(answer(status, reason), provider: .apns, credentialsVerified: true)
            XCTAssertEqual(want(outcome), expected, reason)
        }
    }

    func testEveryFCMRow() {
        XCTAssertEqual(Set(fcmRows.map(\.0)), Set(FCMAnswerRules.reasons.keys), "every table row is tested")
        for (reason, status, expected) in fcmRows {
            let outcome = ProviderAnswerTable.classify(answer(status, reason), provider: .fcm, credentialsVerified: true)
            XCTAssertEqual(want(outcome), expected, reason)
        }
    }

    /// R-PRV-1: FCM INVALID_ARGUMENT naming the token is INVALID_TOKEN; "message too big" is too large; else request error.
    func testFCMInvalidArgumentSplits() {
        let token = ProviderAnswer(transport: .response, httpStatus: 400, reason: "INVALID_ARGUMENT", namesToken: true)
        XCTAssertEqual(ProviderAnswerTable.classify(token, provider: .fcm, credentialsVerified: true),
                       .deactivateDevice(reason: .invalidToken, verdictAt: nil))
        let big = ProviderAnswer(transport: .response, httpStatus: 400, reason: "INVALID_ARGUMENT", rawDetail: "Message too big")
        XCTAssertEqual(ProviderAnswerTable.classify(big, provider: .fcm, credentialsVerified: true), .payloadTooLarge)
        let other = ProviderAnswer(transport: .response, httpStatus: 400, reason: "INVALID_ARGUMENT", rawDetail: "bad ttl")
        guard case .failed(let error) = ProviderAnswerTable.classify(other, provider: .fcm, credentialsVerified: true) else {
            return XCTFail("not failed")
        }
        XCTAssertEqual(error.code, .providerError)
        XCTAssertTrue(error.message.contains("INVALID_ARGUMENT"))
    }

    func testEveryWebPushStatus() {
        let rows: [(Int, String?, Want)] = [
            (404, nil, .unregistered), (410, nil, .unregistered), (401, nil, .credentials), (403, "BadJwtToken", .credentials),
            (403, nil, .credentials), (400, nil, .providerError), (413, nil, .tooLarge), (429, nil, .deferral),
            (500, nil, .transient), (503, nil, .transient), (418, nil, .providerError),
        ]
        for (status, reason, expected) in rows {
            let outcome = ProviderAnswerTable.classify(answer(status, reason), provider: .webpush, credentialsVerified: true)
            XCTAssertEqual(want(outcome), expected, "\(status) \(reason ?? "")")
        }
        XCTAssertEqual(ProviderAnswerTable.classify(ProviderAnswer(transport: .response, httpStatus: 201, messageId: "loc"),
                                                    provider: .webpush, credentialsVerified: false), .sent(messageId: "loc"))
    }

    /// R-MODE-2: the simulator's answers; app mismatch is always the device's, whatever the credentials.
    func testSimulatorRows() {
        let rows: [(SimulatorReason, Int, AnswerOutcome)] = [
            (.unregistered, 410, .deactivateDevice(reason: .unregistered, verdictAt: nil)),
            (.invalidToken, 400, .deactivateDevice(reason: .invalidToken, verdictAt: nil)),
            (.appMismatch, 400, .appMismatch(blame: .device)),
            (.rateLimited, 429, .deferral(retryAfter: 1)),
            (.unavailable, 503, .transient),
        ]
        XCTAssertEqual(Set(rows.map(\.0)), Set(SimulatorReason.allCases))
        for (reason, status, expected) in rows {
            let raw = answer(status, reason.rawValue, retryAfter: reason == .rateLimited ? 1 : nil)
            XCTAssertEqual(ProviderAnswerTable.classify(raw, provider: .simulator, credentialsVerified: false), expected, "\(reason)")
        }
        XCTAssertEqual(ProviderAnswerTable.classify(ProviderAnswer(transport: .timeout), provider: .simulator, credentialsVerified: false),
                       .transient, "test_timeout")
        XCTAssertEqual(ProviderAnswerTable.classify(answer(200, nil), provider: .simulator, credentialsVerified: false),
                       .sent(messageId: nil), "test_accept")
    }

    /// R-PRV-2: blame follows whether the credentials were verified.
    func testAppMismatchBlameFollowsCredentialsVerified() {
        for provider in [ProviderKind.apns, .fcm] {
            let reason = provider == .apns ? "DeviceTokenNotForTopic" : "SENDER_ID_MISMATCH"
            XCTAssertEqual(ProviderAnswerTable.classify(answer(400, reason), provider: provider, credentialsVerified: true),
                           .appMismatch(blame: .device))
            XCTAssertEqual(ProviderAnswerTable.classify(answer(400, reason), provider: provider, credentialsVerified: false),
                           .appMismatch(blame: .credentials))
        }
    }

    /// R-DEV-8: APNs 410 carries the verdict time; FCM leaves it to the caller (request time).
    func testVerdictTimes() {
        let apns = ProviderAnswer(transport: .response, httpStatus: 410, reason: "Unregistered", timestampMillis: 1_800_000_000_250)
        XCTAssertEqual(ProviderAnswerTable.classify(apns, provider: .apns, credentialsVerified: true),
                       .deactivateDevice(reason: .unregistered, verdictAt: Date(timeIntervalSince1970: 1_800_000_000.25)))
        XCTAssertEqual(ProviderAnswerTable.classify(answer(404, "UNREGISTERED"), provider: .fcm, credentialsVerified: true),
                       .deactivateDevice(reason: .unregistered, verdictAt: nil))
    }

    func testTransportFailuresAreTransient() {
        for provider in [ProviderKind.apns, .fcm, .webpush, .simulator] {
            for transport in [ProviderAnswer.Transport.timeout, .connectionError, .notSent] {
                XCTAssertEqual(ProviderAnswerTable.classify(ProviderAnswer(transport: transport), provider: provider,
                                                            credentialsVerified: true), .transient)
            }
        }
    }

    /// R-DEV-1 / issue 7: an endpoint our guard refused is a final failure, not a transient one.
    func testWebPushEndpointForbiddenIsFinalInvalidSubscription() {
        let refused = ProviderAnswer(transport: .notSent, reason: ProviderAnswerTable.webPushEndpointForbidden,
                                     rawDetail: "address is private")
        let outcome = ProviderAnswerTable.classify(refused, provider: .webpush, credentialsVerified: true)
        guard case .failed(let error) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertEqual(error.code, .invalidSubscription)
        XCTAssertEqual(outcome.ending, .failed(.invalidSubscription))
        XCTAssertEqual(ProviderAnswerTable.classify(ProviderAnswer(transport: .notSent, rawDetail: "dns"), provider: .webpush,
                                                    credentialsVerified: true), .transient)
    }

    /// Issue 11 / R-PRV-3: an FCM access token refused for the set's own key ends the set; a refusal
    /// for another cause (clock, grant type) or an unreachable endpoint stays transient.
    func testFCMOAuthRefusalOfTheKeyIsACredentialsProblem() {
        func oauth(_ error: String?, _ detail: String, provider: ProviderKind = .fcm) -> AnswerOutcome {
            let a = ProviderAnswer(transport: .notSent, reason: error.map { ProviderAnswerTable.fcmOAuthReasonPrefix + $0 },
                                   rawDetail: "oauth: fcm.oauth_failed: token endpoint 400: \(detail)")
            return ProviderAnswerTable.classify(a, provider: provider, credentialsVerified: true)
        }
        XCTAssertEqual(oauth("invalid_grant", "invalid_grant Invalid JWT Signature."),
                       .credentialsInvalid(reason: "oauth:invalid_grant"))
        XCTAssertEqual(oauth("invalid_grant", "invalid_grant Invalid grant: account not found"),
                       .credentialsInvalid(reason: "oauth:invalid_grant"))
        XCTAssertEqual(oauth("invalid_client", "invalid_client The OAuth client was not found."),
                       .credentialsInvalid(reason: "oauth:invalid_client"))
        XCTAssertEqual(oauth("unauthorized_client", "unauthorized_client"), .credentialsInvalid(reason: "oauth:unauthorized_client"))
        XCTAssertEqual(oauth("invalid_grant", "invalid_grant Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values"),
                       .transient, "a clock out of step is not the set's fault")
        XCTAssertEqual(oauth("unsupported_grant_type", "unsupported_grant_type"), .transient)
        XCTAssertEqual(oauth(nil, "token endpoint unreachable"), .transient)
        XCTAssertEqual(oauth("invalid_grant", "Invalid JWT Signature.", provider: .apns), .transient, "FCM only")
        XCTAssertEqual(oauth("invalid_grant", "invalid_grant Invalid JWT Signature.").ending, .failed(.credentialsInvalid))
    }

    func testSuccessKeepsMessageId() {
        XCTAssertEqual(ProviderAnswerTable.classify(ProviderAnswer(transport: .response, httpStatus: 200, messageId: "apns-id-1"),
                                                    provider: .apns, credentialsVerified: true), .sent(messageId: "apns-id-1"))
    }

    /// Unknown reasons fall back on the status; garbage is PROVIDER_ERROR with the raw reason kept.
    func testUnknownAnswersFallBackOnStatusOrProviderError() {
        XCTAssertEqual(ProviderAnswerTable.classify(answer(503, "SomethingNew"), provider: .apns, credentialsVerified: true), .transient)
        XCTAssertEqual(ProviderAnswerTable.classify(answer(429, nil, retryAfter: 7), provider: .fcm, credentialsVerified: true),
                       .deferral(retryAfter: 7))
        XCTAssertEqual(ProviderAnswerTable.classify(answer(413, nil), provider: .fcm, credentialsVerified: true), .payloadTooLarge)
        XCTAssertEqual(ProviderAnswerTable.classify(answer(502, nil), provider: .fcm, credentialsVerified: true), .transient)
        let garbage = ProviderAnswer(transport: .response, httpStatus: 400, reason: "WeirdNewReason")
        guard case .failed(let error) = ProviderAnswerTable.classify(garbage, provider: .apns, credentialsVerified: true) else {
            return XCTFail("not failed")
        }
        XCTAssertEqual(error.code, .providerError)
        XCTAssertTrue(error.message.contains("WeirdNewReason"))
        let noStatus = ProviderAnswer(transport: .response, httpStatus: nil)
        XCTAssertEqual(ProviderAnswerTable.classify(noStatus, provider: .apns, credentialsVerified: true), .transient)
        let raw = ProviderAnswer(transport: .response, httpStatus: 302, rawDetail: "<html>")
        guard case .failed(let e2) = ProviderAnswerTable.classify(raw, provider: .fcm, credentialsVerified: true) else {
            return XCTFail("not failed")
        }
        XCTAssertTrue(e2.message.contains("<html>"))
    }

    /// Outcomes map to ledger endings (R-SEND-9).
    func testOutcomeEndings() {
        XCTAssertEqual(AnswerOutcome.sent(messageId: nil).ending, .sent)
        XCTAssertEqual(AnswerOutcome.deactivateDevice(reason: .invalidToken, verdictAt: nil).ending, .failed(.invalidToken))
        XCTAssertEqual(AnswerOutcome.appMismatch(blame: .device).ending, .appMismatch(.device))
        XCTAssertEqual(AnswerOutcome.credentialsInvalid(reason: "x").ending, .failed(.credentialsInvalid))
        XCTAssertEqual(AnswerOutcome.payloadTooLarge.ending, .failed(.pushPayloadTooLarge))
        XCTAssertNil(AnswerOutcome.transient.ending)
        XCTAssertNil(AnswerOutcome.deferral(retryAfter: 1).ending)
        XCTAssertEqual(AnswerOutcome.failed(PushError(.providerError, "x")).ending, .failed(.providerError))
    }
}

/// R-DEV-8: a verdict older than the latest registration must not deactivate.
final class DeviceVerdictOrderingTests: XCTestCase {
    func testOnlyStrictlyNewerVerdictDeactivates() {
        let registered = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertTrue(DeviceVerdictOrdering.shouldDeactivate(verdictAt: registered.addingTimeInterval(0.001), lastRegisteredAt: registered))
        XCTAssertFalse(DeviceVerdictOrdering.shouldDeactivate(verdictAt: registered, lastRegisteredAt: registered))
        XCTAssertFalse(DeviceVerdictOrdering.shouldDeactivate(verdictAt: registered.addingTimeInterval(-60), lastRegisteredAt: registered))
    }
}
