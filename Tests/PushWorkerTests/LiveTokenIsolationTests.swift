import Foundation
import XCTest
import PushCore
import PushCrypto
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Issue 11: a provider token is shared only between credential sets holding the same key. Two apps
/// carry the same (public) APNs team and key ids, or the same FCM `client_email`, but different
/// private keys; the fakes trust only one of them. In both orders, each app's requests carry a token
/// made with its own key: the wrong set ends `CREDENTIALS_INVALID` (R-PRV-3) and is never verified,
/// the right one is verified and untouched. The scenarios are shared by both stores:
/// `LiveTokenIsolationTests` runs them on the in-memory store (the worker's router and token cache
/// keep the sets apart), `PGTokenIsolationTests` (in LiveTokenCacheTests.swift, with the
/// fleet-shared cache's other tests) on PostgreSQL, where the tokens are also stored per signing key.
class TokenIsolationScenarios: LiveTestCase {

    // MARK: - APNs

    func checkAPNsIsolation(rightFirst: Bool) throws {
        let (right, wrong, rightTokens, wrongTokens) = try twoApps(.ios) { app, isRight in
            try setAPNs(app: app, p8File: isRight ? "apns_key.p8" : "apns_other.p8")
        }
        try sendTwoRoundsAndCheckOnlyTheWrongSetFails(.apns, right: right, wrong: wrong, rightFirst: rightFirst,
                                                      reason: "InvalidProviderToken")
        XCTAssertEqual(try events("push_device.deactivated", app: wrong).count, 0, "devices untouched")

        // What APNs saw: every JWT verifies with its own app's key and not with the other's.
        let rightKey = try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_key.p8"), keyId: LiveFakes.keyID)
        let wrongKey = try JWTSigner.es256(privateKeyPEM: try FakeMaterial.text("apns_other.p8"), keyId: LiveFakes.keyID)
        let accepted = pushes(fakes.apns)
        XCTAssertEqual(accepted.count, 6, "two rounds of three right devices")
        for line in accepted {
            XCTAssertTrue(rightTokens.contains(line["token"] as? String ?? ""), "only the right app's pushes are accepted")
            let jwt = try XCTUnwrap(line["jwt"] as? String)
            XCTAssertTrue(rightKey.verify(jwt))
            XCTAssertFalse(wrongKey.verify(jwt))
        }
        let refused = pushes(fakes.apns, kind: "jwt_refused")
        XCTAssertEqual(refused.count, 3, "the wrong app's first round; the second fails at planning (R-APP-4)")
        for line in refused {
            XCTAssertTrue(wrongTokens.contains(line["token"] as? String ?? ""))
            XCTAssertEqual(line["reason"] as? String, "InvalidProviderToken")
            let jwt = try XCTUnwrap(line["jwt"] as? String)
            XCTAssertTrue(wrongKey.verify(jwt), "the wrong app signed with its own key")
            XCTAssertFalse(rightKey.verify(jwt), "never with the right app's token")
        }
    }

    // MARK: - FCM

    func checkFCMIsolation(rightFirst: Bool) throws {
        let (right, wrong, rightTokens, wrongTokens) = try twoApps(.android) { app, isRight in
            try setFCM(app: app, keyFile: isRight ? "sa_key.pem" : "sa_other_key.pem")
        }
        let issuedBefore = fakes.fcm.log("oauth").count, refusedBefore = fakes.fcm.log("oauth_refused").count
        try sendTwoRoundsAndCheckOnlyTheWrongSetFails(.fcm, right: right, wrong: wrong, rightFirst: rightFirst,
                                                      reason: "oauth:invalid_grant")

        // What Google saw: one access token, issued for an assertion of the right key, carried by
        // every accepted push; the wrong key's assertion was refused once and it sent nothing.
        let rightKey = try JWTSigner.rs256(privateKeyPEM: try FakeMaterial.text("sa_key.pem"))
        let wrongKey = try JWTSigner.rs256(privateKeyPEM: try FakeMaterial.text("sa_other_key.pem"))
        let issued = Array(fakes.fcm.log("oauth").dropFirst(issuedBefore))
        XCTAssertEqual(issued.count, 1)
        let assertion = try XCTUnwrap(issued.first?["assertion"] as? String)
        XCTAssertTrue(rightKey.verify(assertion))
        XCTAssertFalse(wrongKey.verify(assertion))
        let refused = Array(fakes.fcm.log("oauth_refused").dropFirst(refusedBefore))
        XCTAssertEqual(refused.count, 1, "the wrong set is refused once, then fails at planning (R-APP-4)")
        XCTAssertTrue(wrongKey.verify(try XCTUnwrap(refused.first?["assertion"] as? String)))
        let accepted = pushes(fakes.fcm)
        XCTAssertEqual(Set(accepted.compactMap { $0["token"] as? String }), rightTokens)
        XCTAssertEqual(accepted.count, 6)
        XCTAssertEqual(Set(accepted.compactMap { ($0["oauth_n"] as? NSNumber)?.intValue }),
                       [try XCTUnwrap((issued.first?["n"] as? NSNumber)?.intValue)])
        XCTAssertTrue(Set(accepted.compactMap { $0["token"] as? String }).isDisjoint(with: wrongTokens))
    }

