import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import PushStore
import XCTest

/// `AcceptanceService.send` (R-SEND-1, R-SEND-7, R-API-5, R-API-6): what it stores, the exact size
/// check against the targeted devices, and idempotency replays.
final class SendAcceptanceTests: AcceptanceTestCase {
    private func request(_ app: UUID, users: [String] = ["alice"], key: String? = nil,
                         _ configure: (inout SendRequest) -> Void = { _ in }) -> SendRequest {
        var r = SendRequest(appID: app, mode: .test, userIDs: users)
        r.title = "Your code"
        r.body = "123456"
        r.data = #"{"order": "42",  "n" : 1}"#
        r.idempotencyKey = key
        configure(&r)
        return r
    }

    func testSendStoresTheNotificationWithCompactDataAndChargesItsDevices() throws {
        let app = try makeApp()
        try device(app, user: "alice", platform: "ios")
        try device(app, user: "alice", platform: "android")
        let r = try service.send(request(app))
        XCTAssertTrue(r.created)
        XCTAssertFalse(r.replayed)
        let row = try conn.exec("SELECT data, title, mode FROM push_notifications WHERE id = $1", [.uuid(r.notificationID)])
        XCTAssertEqual(try row.string(0, "data"), #"{"order":"42","n":1}"#, "compact, key order kept (R-ENC-9)")
        XCTAssertEqual(try row.string(0, "title"), "Your code")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_ledger WHERE notification_id = $1 AND kind = 'charge'",
                                 [.uuid(r.notificationID)]), 2)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_jobs WHERE notification_id = $1", [.uuid(r.notificationID)]), 1)
    }

    func testAnUnknownOrDeletedAppIsNotFoundAndNothingIsWritten() throws {
        assertRefused(.notFound, field: "app_id") { _ = try service.send(request(UUID())) }
        let app = try makeApp()
        XCTAssertTrue(try AppStore(connection: conn).appDelete(id: app))
        assertRefused(.notFound, field: "app_id") { _ = try service.send(request(app)) }
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_notifications"), 0)
    }

    /// R-SEND-7: the largest payload among the targeted devices decides, with the exact bytes to cut.
    func testTheExactSizeRuleRefusesWithTheBytesToCutForTheLargestTargetedPayload() throws {
        let app = try makeApp()
        try device(app, user: "alice", platform: "android")
        let key = try P256PrivateKey.generate()
        try device(app, user: "alice", platform: "ios", key: key)
        var big = request(app) { $0.body = String(repeating: "b", count: 3000) }
        do {
            _ = try service.send(big)
            XCTFail("an encrypted iOS payload of 3000+ content bytes cannot fit")
        } catch let e as AcceptanceError {
            XCTAssertEqual(e.code, .pushPayloadTooLarge)
            XCTAssertNil(e.field)
            let cut = try XCTUnwrap(e.bytesToCut)
            big.body = String(repeating: "b", count: 3000 - cut)
            XCTAssertTrue(try service.send(big).created, "cutting exactly bytes_to_cut fits")
            big.body = String(repeating: "b", count: 3000 - cut + 1)
            assertRefused(.pushPayloadTooLarge) { _ = try service.send(big) }
        }
    }

    /// With no device at all, content that no payload kind could carry is still refused, with the
    /// bytes to cut of the smallest measure (FCM plaintext).
    func testContentNoPayloadKindCanCarryIsRefusedWhateverTheAudience() throws {
        let app = try makeApp()
        let fits = request(app, users: ["nobody"]) { $0.data = #"{"order":"42"}"#; $0.body = String(repeating: "x", count: 4080) }
        XCTAssertTrue(try service.send(fits).created, "9 + 4080 + 5 + 2 = 4096 bytes: FCM plaintext carries it")
        let over = request(app, users: ["nobody"]) { $0.data = #"{"order":"42"}"#; $0.body = String(repeating: "x", count: 4081) }
        do {
            _ = try service.send(over)
            XCTFail("4097 bytes in the smallest measure")
        } catch let e as AcceptanceError {
            XCTAssertEqual(e.code, .pushPayloadTooLarge)
            XCTAssertEqual(e.bytesToCut, 1)
        }
    }

    /// R-API-5: the same request again answers the first notification; send_at may differ.
    func testAReplayAnswersTheFirstNotificationWhateverItsSendAt() throws {
        let app = try makeApp()
        try device(app, user: "alice", platform: "ios")
        let first = try service.send(request(app, key: "k1") { $0.sendAt = Date().addingTimeInterval(30) })
        let again = try service.send(request(app, key: "k1") { $0.sendAt = Date().addingTimeInterval(31) })
        XCTAssertTrue(first.created)
        XCTAssertFalse(again.created)
        XCTAssertTrue(again.replayed)
        XCTAssertEqual(again.notificationID, first.notificationID)
        let reordered = try service.send(request(app, users: ["bob", "alice", "alice"], key: "k2"))
        XCTAssertEqual(try service.send(request(app, users: ["alice", "bob"], key: "k2")).notificationID,
                       reordered.notificationID, "user ids compare as a set")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_notifications"), 2)
    }

    /// R-API-5: a key reused with any other field different is IDEMPOTENCY_KEY_REUSED naming it,
    /// and nothing new is written.
    func testAKeyReusedWithOtherContentIsRefusedNamingTheField() throws {
        let app = try makeApp()
        let d = try device(app, user: "alice", platform: "ios")
        let first = try service.send(request(app, key: "reused"))
        let changes: [(String, (inout SendRequest) -> Void)] = [
            ("user_ids", { $0.userIDs = ["alice", "bob"] }),
            ("device_ids", { $0.deviceIDs = [d] }),
            ("title", { $0.title = "Your c0de" }),
            ("body", { $0.body = nil }),
            ("data", { $0.data = #"{"order":"43","n":1}"# }),
            ("badge", { $0.badge = 2 }),
            ("sound", { $0.sound = "default" }),
            ("thread_id", { $0.threadID = "t" }),
            ("collapse_key", { $0.collapseKey = "c" }),
            ("priority", { $0.priority = "normal" }),
            ("ttl", { $0.ttlSeconds = 60 }),
            ("sms_fallback.phone", { $0.smsFallback = .init(phone: "+33600000000", text: "hi") }),
        ]
        for (field, change) in changes {
            do {
                _ = try service.send(request(app, key: "reused", change))
                XCTFail("\(field) changed, yet accepted")
            } catch let e as AcceptanceError {
                XCTAssertEqual(e.code, .idempotencyKeyReused, field)
                XCTAssertEqual(e.field, "idempotency_key", field)
                // The first notification named by its id (R-API-4), as the API and the CLI name it.
                let shown = PrefixedID.format(.notification, first.notificationID)
                XCTAssertTrue(e.message.contains(field) && e.message.contains(shown), e.message)
                // The notification id is quoted on purpose; a random one may hold "43" itself.
                let quoted = e.message.replacingOccurrences(of: shown, with: "")
                XCTAssertFalse(quoted.contains("c0de") || quoted.contains("43"), "no content quoted: \(e.message)")
            }
        }
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_notifications"), 1)
        XCTAssertEqual(try service.send(request(app, key: "reused")).notificationID, first.notificationID,
                       "the true replay is still answered")
    }

    /// A replay is judged against its first notification, not against the devices of today: a
    /// device that registered a key since (its encrypted payload would not fit) does not turn a
    /// replay into PUSH_PAYLOAD_TOO_LARGE; a new key with that content is refused.
    func testAReplayIsAnsweredEvenWhenTheAudienceNoLongerFitsTheContent() throws {
        let app = try makeApp()
        let body = String(repeating: "b", count: 3500)
        try device(app, user: "alice", platform: "android")
        let first = try service.send(request(app, key: "k") { $0.body = body; $0.data = nil })
        try device(app, user: "alice", platform: "ios", key: try P256PrivateKey.generate())
        XCTAssertEqual(try service.send(request(app, key: "k") { $0.body = body; $0.data = nil }).notificationID,
                       first.notificationID)
        assertRefused(.pushPayloadTooLarge) { _ = try service.send(request(app, key: "other") { $0.body = body; $0.data = nil }) }
    }

    func testCancelIsScopedToItsAppAndModeAndRefusedOnceTheSendTimeCame() throws {
        let app = try makeApp()
        try device(app, user: "alice", platform: "ios")
        let n = try service.send(request(app) { $0.sendAt = Date().addingTimeInterval(3600) }).notificationID
        assertRefused(.notFound) { try service.cancelNotification(id: n, mode: .live) }
        assertRefused(.notFound) { try service.cancelNotification(id: n, appID: UUID()) }
        assertRefused(.notFound) { try service.cancelNotification(id: UUID()) }
        try service.cancelNotification(id: n, appID: app, mode: .test)
        XCTAssertEqual(try conn.exec("SELECT status FROM push_notifications WHERE id = $1", [.uuid(n)]).string(0, 0), "cancelled")
        assertRefused(.notCancellable) { try service.cancelNotification(id: n) }
    }

    /// `audience: "users"` (what notification answers say of a user list) is that audience, the same
    /// as no audience: stored and charged as the users of `user_ids` (the stored audience is the
    /// user list's), a replay without the field answers it; an unknown audience's refusal lists the
    /// accepted values; `platforms` without `audience: all` says that it narrows only that audience.
    func testAudienceUsersIsTheUserListAndAudienceRefusalsSayWhatIsAccepted() throws {
        let app = try makeApp()
        try device(app, user: "alice", platform: "ios")
        let first = try service.send(request(app, key: "k-users") { $0.audience = "users" })
        XCTAssertTrue(first.created)
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_ledger WHERE notification_id = $1 AND kind = 'charge'",
                                 [.uuid(first.notificationID)]), 1, "charged at acceptance, as a user list is")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_notifications WHERE id = $1 AND audience IS NULL",
                                 [.uuid(first.notificationID)]), 1, "stored as the user list")
        let replay = try service.send(request(app, key: "k-users"))
        XCTAssertFalse(replay.created)
        XCTAssertEqual(replay.notificationID, first.notificationID)

        func message(_ configure: (inout SendRequest) -> Void) -> (field: String?, message: String)? {
            do {
                _ = try service.send(request(app, configure))
                return nil
            } catch let e as AcceptanceError {
                return (e.field, e.message)
            } catch {
                return ("unexpected", "\(error)")
            }
        }
        let unknown = message { $0.audience = "everyone" }
        XCTAssertEqual(unknown?.field, "audience")
        XCTAssertEqual(unknown?.message, "audience: must be all (every active device of the app in its mode), "
                       + "users (the users of user_ids, as when absent) or absent")
        for audience in [nil, "users"] {
            let narrowed = message { $0.audience = audience; $0.platforms = ["ios"] }
            XCTAssertEqual(narrowed?.field, "platforms")
            XCTAssertEqual(narrowed?.message, "platforms: narrows only a whole-app audience: give audience all with it, "
                           + "or leave platforms out to address the users of user_ids")
        }
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_notifications"), 1, "nothing refused was written")
    }
}
