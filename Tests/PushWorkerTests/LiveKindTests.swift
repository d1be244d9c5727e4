import Foundation
import XCTest
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore
@testable import PushWorker

/// R-KIND-1/2 in live mode, the worker with `LiveRouter` against the fake APNs and FCM, which check
/// that a payload matches its push type and priority and that each presentation field is well
/// formed (scripts/fakes/fake_apns.py, fake_fcm.py).
final class LiveKindTests: LiveTestCase {
    private func enqueue(_ configure: (inout EnqueueRequest) -> Void) throws -> UUID {
        var q = EnqueueRequest(appID: appID, mode: "live", userIDs: ["u1"])
        configure(&q)
        return try world.enqueue(q).id
    }

    /// A keyed iOS device (the fake sees `hk` beside `aps`).
    private func keyedDevice(_ prefix: String) throws -> UUID {
        let key = try P256PrivateKey.generate()
        let reg = try DeviceRegistration.validate(mode: "live", platform: "ios", token: "\(prefix)-\(tag)-k", userID: "u1",
                                                  apnsEnvironment: "production", encryptionPublicKey: .some(key.publicKey.base64URL),
                                                  platforms: ProviderTable.standard.addressing)
        return try world.register(appID, reg, appLimit: nil)
    }

    /// R-KIND-1: a background push of a `high` notification reaches APNs as `apns-push-type:
    /// background` with `apns-priority: 5` and `aps` = {"content-available":1} (the fake refuses
    /// anything else: BadPriority for 10), with and without a key; FCM gets a data-only message at
    /// R-SEND-10's `HIGH`.
    func testBackgroundPushIsAcceptedWithPushTypeBackgroundAndPriority5() throws {
        try setAPNs()
        try setFCM()
        let plain = try device("ok")
        let keyed = try keyedDevice("ok")
        let android = try device("ok", platform: .android, n: 1)
        let n = try enqueue {
            $0.pushType = "background"
            $0.priority = "high"
            $0.data = #"{"sync":"1"}"#
            $0.collapseKey = "sync"
        }
        try drain()
        for id in [plain.id, keyed, android.id] { XCTAssertEqual(try delivery(n, id).status, "sent") }
        let apns = pushes(fakes.apns)
        XCTAssertEqual(apns.count, 2)
        for line in apns {
            XCTAssertEqual(line["push_type"] as? String, "background")
            XCTAssertEqual(line["priority"] as? String, "5", "Apple refuses 10 for a background push")
            XCTAssertEqual(line["collapse_id"] as? String, "sync")
        }
        let payloads = Set(apns.compactMap { $0["payload"] as? String }.map { $0.hasPrefix(#"{"aps":{"content-available":1},"hk":{"#) ? "hk" : $0 })
        XCTAssertEqual(payloads, ["hk", #"{"aps":{"content-available":1},"data":{"sync":"1"}}"#])
        XCTAssertEqual(pushes(fakes.apns, kind: "bad_payload").count, 0)
        let fcm = try XCTUnwrap(pushes(fakes.fcm).first?["body"] as? String)
        XCTAssertTrue(fcm.contains(#""data":{"sync":"1"},"android":{"priority":"HIGH","#), fcm)
        XCTAssertFalse(fcm.contains("notification"), "data only")
        XCTAssertEqual(try report(n).status, "sent")
    }

    /// R-KIND-2: an alert with each presentation field (and the critical sound dictionary) is accepted
    /// by the fake, which checks each one's value; the fields reach APNs as given.
    func testAlertWithEachPresentationFieldIsAccepted() throws {
        try setAPNs()
        let cases: [(String, (inout EnqueueRequest) -> Void, String)] = [
            ("passive", { $0.interruptionLevel = "passive" }, #""interruption-level":"passive""#),
            ("active", { $0.interruptionLevel = "active" }, #""interruption-level":"active""#),
            ("timesens", { $0.interruptionLevel = "time-sensitive" }, #""interruption-level":"time-sensitive""#),
            ("score", { $0.relevanceScore = 0.6 }, #""relevance-score":0.6"#),
            ("category", { $0.category = "MESSAGE" }, #""category":"MESSAGE""#),
            ("target", { $0.targetContentID = "room-9" }, #""target-content-id":"room-9""#),
            ("critical", { $0.interruptionLevel = "critical"; $0.criticalSoundName = "alarm.caf"; $0.criticalSoundVolume = 0.9 },
             #""sound":{"critical":1,"name":"alarm.caf","volume":0.9},"interruption-level":"critical""#),
        ]
        var sent: [(UUID, UUID, String)] = []
        for (i, c) in cases.enumerated() {
            let d = try device("ok", user: "u\(i)", n: i)
            var q = EnqueueRequest(appID: appID, mode: "live", userIDs: ["u\(i)"])
            q.title = "Hello"
            c.1(&q)
            sent.append((try world.enqueue(q).id, d.id, c.2))
        }
        try drain()
        let logged = pushes(fakes.apns)
        XCTAssertEqual(logged.count, cases.count)
        XCTAssertEqual(pushes(fakes.apns, kind: "bad_payload").count, 0)
        for (n, device, member) in sent {
            XCTAssertEqual(try delivery(n, device).status, "sent", member)
            XCTAssertTrue(logged.contains { ($0["payload"] as? String)?.contains(member) == true && $0["push_type"] as? String == "alert" },
                          "\(member) not seen by the fake")
        }
    }

    /// R-PLAIN-2 with the loc texts and the channel: the fake FCM accepts them (arrays of strings).
    func testAndroidChannelAndLocTextsAreAcceptedByFCM() throws {
        try setFCM()
        let d = try device("ok", platform: .android)
        let n = try enqueue {
            $0.titleLocKey = "T"
            $0.titleLocArgs = ["a", "b"]
            $0.bodyLocKey = "B"
            $0.channelID = "alerts"
        }
        try drain()
        XCTAssertEqual(try delivery(n, d.id).status, "sent")
        let body = try XCTUnwrap(pushes(fakes.fcm).first?["body"] as? String)
        XCTAssertTrue(body.contains(#""notification":{"channel_id":"alerts","title_loc_key":"T","title_loc_args":["a","b"],"body_loc_key":"B"}"#), body)
    }
}

/// R-KIND-1 for Web Push: a background push is an ordinary push with `Urgency: low` (browsers have
/// no silent push), its plaintext the data alone.
final class LiveWebPushKindTests: LiveWebPushTestCase {
    func testBackgroundPushIsSentWithUrgencyLow() throws {
        try setVAPID()
        let s = try fake.take("ok")
        let d = try webDevice(s)
        var q = EnqueueRequest(appID: appID, mode: "live", userIDs: ["u1"])
        q.pushType = "background"
        q.priority = "high"
        q.data = #"{"sync":"1"}"#
        let n = try world.enqueue(q).id
        try drain()
        XCTAssertEqual(try delivery(n, d).status, "sent")
        let line = try XCTUnwrap(fake.log(path: s.path).first)
        XCTAssertEqual(line["urgency"] as? String, "low")
        XCTAssertEqual(line["plaintext"] as? String, #"{"data":{"sync":"1"}}"#)
    }
}
