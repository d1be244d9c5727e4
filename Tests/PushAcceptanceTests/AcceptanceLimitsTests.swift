import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import XCTest

/// R-LIM-1's guarantee, computed with PushCore's own size rule: whatever the app's placeholders (or
/// their loc keys, R-KIND-3) and the notification's fields in clear in `aps` (badge, sound or the
/// critical sound, thread id, the presentation fields of R-KIND-2), each at its bound, an encrypted
/// iOS push has room for at least 2,500 bytes of sealed content.
final class AcceptanceLimitsTests: XCTestCase {
    typealias L = AcceptanceLimits

    private func encryptedIOSRoom(_ placeholders: AppPlaceholders, _ content: NotificationContent) throws -> Int {
        let key = try P256PrivateKey.generate().publicKey
        XCTAssertNoThrow(try content.validate())
        let planner = DeliveryPlanner(content: content, placeholders: placeholders, requireEncryption: true, mode: .live)
        let check = try XCTUnwrap(planner.sizeCheck(for: DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .production,
                                                                        publicKey: key.raw, kid: key.kid)))
        return check.maxContentLength
    }

    private func encryptedIOSRoom(title: String, body: String, sound: String, thread: String, badge: Int) throws -> Int {
        try encryptedIOSRoom(AppPlaceholders(title: title, body: body),
                             NotificationContent(title: "x", badge: badge, sound: sound, threadId: thread))
    }

    private func a(_ n: Int) -> String { String(repeating: "a", count: n) }

    /// The fields at their bounds, the notification's clear texts sharing `maxClearTextBytes` (all
    /// four present: each key present costs its name), with and without a critical sound and with
    /// literal or loc-key placeholders; the worst leaves 2,523 bytes.
    func testTheClearFieldsAtTheirBoundsLeaveAtLeast2500BytesOfContent() throws {
        let literal = AppPlaceholders(title: a(L.maxPlaceholderTitleBytes), body: a(L.maxPlaceholderBodyBytes))
        let loc = AppPlaceholders(title: a(L.maxPlaceholderTitleBytes), body: a(L.maxPlaceholderBodyBytes),
                                  titleLocKey: a(L.maxPlaceholderLocKeyBytes), bodyLocKey: a(L.maxPlaceholderLocKeyBytes))
        let thread = a(L.maxThreadIDBytes), left = L.maxClearTextBytes - L.maxThreadIDBytes - 2
        let score = UnitFraction(0.1234)
        let plain = NotificationContent(title: "x", badge: L.badge.upperBound, sound: a(left), threadId: thread,
                                        presentation: IOSPresentation(interruptionLevel: .timeSensitive, relevanceScore: score,
                                                                      category: "c", targetContentId: "t"))
        let critical = NotificationContent(title: "x", badge: L.badge.upperBound, threadId: thread,
                                           presentation: IOSPresentation(interruptionLevel: .critical, relevanceScore: score,
                                                                         category: "c", targetContentId: "t",
                                                                         criticalSound: .init(name: a(left), volume: score)))
        var rooms: [Int] = []
        for p in [literal, loc] {
            for c in [plain, critical] { rooms.append(try encryptedIOSRoom(p, c)) }
        }
        let worst = try XCTUnwrap(rooms.min())
        XCTAssertGreaterThanOrEqual(worst, L.minimumEncryptedIOSContentBytes)
        XCTAssertEqual(worst, 2_523, "the figure the README, docs/live.md and sql/0011 state")
        // The figure before the kind fields (sql/0006's bounds: 128-byte placeholders, sound and thread
        // id of 64) would now break the promise: that is why the placeholders went down to 96.
        var old = critical
        old.presentation.criticalSound?.name = a(L.maxCriticalSoundNameBytes)
        XCTAssertLessThan(try encryptedIOSRoom(AppPlaceholders(title: a(128), body: a(128)), old), L.minimumEncryptedIOSContentBytes)
        // Escapes count as what they become in the payload: 21 control characters (126 bytes) are no
        // more room taken than 96 plain bytes.
        let escaped = try encryptedIOSRoom(title: String(repeating: "\u{1}", count: 16), body: String(repeating: "\"", count: 48),
                                           sound: String(repeating: "\\", count: 32), thread: String(repeating: "\u{7}", count: 10),
                                           badge: L.badge.upperBound)
        XCTAssertGreaterThanOrEqual(escaped, worst)
        // Mutation check: one more placeholder byte than the bound would eat into the room.
        let over = try encryptedIOSRoom(title: a(L.maxPlaceholderTitleBytes + 200), body: "", sound: "", thread: "", badge: 0)
        XCTAssertLessThan(over, try encryptedIOSRoom(title: a(L.maxPlaceholderTitleBytes), body: "", sound: "", thread: "", badge: 0))
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
