import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// R-SEND-7, the 4096-byte rule: sizes computed without sealing equal the built payloads, and the
/// boundary is "largest that fits passes, one content byte more is refused (cut 1 byte)".
final class PayloadSizeRuleTests: XCTestCase {
    private let iosKey = DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .sandbox, publicKey: sampleKey, kid: sampleKid)
    private let androidKey = DeviceSnapshot(platform: "android", token: "t", publicKey: sampleKey, kid: sampleKid)
    private let iosPlain = DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .sandbox)
    private let androidPlain = DeviceSnapshot(platform: "android", token: "t")
    private let web = DeviceSnapshot(platform: "web", token: "https://push.example/sub")

    private func content(titleBytes: Int) -> NotificationContent {
        NotificationContent(title: String(repeating: "t", count: titleBytes), body: "body \"quoted\"\n",
                            data: JSONObject([.init("k", .string("v/é")), .init("n", .number("12"))]),
                            badge: 3, sound: "default", threadId: "thread-1", collapseKey: "c")
    }

    private func planner(_ c: NotificationContent) -> DeliveryPlanner {
        DeliveryPlanner(content: c, placeholders: AppPlaceholders(title: "Neue Nachricht", body: "…"),
                        requireEncryption: false, mode: .live)
    }

    /// The size actually built for a planned delivery (sealing replaced by a fake envelope of the right lengths).
    private func builtSize(_ planned: PlannedDelivery) throws -> Int {
        switch planned.body {
        case .plaintext(let payload): return payload.ruleSize
        case .sealed(let plaintext, let template):
            return try template.render(envelope: fakeEnvelope(plaintextLength: plaintext.count)).ruleSize
        case .webPush(let plaintext): return plaintext.count + 103
        }
    }

    /// Builds actual payloads for growing titles (independently of the rule) and returns the largest
    /// title length whose built payload is within 4096 bytes.
    private func largestFittingTitle(for device: DeviceSnapshot) throws -> Int {
        var best = -1
        for x in stride(from: 0, through: 4200, by: 1) {
            let p = planner(content(titleBytes: x))
            let size = try builtSizeIgnoringLimit(p, device)
            if size <= 4096 { best = x } else { break }
        }
        return best
    }

    private func builtSizeIgnoringLimit(_ p: DeliveryPlanner, _ device: DeviceSnapshot) throws -> Int {
        let c = p.content
        switch (device.platform, device.publicKey != nil) {
        case ("ios", true):
            let sealed = SealedPlaintext.bytes(for: c)
            return APNsPayload.encrypted(content: c, placeholders: p.placeholders,
                                         envelope: fakeEnvelope(plaintextLength: sealed.count)).count
        case ("android", true):
            let sealed = SealedPlaintext.bytes(for: c)
            return FCMMessage.encrypted(token: "t", content: c, envelope: fakeEnvelope(plaintextLength: sealed.count)).ruleSize
        case ("ios", false): return APNsPayload.plaintext(content: c).count
        case ("android", false): return FCMMessage.plaintext(token: "t", content: c).ruleSize
        default: return SealedPlaintext.bytes(for: c).count + 103
        }
    }

    private func assertBoundary(_ device: DeviceSnapshot, file: StaticString = #filePath, line: UInt = #line) throws {
        let x = try largestFittingTitle(for: device)
        XCTAssertGreaterThan(x, 2000, file: file, line: line)
        guard case .send(let planned) = planner(content(titleBytes: x)).plan(device) else {
            return XCTFail("largest content that fits was refused", file: file, line: line)
        }
        XCTAssertLessThanOrEqual(planned.finalSize, 4096, file: file, line: line)
        XCTAssertEqual(try builtSize(planned), planned.finalSize, file: file, line: line)
        guard case .refuse(let error) = planner(content(titleBytes: x + 1)).plan(device) else {
            return XCTFail("one content byte more was not refused", file: file, line: line)
        }
        XCTAssertEqual(error.code, .pushPayloadTooLarge, file: file, line: line)
        XCTAssertTrue(error.message.hasSuffix("cut 1 byte of content"), error.message, file: file, line: line)
        XCTAssertEqual(LedgerRule.action(for: .failed(error.code), chargedAtAcceptance: true), .refund, file: file, line: line)
    }

    func testEncryptedIOSLargestFitsOneMoreByteRefusedWithCutOne() throws { try assertBoundary(iosKey) }
    func testEncryptedAndroidLargestFitsOneMoreByteRefusedWithCutOne() throws { try assertBoundary(androidKey) }
    func testPlaintextIOSLargestFitsOneMoreByteRefusedWithCutOne() throws { try assertBoundary(iosPlain) }
    func testPlaintextAndroidLargestFitsOneMoreByteRefusedWithCutOne() throws { try assertBoundary(androidPlain) }
    func testWebPushLargestFitsOneMoreByteRefusedWithCutOne() throws { try assertBoundary(web) }

    /// Property: for many content lengths the computed size equals the built payload's size, for every kind.
    func testComputedSizeEqualsBuiltPayloadSizeForManyLengths() throws {
        var lengths = Array(stride(from: 0, through: 3000, by: 37))
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<40 { lengths.append(Int.random(in: 0...3000, using: &rng)) }
        for x in lengths {
            let p = planner(content(titleBytes: x))
            for device in [iosKey, androidKey, iosPlain, androidPlain, web] {
                let built = try builtSizeIgnoringLimit(p, device)
                guard let check = p.sizeCheck(for: device) else { return XCTFail("no size check") }
                XCTAssertEqual(check.size, built, "title \(x) bytes, \(device.platform) key \(device.publicKey != nil)")
                if case .send(let planned) = p.plan(device) {
                    XCTAssertEqual(try builtSize(planned), built)
                    XCTAssertEqual(planned.finalSize, built)
                } else {
                    XCTAssertGreaterThan(built, 4096)
                }
            }
        }
    }

    /// The minimal cut is exact: cutting `bytesToCut` content bytes fits, one fewer does not.
    func testBytesToCutIsTheSmallestThatFits() {
        for shape in [PayloadSizeRule.Shape.apnsEncrypted(fixed: 110, kid: sampleKid), .fcmEncrypted(kid: sampleKid),
                      .webPush, .plaintext, .apnsEncrypted(fixed: 3000, kid: sampleKid)] {
            for n in stride(from: 0, through: 5000, by: 13) {
                let check = PayloadSizeRule.check(shape, contentLength: n)
                let k = check.bytesToCut
                XCTAssertLessThanOrEqual(shape.size(contentLength: n - k), 4096, "\(shape) n=\(n)")
                if k > 0 {
                    XCTAssertGreaterThan(shape.size(contentLength: n - k + 1), 4096, "\(shape) n=\(n)")
                    XCTAssertFalse(check.fits)
                } else {
                    XCTAssertTrue(check.fits)
                    XCTAssertNil(check.error)
                }
            }
        }
    }

    /// Base64url is never 4k+1 long: some encrypted sizes are unreachable, so the largest fit may be under 4096.
    func testSomeEncryptedSizesAreUnreachable() {
        let shape = PayloadSizeRule.Shape.fcmEncrypted(kid: sampleKid)
        let sizes = Set((0...3000).map { shape.size(contentLength: $0) })
        XCTAssertTrue((3000...4096).contains { !sizes.contains($0) })
    }

    /// With the honkio vector's aps block, APNs allows 2871 plaintext bytes and FCM 2952.
    func testVectorBudgetsAre2871BytesForAPNsAnd2952ForFCM() {
        let c = HonkioVector.content
        let fixed = APNsPayload.encryptedPrefix(content: c, placeholders: AppPlaceholders()).count + 1
        XCTAssertEqual(PayloadSizeRule.Shape.apnsEncrypted(fixed: fixed, kid: sampleKid).maxContentLength, 2871)
        XCTAssertEqual(PayloadSizeRule.Shape.fcmEncrypted(kid: sampleKid).maxContentLength, 2952)
        XCTAssertEqual(PayloadSizeRule.Shape.webPush.maxContentLength, 3993)
    }

    func testFixedPartAloneTooLargeSaysSoInsteadOfACut() {
        let placeholders = AppPlaceholders(title: String(repeating: "p", count: 4100), body: "")
        let decision = DeliveryPlanner.plan(content: NotificationContent(title: "x"), placeholders: placeholders,
                                            requireEncryption: true, mode: .live, device: iosKey)
        guard case .refuse(let error) = decision else { return XCTFail("not refused") }
        XCTAssertEqual(error.code, .pushPayloadTooLarge)
        XCTAssertTrue(error.message.contains("even without content"), error.message)
    }

    func testCutMessageUsesPluralAboveOne() {
        let check = PayloadSizeRule.check(.webPush, contentLength: 4000)
        XCTAssertEqual(check.bytesToCut, 7)
        XCTAssertEqual(check.error?.message, "payload is 4103 bytes, over the 4096-byte limit: cut 7 bytes of content")
    }

    /// R-SEND-7 at acceptance: the largest cut among the targeted devices is the answer.
    func testAcceptanceCheckTakesTheLargestCutAmongDevices() throws {
        let xIOS = try largestFittingTitle(for: iosKey)
        let xAndroid = try largestFittingTitle(for: androidKey)
        XCTAssertLessThan(xIOS, xAndroid, "APNs carries more around the envelope than FCM")
        let p = planner(content(titleBytes: xIOS + 5))
        let check = try XCTUnwrap(p.acceptanceSizeCheck(devices: [androidKey, iosKey, web, DeviceSnapshot(platform: "x", token: "t")]))
        XCTAssertEqual(check.bytesToCut, 5)
        XCTAssertEqual(check.error?.code, .pushPayloadTooLarge)
        XCTAssertNil(planner(content(titleBytes: xIOS)).acceptanceSizeCheck(devices: [androidKey, iosKey, web]))
        XCTAssertNil(p.acceptanceSizeCheck(devices: []))
    }
}
