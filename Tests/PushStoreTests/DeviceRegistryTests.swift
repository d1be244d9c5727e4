import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore

/// The registry against a real database: the invariants of `push_register_device` (sql/0003)
/// seen through `DeviceRegistry` (R-DEV-2..8, R-MODE-1).
final class DeviceRegistryTests: RegistryTestCase {
    // MARK: - R-DEV-2 upsert and move

    func testRDEV2RegisteringTheSameTokenAgainUpdatesTheSameDevice() throws {
        let first = try register(iosDevice("tok_a"))
        XCTAssertTrue(first.created)
        XCTAssertFalse(first.reactivated)
        XCTAssertEqual(first.evicted, [])
        let again = try register(iosDevice("tok_a"))
        XCTAssertEqual(again.deviceID, first.deviceID)
        XCTAssertFalse(again.created)
        XCTAssertFalse(again.reactivated)
        XCTAssertEqual(try rowCount(), 1)
        XCTAssertEqual(try counter(), 1)
    }

    func testRDEV2RegisteringUnderAnotherUserMovesTheDevice() throws {
        let first = try register(iosDevice("tok_a", user: "alice"))
        let moved = try register(iosDevice("tok_a", user: "bob"))
        XCTAssertEqual(moved.deviceID, first.deviceID)
        XCTAssertFalse(moved.created)
        XCTAssertEqual(try registry.list(appID: appID, mode: .live, userID: "alice"), [])
        let bobs = try registry.list(appID: appID, mode: .live, userID: "bob")
        XCTAssertEqual(bobs.map(\.id), [first.deviceID])
        XCTAssertEqual(bobs.first?.active, true)
        XCTAssertEqual(try rowCount(), 1)
        XCTAssertEqual(try counter(), 1, "a move changes no app count")
    }

    /// R-DEV-2 (product decision): a token is one provider's: registered again with another
    /// platform it is refused (409 in the API), the device left as it was.
    func testRDEV2SameTokenWithAnotherPlatformIsRefused() throws {
        let first = try register(iosDevice("tok_p", user: "alice"))
        let android = try DeviceRegistration.validate(mode: "live", platform: "android", token: "tok_p", userID: "bob", apnsEnvironment: nil, encryptionPublicKey: .none,
                                                      platforms: ProviderTable.standard.addressing)
        expectPushError(.tokenPlatformConflict) { try self.register(android) }
        let rows = try registry.list(appID: appID, mode: .live, userID: "alice")
        XCTAssertEqual(rows.map(\.id), [first.deviceID], "not moved")
        XCTAssertEqual(rows.first?.platform, "ios")
        XCTAssertEqual(try registry.list(appID: appID, mode: .live, userID: "bob"), [])
        // The same platform registers again; the other mode is another device.
        XCTAssertEqual(try register(iosDevice("tok_p", user: "alice")).deviceID, first.deviceID)
        let otherMode = try DeviceRegistration.validate(mode: "test", platform: "android", token: "tok_p", userID: "bob", apnsEnvironment: nil, encryptionPublicKey: .none,
                                                        platforms: ProviderTable.standard.addressing)
        XCTAssertTrue(try register(otherMode).created)
    }