    // MARK: - Both

    /// The test's app (right) and a second one (wrong), each given its set by `set(app, isRight)` and
    /// three live `platform` devices (users `r0…r2` and `w0…w2`); returns their device tokens.
    private func twoApps(_ platform: Platform, set: (UUID, Bool) throws -> Void) throws
        -> (right: UUID, wrong: UUID, rightTokens: Set<String>, wrongTokens: Set<String>) {
        let right = appID!, wrong = try world.createApp(requireEncryption: false, name: "wrong-\(tag)")   // keeps its events
        try set(right, true)
        try set(wrong, false)
        let rightTokens = try (0..<3).map { try device("ok", platform: platform, user: "r\($0)", n: $0, app: right).token }
        let wrongTokens = try (0..<3).map { try device("ok", platform: platform, user: "w\($0)", n: 100 + $0, app: wrong).token }
        return (right, wrong, Set(rightTokens), Set(wrongTokens))
    }

    /// Two rounds of one notification per app (three users each; `r…` for the right app, `w…` for the
    /// wrong one), in the given order, the worker draining after each; the second round runs with
    /// every token already cached. Then: the right set verified, all its deliveries sent, no event;
    /// the wrong set `invalid` with `reason`, never verified, one event, all its deliveries
    /// `CREDENTIALS_INVALID` (R-PRV-3; the second round's at planning, R-APP-4).
    private func sendTwoRoundsAndCheckOnlyTheWrongSetFails(_ kind: CredentialKind, right: UUID, wrong: UUID,
                                                           rightFirst: Bool, reason: String) throws {
        let order = rightFirst ? [(right, "r"), (wrong, "w")] : [(wrong, "w"), (right, "r")]
        var notifications: [UUID: [UUID]] = [right: [], wrong: []]
        for round in 0..<2 {
            for (app, prefix) in order {
                notifications[app]!.append(try send(users: (0..<3).map { "\(prefix)\($0)" }, title: "round \(round)", app: app))
                try drain()
            }
        }
        for n in notifications[right]! {
            XCTAssertEqual(try report(n).deliveries.map(\.status), ["sent", "sent", "sent"], "right first: \(rightFirst)")
        }
        let rightSet = try XCTUnwrap(try credential(kind, app: right))
        XCTAssertEqual(rightSet.state, .verified)
        XCTAssertNil(rightSet.invalidReason)
        XCTAssertEqual(try events("push_app.credentials_invalid", app: right).count, 0)
        for n in notifications[wrong]! {
            XCTAssertEqual(try report(n).deliveries.map(\.errorCode), Array(repeating: "CREDENTIALS_INVALID", count: 3))
        }
        let wrongSet = try XCTUnwrap(try credential(kind, app: wrong))
        XCTAssertEqual(wrongSet.state, .invalid)
        XCTAssertEqual(wrongSet.invalidReason, reason)
        XCTAssertNil(wrongSet.firstAcceptedAt, "never verified")
        XCTAssertEqual(try events("push_app.credentials_invalid", app: wrong).count, 1)
    }
}

/// The isolation scenarios on the in-memory store (`MemoryWorld`: its credential sets, the worker's
/// own token cache); on PostgreSQL in `PGTokenIsolationTests`.
final class LiveTokenIsolationTests: TokenIsolationScenarios {
    func testAPNsSetsWithSameTeamAndKeyIdsButAnotherKeyRightOneFirstR_PRV_3() throws { try checkAPNsIsolation(rightFirst: true) }
    func testAPNsSetsWithSameTeamAndKeyIdsButAnotherKeyWrongOneFirstR_PRV_3() throws { try checkAPNsIsolation(rightFirst: false) }
    func testFCMSetsWithSameClientEmailButAnotherKeyRightOneFirstR_PRV_3() throws { try checkFCMIsolation(rightFirst: true) }
    func testFCMSetsWithSameClientEmailButAnotherKeyWrongOneFirstR_PRV_3() throws { try checkFCMIsolation(rightFirst: false) }
}
