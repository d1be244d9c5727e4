import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import XCTest

/// R-LIM-1's guarantee, computed with PushCore's own size rule: whatever the app's placeholders and
/// the notification's badge, sound and thread id (each at its bound), an encrypted iOS push has
/// room for at least 2,500 bytes of sealed content.
final class AcceptanceLimitsTests: XCTestCase {
    typealias L = AcceptanceLimits

    private func encryptedIOSRoom(title: String, body: String, sound: String, thread: String, badge: Int) throws -> Int {
        let key = try P256PrivateKey.generate().publicKey
        let content = NotificationContent(title: "x", badge: badge, sound: sound, threadId: thread)
        let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(title: title, body: body),
                                      requireEncryption: true, mode: .live)
        let check = try XCTUnwrap(planner.sizeCheck(for: DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .production,
                                                                        publicKey: key.raw, kid: key.kid)))
        return check.maxContentLength
    }

    func testTheClearFieldsAtTheirBoundsLeaveAtLeast2500BytesOfContent() throws {
        let worst = try encryptedIOSRoom(title: String(repeating: "a", count: L.maxPlaceholderTitleBytes),
                                         body: String(repeating: "a", count: L.maxPlaceholderBodyBytes),
                                         sound: String(repeating: "a", count: L.maxSoundBytes),
                                         thread: String(repeating: "a", count: L.maxThreadIDBytes), badge: L.badge.upperBound)
        XCTAssertGreaterThanOrEqual(worst, L.minimumEncryptedIOSContentBytes)
        XCTAssertEqual(worst, 2_582, "the figure the README and sql/0006 state")
        // Escapes count as what they become in the payload: 21 control characters (126 bytes) in each
        // placeholder leave no less room than 128 plain bytes.
        let escaped = try encryptedIOSRoom(title: String(repeating: "\u{1}", count: 21), body: String(repeating: "\"", count: 64),
                                           sound: String(repeating: "\\", count: 32), thread: String(repeating: "\u{7}", count: 10),
                                           badge: L.badge.upperBound)
        XCTAssertGreaterThanOrEqual(escaped, worst)
        // Mutation check: one more placeholder byte than the bound would eat into the room.
        let over = try encryptedIOSRoom(title: String(repeating: "a", count: L.maxPlaceholderTitleBytes + 200),
                                        body: "", sound: "", thread: "", badge: 0)
        XCTAssertLessThan(over, try encryptedIOSRoom(title: String(repeating: "a", count: L.maxPlaceholderTitleBytes),
                                                     body: "", sound: "", thread: "", badge: 0))
    }

    func testTheEscapedMeasureIsWhatTheJSONWriterWrites() {
        for s in ["plain", "é", "\"\\", "\u{1}\u{1f}", "\n\t", "a/b"] {
            var out = [UInt8]()
            JSONWriter.appendString(s, to: &out)
            XCTAssertEqual(L.jsonTextBytes(s), out.count - 2, s)
        }
        XCTAssertEqual(L.characters("é\u{301}"), 2, "Unicode scalars, as PostgreSQL's char_length counts")
    }
}