    func testRDEV2WebDevicesUpsertOnTheirEndpoint() throws {
        let endpoint = "https://updates.push.services.mozilla.com/wpush/v2/abc"
        let first = try register(webDevice(endpoint))
        let again = try register(webDevice(endpoint, user: "u2"))
        XCTAssertTrue(first.created)
        XCTAssertEqual(again.deviceID, first.deviceID)
        XCTAssertFalse(again.created)
        let listed = try registry.list(appID: appID, mode: .live)
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed.first?.endpoint, endpoint)
        XCTAssertNil(listed.first?.token)
        XCTAssertEqual(listed.first?.userID, "u2")
        XCTAssertNil(listed.first?.encryptionKeyID, "R-SEND-11: web devices take no HPKE key")
    }

    func testUnknownOrDeletedAppIsRefusedWithNotFound() throws {
        expectPushError(.notFound) { _ = try self.registry.register(appID: UUID(), try self.iosDevice("tok_a")) }
        try AppStore(connection: conn).appDelete(id: appID)
        expectPushError(.notFound) { try self.register(self.iosDevice("tok_a")) }
    }

    // MARK: - R-DEV-3 keys are never returned

    func testRDEV3ListNeverReturnsTheKeyOnlyItsKid() throws {
        let key = try P256PrivateKey.generate().publicKey
        try register(iosDevice("tok_a", key: .some(key.base64URL)))
        let listed = try registry.list(appID: appID, mode: .live)
        XCTAssertEqual(listed.first?.encryptionKeyID, key.kid)
        // Nothing the list gives out holds the key in any encoding.
        let json = String(decoding: try JSONEncoder().encode(listed), as: UTF8.self)
        XCTAssertFalse(json.contains(key.base64URL))
        XCTAssertFalse(json.contains(Base64URL.encode(key.raw.dropFirst())))
        XCTAssertFalse(json.contains(Data(key.raw).base64EncodedString()))
        XCTAssertFalse(RegistryQueries.listDevices.contains("public_key"), "the list query must not read keys")
        XCTAssertFalse(Mirror(reflecting: listed[0]).children.contains { $0.value is [UInt8] })
    }

    // MARK: - R-DEV-4 keep, replace, remove

    func testRDEV4AbsentFieldKeepsTheStoredKey() throws {
        let key = try P256PrivateKey.generate().publicKey
        let id = try register(iosDevice("tok_a", key: .some(key.base64URL))).deviceID
        try register(iosDevice("tok_a", key: .none))
        let stored = try storedKey(id)
        XCTAssertEqual(stored.raw, key.raw)
        XCTAssertEqual(stored.kid, key.kid)
    }

    func testRDEV4NewKeyReplacesTheOldAtOnce() throws {
        let old = try P256PrivateKey.generate().publicKey, new = try P256PrivateKey.generate().publicKey
        let id = try register(iosDevice("tok_a", key: .some(old.base64URL))).deviceID
        try register(iosDevice("tok_a", key: .some(new.base64URL)))
        XCTAssertEqual(try storedKey(id).raw, new.raw)
        XCTAssertEqual(try registry.list(appID: appID, mode: .live).first?.encryptionKeyID, new.kid)
    }

    func testRDEV4ExplicitNullRemovesTheKeyAndFiresNoEvent() throws {
        let key = try P256PrivateKey.generate().publicKey
        let id = try register(iosDevice("tok_a", key: .some(key.base64URL))).deviceID
        let eventsBefore = try eventCount()
        try register(iosDevice("tok_a", key: .some(nil)))
        let stored = try storedKey(id)
        XCTAssertNil(stored.raw)
        XCTAssertNil(stored.kid)
        XCTAssertNil(try registry.list(appID: appID, mode: .live).first?.encryptionKeyID)
        XCTAssertEqual(try eventCount(), eventsBefore, "removing a key fires no webhook")
    }

    func testRDEV4NewTokenHasNoKeyUnlessOneIsSent() throws {
        let bare = try register(iosDevice("tok_a")).deviceID
        XCTAssertNil(try storedKey(bare).raw)
        let key = try P256PrivateKey.generate().publicKey
        let keyed = try register(iosDevice("tok_b", key: .some(key.base64URL))).deviceID
        XCTAssertEqual(try storedKey(keyed).kid, key.kid)
    }

    // MARK: - R-DEV-5 twenty per user

    func testRDEV5TwentyFirstDeviceDeactivatesTheLeastRecentlyRegisteredWithOneEvent() throws {
        var ids: [UUID] = []
        for i in 0..<20 { ids.append(try register(iosDevice("tok_\(i)", user: "alice")).deviceID) }
        // Registering tok_0 again makes tok_1 the least recently registered.
        XCTAssertEqual(try register(iosDevice("tok_0", user: "alice")).evicted, [])
        XCTAssertEqual(try deactivationEvents(reason: "DEVICE_LIMIT"), [])
        let result = try register(iosDevice("tok_20", user: "alice"))
        XCTAssertTrue(result.created)
        XCTAssertEqual(result.evicted, [ids[1]])
        XCTAssertEqual(try deactivationEvents(reason: "DEVICE_LIMIT"), [ids[1]])
        XCTAssertEqual(try activeCount(user: "alice"), 20)
        let evicted = try registry.list(appID: appID, mode: .live, userID: "alice", active: false)
        XCTAssertEqual(evicted.map(\.id), [ids[1]])
        XCTAssertEqual(evicted.first?.deactivationReason, "DEVICE_LIMIT")
        XCTAssertNotNil(evicted.first?.deactivatedAt)
        XCTAssertEqual(try counter(), 20, "the counter follows evictions")
    }

    func testRDEV5EventPayloadNamesDeviceUserModeAndReason() throws {
        for i in 0..<21 { try register(iosDevice("tok_\(i)", user: "alice", mode: .test)) }
        let r = try conn.exec("SELECT payload FROM push_events WHERE app_id = $1 AND type = 'push_device.deactivated'",
                              [.uuid(appID)])
        XCTAssertEqual(r.rowCount, 1)
        let payload = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.string(0, "payload").utf8))
                                    as? [String: String])
        XCTAssertEqual(payload["reason"], "DEVICE_LIMIT")
        XCTAssertEqual(payload["user_id"], "alice")
        XCTAssertEqual(payload["mode"], "test")
        let listed = try registry.list(appID: appID, mode: .test, active: false)
        XCTAssertEqual(payload["device_id"], listed.first?.id.uuidString.lowercased())
    }

    func testRDEV5LimitCountsOnlyTheUsersActiveDevicesOfOneMode() throws {
        for i in 0..<20 { try register(iosDevice("tok_\(i)", user: "alice")) }
        // Other users, the other mode, and a deleted device of alice's do not count against her 20.
        try register(iosDevice("bob_1", user: "bob"))
        try register(iosDevice("test_1", user: "alice", mode: .test))
        let doomed = try registry.list(appID: appID, mode: .live, userID: "alice").first!.id
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: doomed))
        XCTAssertEqual(try register(iosDevice("tok_new", user: "alice")).evicted, [])
        XCTAssertEqual(try activeCount(user: "alice"), 20)
        XCTAssertEqual(try deactivationEvents(reason: "DEVICE_LIMIT"), [])
    }

    func testRDEV5MovingADeviceToAFullUserEvictsThatUsersOldest() throws {
        var ids: [UUID] = []
        for i in 0..<20 { ids.append(try register(iosDevice("tok_\(i)", user: "alice")).deviceID) }
        let bobs = try register(iosDevice("bob_1", user: "bob")).deviceID
        let moved = try register(iosDevice("bob_1", user: "alice"))
        XCTAssertEqual(moved.deviceID, bobs)
        XCTAssertEqual(moved.evicted, [ids[0]])
        XCTAssertEqual(try activeCount(user: "alice"), 20)
        XCTAssertEqual(try counter(), 20)
        XCTAssertEqual(try activeCount(), 20)
    }

    // MARK: - R-DEV-6 per-app limit

    func testRDEV6NewDeviceBeyondTheAppLimitIsRefusedWithPushDeviceLimit() throws {
        registry.appLimitOverride = 5
        for i in 0..<5 { try register(iosDevice("tok_\(i)", user: "user\(i)")) }
        expectPushError(.pushDeviceLimit) { try self.register(self.iosDevice("tok_5", user: "user5")) }
        XCTAssertEqual(try rowCount(), 5, "the refused device is not stored")
        XCTAssertEqual(try counter(), 5)
        // An active device registers again at the limit, and may move.
        XCTAssertFalse(try register(iosDevice("tok_0", user: "user9")).created)
        // The other mode has its own count.
        XCTAssertTrue(try register(iosDevice("tok_5", user: "user5", mode: .test)).created)
    }

    func testRDEV6AppLimitIsCheckedBeforeTheUserLimit() throws {
        registry.appLimitOverride = 20
        for i in 0..<20 { try register(iosDevice("tok_\(i)", user: "alice")) }
        expectPushError(.pushDeviceLimit) { try self.register(self.iosDevice("tok_20", user: "alice")) }
        XCTAssertEqual(try activeCount(user: "alice"), 20, "no device was displaced by the refused one")
        XCTAssertEqual(try deactivationEvents(reason: "DEVICE_LIMIT"), [])
        XCTAssertEqual(try eventCount(), 0)
        XCTAssertEqual(try counter(), 20)
    }

    func testRDEV6ReactivationCountsAgainstTheAppLimit() throws {
        registry.appLimitOverride = 3
        let ids = try (0..<3).map { try register(iosDevice("tok_\($0)", user: "u\($0)")).deviceID }
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: ids[0]))
        XCTAssertEqual(try counter(), 2)
        try register(iosDevice("tok_3", user: "u3"))
        expectPushError(.pushDeviceLimit) { try self.register(self.iosDevice("tok_0", user: "u0")) }
        XCTAssertEqual(try registry.list(appID: appID, mode: .live, userID: "u0").first?.active, false)
        XCTAssertEqual(try counter(), 3)
        XCTAssertEqual(try activeCount(), 3)
    }

    func testRDEV6DefaultLimitsAreAMillionLiveAndAThousandTest() throws {
        // The counter is the registry's only view of the app's size (no scan), so setting it
        // stands in for a thousand (or a million) registrations.
        try register(iosDevice("seed_test", mode: .test))
        try register(iosDevice("seed_live", mode: .live))
        try conn.exec("UPDATE push_device_counts SET active_count = 999 WHERE app_id = $1 AND mode = 'test'", [.uuid(appID)])
        try conn.exec("UPDATE push_device_counts SET active_count = 999999 WHERE app_id = $1 AND mode = 'live'",
                      [.uuid(appID)])
        XCTAssertTrue(try register(iosDevice("t_1000", user: "u2", mode: .test)).created)
        expectPushError(.pushDeviceLimit) { try self.register(self.iosDevice("t_1001", user: "u3", mode: .test)) }
        XCTAssertTrue(try register(iosDevice("l_1000000", user: "u2", mode: .live)).created)
        expectPushError(.pushDeviceLimit) { try self.register(self.iosDevice("l_1000001", user: "u3", mode: .live)) }
        XCTAssertEqual(try counter(.test), 1000)
        XCTAssertEqual(try counter(.live), 1_000_000)
    }

    func testRDEV6CounterEqualsTheTrueActiveCountThroughEveryKindOfChange() throws {
        for mode in Mode.allCases {
            for i in 0..<23 { try register(iosDevice("tok_\(i)", user: i < 21 ? "alice" : "bob", mode: mode)) }
            try register(iosDevice("tok_3", user: "bob", mode: mode))           // move
            let victim = try registry.list(appID: appID, mode: mode, userID: "bob").first!.id
            XCTAssertTrue(try registry.delete(appID: appID, mode: mode, deviceID: victim))
            XCTAssertFalse(try registry.delete(appID: appID, mode: mode, deviceID: victim))
            try register(iosDevice("tok_0", user: "carol", mode: mode))         // reactivation (evicted one)
            try register(iosDevice("tok_22", user: "carol", mode: mode))
            try register(webDevice("https://push.example.com/\(mode)", user: "carol", mode: mode))
            XCTAssertEqual(try counter(mode), try activeCount(mode), "mode \(mode)")
        }
        XCTAssertEqual(try counter(.live), try counter(.test))
    }

    // MARK: - R-DEV-7 delete and reactivate

    func testRDEV7DeleteDeactivatesAndRegisteringAgainReactivates() throws {
        let key = try P256PrivateKey.generate().publicKey
        let id = try register(iosDevice("tok_a", key: .some(key.base64URL))).deviceID
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: id))
        let deleted = try registry.list(appID: appID, mode: .live).first
        XCTAssertEqual(deleted?.id, id)
        XCTAssertEqual(deleted?.active, false)
        XCTAssertEqual(deleted?.deactivationReason, "DELETED")
        XCTAssertNotNil(deleted?.deactivatedAt)
        XCTAssertEqual(try counter(), 0)
        XCTAssertFalse(try registry.delete(appID: appID, mode: .live, deviceID: id), "already inactive")

        let again = try register(iosDevice("tok_a"))
        XCTAssertEqual(again.deviceID, id)
        XCTAssertTrue(again.reactivated)
        XCTAssertFalse(again.created)
        let back = try registry.list(appID: appID, mode: .live).first
        XCTAssertEqual(back?.active, true)
        XCTAssertNil(back?.deactivatedAt)
        XCTAssertNil(back?.deactivationReason)
        XCTAssertEqual(back?.encryptionKeyID, key.kid, "R-DEV-4: the absent field keeps the key")
        XCTAssertEqual(try counter(), 1)
    }

    func testRDEV7DeleteOnlyActsWithinItsAppAndMode() throws {
        let id = try register(iosDevice("tok_a", mode: .live)).deviceID
        XCTAssertFalse(try registry.delete(appID: appID, mode: .test, deviceID: id))
        XCTAssertFalse(try registry.delete(appID: UUID(), mode: .live, deviceID: id))
        XCTAssertEqual(try activeCount(), 1)
    }

    // MARK: - R-MODE-1 isolation

    func testRMODE1TestAndLiveDevicesNeverSeeEachOther() throws {
        let live = try register(iosDevice("tok_a", mode: .live))
        let test = try register(iosDevice("tok_a", mode: .test))
        XCTAssertNotEqual(live.deviceID, test.deviceID, "one token is one device per mode")
        XCTAssertTrue(test.created)
        XCTAssertEqual(try registry.list(appID: appID, mode: .live).map(\.id), [live.deviceID])
        XCTAssertEqual(try registry.list(appID: appID, mode: .test).map(\.id), [test.deviceID])
        XCTAssertFalse(try registry.delete(appID: appID, mode: .test, deviceID: live.deviceID))
        let otherApp = try AppStore(connection: conn).appCreate(name: "other").id
        XCTAssertEqual(try registry.list(appID: otherApp, mode: .live), [])
    }

    func testListFiltersByUserAndActive() throws {
        let a = try register(iosDevice("tok_a", user: "alice")).deviceID
        let b = try register(iosDevice("tok_b", user: "alice")).deviceID
        let c = try register(iosDevice("tok_c", user: "bob")).deviceID
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: b))
        XCTAssertEqual(Set(try registry.list(appID: appID, mode: .live).map(\.id)), [a, b, c])
        XCTAssertEqual(Set(try registry.list(appID: appID, mode: .live, userID: "alice").map(\.id)), [a, b])
        XCTAssertEqual(try registry.list(appID: appID, mode: .live, userID: "alice", active: true).map(\.id), [a])
        XCTAssertEqual(try registry.list(appID: appID, mode: .live, active: false).map(\.id), [b])
        XCTAssertEqual(try registry.list(appID: appID, mode: .live, limit: 2).count, 2)
    }

    // MARK: - R-DEV-8 registration time

    func testRDEV8EachRegistrationRecordsWhenItHappened() throws {
        let before = try conn.exec("SELECT clock_timestamp() AS t").date(0, "t")
        let id = try register(iosDevice("tok_a")).deviceID
        let first = try XCTUnwrap(try registry.list(appID: appID, mode: .live).first?.lastRegisteredAt)
        XCTAssertGreaterThanOrEqual(first, before)
        Thread.sleep(forTimeInterval: 0.01)
        try register(iosDevice("tok_a", user: "u2"))
        let second = try XCTUnwrap(try registry.list(appID: appID, mode: .live).first?.lastRegisteredAt)
        XCTAssertGreaterThan(second, first)
        XCTAssertTrue(try registry.delete(appID: appID, mode: .live, deviceID: id))
        Thread.sleep(forTimeInterval: 0.01)
        try register(iosDevice("tok_a", user: "u2"))
        let third = try XCTUnwrap(try registry.list(appID: appID, mode: .live).first?.lastRegisteredAt)
        XCTAssertGreaterThan(third, second, "a reactivation is a registration too")
    }

    func testRDEV8RegistrationTimeNeverMovesBackwards() throws {
        let id = try register(iosDevice("tok_a")).deviceID
        // A stored time ahead of this server's clock (e.g. written under another primary) is kept.
        try conn.exec("UPDATE push_devices SET last_registered_at = now() + interval '1 hour' WHERE id = $1", [.uuid(id)])
        let ahead = try XCTUnwrap(try registry.list(appID: appID, mode: .live).first?.lastRegisteredAt)
        try register(iosDevice("tok_a"))
        XCTAssertEqual(try registry.list(appID: appID, mode: .live).first?.lastRegisteredAt, ahead)
    }
}
