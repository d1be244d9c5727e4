import Foundation
import PushCore
import PushCrypto
import PushStore
@testable import PushWorker
import XCTest
import PushProviders
import PushTestSupport

/// R-SEND-7 at send time: the worker re-checks the 4096-byte rule per device; the boundary comes
/// from PushCore's planner (`PayloadSizeRule`), and the worker must agree with it byte for byte.
final class PayloadSizeTests: WorkerTestCase {
    private let planner = DeliveryPlanner(content: NotificationContent(title: "x"), placeholders: AppPlaceholders(),
                                          requireEncryption: false, mode: .test,
                                          platforms: ProviderTable.standard.planning)

    /// The title length whose payload for `device` is the largest that fits: the planner's
    /// content measure grows by one per ASCII title character.
    private func largestFittingTitle(for device: DeviceSnapshot) throws -> Int {
        let check = try XCTUnwrap(planner.sizeCheck(for: device))
        let n = 1 + (check.maxContentLength - check.contentLength)
        XCTAssertTrue(sizeCheck(title: n, device).fits, "title \(n) must fit")
        XCTAssertFalse(sizeCheck(title: n + 1, device).fits, "title \(n + 1) must not fit")
        return n
    }

    private func sizeCheck(title n: Int, _ device: DeviceSnapshot) -> SizeCheck {
        DeliveryPlanner(content: NotificationContent(title: String(repeating: "x", count: n)),
                        placeholders: AppPlaceholders(), requireEncryption: false, mode: .test,
                                          platforms: ProviderTable.standard.planning).sizeCheck(for: device)!
    }

    /// R-SEND-7 + R-SEND-9: for an encrypted iOS, an encrypted Android, a plaintext iOS and a Web
    /// Push payload (body = plaintext + 103),
    /// the largest content that fits is sent (final size <= 4096, as the rule computed), and one
    /// content byte more is refused PUSH_PAYLOAD_TOO_LARGE, stating 1 byte to cut, and refunded.
    func testLargestFittingPayloadPassesAndOneByteMoreIsRefusedAndRefunded() throws {
        let app = try createApp()
        let iosKey = try P256PrivateKey.generate(), androidKey = try P256PrivateKey.generate()
        let kinds: [(user: String, platform: String, key: P256PrivateKey?)] = [
            ("enc-ios", "ios", iosKey), ("enc-android", "android", androidKey), ("plain-ios", "ios", nil),
            ("web", "web", nil),
        ]
        var checks: [(label: String, device: UUID, fits: UUID, over: UUID, size: Int, platform: String)] = []
        for k in kinds {
            let device = k.platform == "web" ? try registerWeb(app, user: k.user)
                : try register(app, user: k.user, platform: k.platform, key: k.key)
            let snapshot = DeviceSnapshot(platform: Platform(rawValue: k.platform), token: "t",
                                          apnsEnvironment: k.platform == "ios" ? .sandbox : nil,
                                          publicKey: k.key?.publicKey.raw, kid: k.key?.publicKey.kid)
            let n = try largestFittingTitle(for: snapshot)
            let fits = try enqueue(app, users: [k.user], title: String(repeating: "x", count: n), body: nil)
            let over = try enqueue(app, users: [k.user], title: String(repeating: "x", count: n + 1), body: nil)
            checks.append((k.user, device, fits, over, sizeCheck(title: n, snapshot).size, k.platform))
        }
        try drain(try makeWorker())

        for c in checks {
            let ok = try XCTUnwrap(try deliveries(c.fits)[c.device], c.label)
            XCTAssertEqual(ok.status, "sent", c.label)
            XCTAssertLessThanOrEqual(c.size, PayloadSizeRule.limit, c.label)
            let payload = try XCTUnwrap(ok.payload, c.label)
            if c.platform == "ios" || c.platform == "web" {
                XCTAssertEqual(payload.count, c.size, "APNs / Web Push measure is the whole body (\(c.label))")
            } else {
                let data = (json(payload)["message"] as? [String: Any])?["data"] as? [String: Any]
                let hk = try XCTUnwrap(data?["hk"] as? String, c.label)
                XCTAssertEqual(2 + hk.utf8.count, c.size, "FCM measure is data keys + values (\(c.label))")
            }
            XCTAssertEqual(try net(c.fits, c.device), 1, c.label)

            let refused = try XCTUnwrap(try deliveries(c.over)[c.device], c.label)
            XCTAssertEqual(refused.status, "failed", c.label)
            XCTAssertEqual(refused.errorCode, "PUSH_PAYLOAD_TOO_LARGE", c.label)
            XCTAssertNil(refused.payload, c.label)
            let detail = refused.errorDetail ?? ""
            XCTAssertTrue(detail.contains("cut 1 byte "), "states the bytes to cut: \(detail)")
            XCTAssertEqual(try ledger(c.over)[c.device]?.charges, 1, c.label)
            XCTAssertEqual(try ledger(c.over)[c.device]?.refunds, 1, "refunded (\(c.label))")
            XCTAssertEqual(try notification(c.over).errorCode, "ALL_DEVICES_REFUSED", c.label)
            try assertLedgerInvariants(c.fits)
            try assertLedgerInvariants(c.over)
        }
    }

    /// R-SEND-7: a device that registered a key after acceptance, whose encrypted payload now
    /// overflows (the plaintext one fitted), is refused PUSH_PAYLOAD_TOO_LARGE at send time with the
    /// exact bytes to cut, and its acceptance charge is refunded; the other device is sent.
    func testKeyRegisteredAfterAcceptanceOverflowIsRefusedAndRefunded() throws {
        let app = try createApp()
        let token = "late-key-device"
        let late = try register(app, user: "u1", platform: "ios", token: token)
        let other = try register(app, user: "u1", platform: "android")
        let title = String(repeating: "y", count: 3500)
        let plainCheck = sizeCheck(title: 3500, DeviceSnapshot(platform: "ios", token: token, apnsEnvironment: .sandbox))
        XCTAssertTrue(plainCheck.fits, "the plaintext payload fits at acceptance")
        let n = try enqueue(app, users: ["u1"], title: title, body: nil)

        let key = try P256PrivateKey.generate()
        XCTAssertEqual(try register(app, user: "u1", platform: "ios", token: token, key: key), late, "same device")
        let sealedCheck = sizeCheck(title: 3500, DeviceSnapshot(platform: "ios", token: token, apnsEnvironment: .sandbox,
                                                               publicKey: key.publicKey.raw, kid: key.publicKey.kid))
        XCTAssertFalse(sealedCheck.fits)
        try drain(try makeWorker())

        let rows = try deliveries(n)
        XCTAssertEqual(rows[late]?.errorCode, "PUSH_PAYLOAD_TOO_LARGE")
        XCTAssertEqual(rows[other]?.status, "sent")
        let detail = rows[late]?.errorDetail ?? ""
        XCTAssertTrue(detail.contains("cut \(sealedCheck.bytesToCut) bytes"), detail)
        XCTAssertEqual(try ledger(n)[late]?.charges, 1)
        XCTAssertEqual(try ledger(n)[late]?.refunds, 1)
        XCTAssertEqual(try notification(n).deviceCount, 1)
        try assertLedgerInvariants(n)
    }
}
