import Foundation
import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore

/// The planner prepares only the platforms it is told a batch holds (`preparing:`), and a device
/// of any other platform is planned exactly as if every platform had been prepared (R-SEND-3..7,
/// R-IDS-1: the policy does not depend on what was prepared ahead). Also R-DEV-1's token alphabet,
/// which the planner checks again for every stored device.
final class PlannerPreparingTests: XCTestCase {
    /// Counts `prepare` / `prepareIDsOnly` calls per platform.
    final class PrepareLog: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [Platform: Int] = [:]
        func note(_ platform: Platform) { lock.withLock { counts[platform, default: 0] += 1 } }
        func count(_ platform: Platform) -> Int { lock.withLock { counts[platform] ?? 0 } }
        func reset() { lock.withLock { counts = [:] } }
    }

    /// A standard writer that notes each preparation in `log`.
    struct Counting: PayloadWriter {
        let inner: any PayloadWriter, platform: Platform, log: PrepareLog
        var encryptsItself: Bool { inner.encryptsItself }
        func prepare(_ n: PreparedNotification) -> any PreparedPayloads {
            log.note(platform)
            return inner.prepare(n)
        }
        func prepareIDsOnly(_ n: PreparedNotification) -> (any PreparedPayloads)? {
            log.note(platform)
            return inner.prepareIDsOnly(n)
        }
    }

    private let log = PrepareLog()
    private var rules: [Platform: PlatformRules] {
        ProviderTable.standard.planning.reduce(into: [:]) { table, entry in
            table[entry.key] = PlatformRules(writer: Counting(inner: entry.value.writer, platform: entry.key, log: log),
                                             addressing: entry.value.addressing)
        }
    }
    private let content = NotificationContent(title: "Hello", body: "World", data: JSONObject([.init("k", .string("v"))]))

    private func devices() -> [DeviceSnapshot] {
        let web = "https://push.example.net/send/abc"
        return [
            DeviceSnapshot(platform: .ios, token: "ios-token", apnsEnvironment: .sandbox),
            DeviceSnapshot(platform: .ios, token: "ios-token", apnsEnvironment: .sandbox, publicKey: sampleKey, kid: sampleKid),
            DeviceSnapshot(platform: .ios, token: "bad token", apnsEnvironment: .sandbox),
            DeviceSnapshot(platform: .android, token: "fcm-token"),
            DeviceSnapshot(platform: .android, token: "fcm-token", publicKey: sampleKey, kid: sampleKid),
            DeviceSnapshot(platform: .android, token: "fcm-token", publicKey: [0x04, 1], kid: sampleKid),
            DeviceSnapshot(platform: .web, token: web),
            DeviceSnapshot(platform: "pigeon", token: "tok"),
        ]
    }

    private func planner(_ contentMode: ContentMode, requireEncryption: Bool, mode: Mode = .test,
                         preparing: [Platform]?) -> DeliveryPlanner {
        DeliveryPlanner(content: content, placeholders: AppPlaceholders(title: "T", body: "B"),
                        requireEncryption: requireEncryption, mode: mode, contentMode: contentMode,
                        notificationID: UUID(uuidString: "8C1D3A4E-0000-4000-8000-000000000001"),
                        invalidCredentials: [.android], platforms: rules, preparing: preparing)
    }

    func testOnlyThePlatformsOfTheBatchArePrepared() {
        _ = planner(.sealed, requireEncryption: false, preparing: [.ios, .ios, .ios])
        XCTAssertEqual([log.count(.ios), log.count(.android), log.count(.web)], [1, 0, 0])
        log.reset()
        _ = planner(.idsOnly, requireEncryption: false, preparing: [.web, "pigeon", .android, .web])
        XCTAssertEqual([log.count(.ios), log.count(.android), log.count(.web)], [0, 1, 1])
        log.reset()
        _ = planner(.sealed, requireEncryption: false, preparing: nil)
        XCTAssertEqual([log.count(.ios), log.count(.android), log.count(.web)], [1, 1, 1], "nil prepares every platform")
    }

    /// Whatever was prepared ahead, every device gets the decision (body, size, refusal) it gets
    /// from a planner that prepared every platform: sealed and ids_only, keyed or not, test and live.
    func testADeviceOfAPlatformNotPreparedIsPlannedTheSame() {
        for contentMode in [ContentMode.sealed, .idsOnly] {
            for requireEncryption in [false, true] {
                for mode in Mode.allCases {
                    let all = planner(contentMode, requireEncryption: requireEncryption, mode: mode, preparing: nil)
                    for preparing: [Platform] in [[], [.ios], [.android, .web]] {
                        let some = planner(contentMode, requireEncryption: requireEncryption, mode: mode, preparing: preparing)
                        for device in devices() {
                            XCTAssertEqual(some.plan(device), all.plan(device),
                                           "\(contentMode) \(requireEncryption) \(mode) \(preparing) \(device.platform)")
                            XCTAssertEqual(some.sizeCheck(for: device), all.sizeCheck(for: device))
                        }
                        XCTAssertEqual(some.contentFloorCheck, all.contentFloorCheck)
                        XCTAssertEqual(some.sealedPlaintext, all.sealedPlaintext)
                    }
                }
            }
        }
    }

    /// R-DEV-1's alphabet byte by byte, at the start, middle and end of a token, and its lengths.
    func testTokenAlphabetAndLength() {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:.-".utf8)
        for b in UInt8(0)...0x7F {
            let c = String(UnicodeScalar(b))
            for token in [c + "abc", "ab" + c + "cdefghijklmnopqrstuvwxyz0123456789", String(repeating: "x", count: 40) + c] {
                XCTAssertEqual(DeviceRegistration.isValidToken(token), allowed.contains(b), "byte \(b) in \(token.debugDescription)")
            }
        }
        XCTAssertFalse(DeviceRegistration.isValidToken("abcé"))
        XCTAssertFalse(DeviceRegistration.isValidToken(""))
        XCTAssertTrue(DeviceRegistration.isValidToken(String(repeating: "a", count: DeviceRegistration.maxTokenLength)))
        XCTAssertFalse(DeviceRegistration.isValidToken(String(repeating: "a", count: DeviceRegistration.maxTokenLength + 1)))
        let bridged = ("prefix:" + String(repeating: "Z", count: 30)).dropFirst(7)
        XCTAssertTrue(DeviceRegistration.isValidToken(String(bridged)))
    }
}
