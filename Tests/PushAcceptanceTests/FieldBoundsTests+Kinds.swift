import Foundation
@testable import PushAcceptance
import PushCore
import PushStore
import XCTest

/// R-LIM-1 and R-KIND-1..3 for the kind fields (sql/0011): each bound and each refused combination,
/// through the acceptance service and through `push_enqueue` directly, both naming the same field.
extension FieldBoundsTests {
    private func s(_ n: Int, _ c: String = "a") -> String { String(repeating: c, count: n) }

    /// A background push with nothing but data (what `base()` has is an alert with a title).
    private func background(_ r: inout SendRequest) {
        r.title = nil
        r.pushType = "background"
        r.data = #"{"sync":"1"}"#
    }

    func testPushTypeAndWhatABackgroundPushRefuses() throws {
        check("push_type", accepted: { self.background(&$0) }, refused: { $0.pushType = "silent" })
        let shown: [(String, (inout SendRequest) -> Void)] = [
            ("title", { $0.title = "t" }), ("body", { $0.body = "" }), ("badge", { $0.badge = 0 }),
            ("sound", { $0.sound = "default" }), ("thread_id", { $0.threadID = "t" }),
            ("interruption_level", { $0.interruptionLevel = "passive" }), ("relevance_score", { $0.relevanceScore = 0.5 }),
            ("category", { $0.category = "c" }), ("target_content_id", { $0.targetContentID = "t" }),
            ("critical_sound", { $0.criticalSound = .init(name: "alarm.caf") }),
            ("title_loc_key", { $0.titleLocKey = "K" }), ("title_loc_args", { $0.titleLocArgs = ["a"] }),
            ("body_loc_key", { $0.bodyLocKey = "K" }), ("body_loc_args", { $0.bodyLocArgs = ["a"] }),
            ("channel_id", { $0.channelID = "c" }),
        ]
        for (field, set) in shown {
            check(field, accepted: { self.background(&$0); $0.collapseKey = "ck"; $0.priority = "high" },
                  refused: { self.background(&$0); set(&$0) })
        }
    }

    func testPresentationFieldBounds() throws {
        check("interruption_level", accepted: { $0.interruptionLevel = "time-sensitive" }, refused: { $0.interruptionLevel = "urgent" })
        check("relevance_score", accepted: { $0.relevanceScore = 1 }, refused: { $0.relevanceScore = 1.0001 })
        check("relevance_score", accepted: { $0.relevanceScore = 0.1234 }, refused: { $0.relevanceScore = 0.12345 })
        check("relevance_score", accepted: { $0.relevanceScore = 0 }, refused: { $0.relevanceScore = -0.5 })
        for field in ["category", "target_content_id"] {
            let set: (inout SendRequest, String) -> Void = { r, v in if field == "category" { r.category = v } else { r.targetContentID = v } }
            check(field, accepted: { set(&$0, self.s(64)) }, refused: { set(&$0, self.s(65)) })
            check(field, accepted: { set(&$0, self.s(32, "\"")) }, refused: { set(&$0, self.s(33, "\"")) })
            check(field, accepted: { set(&$0, "x") }, refused: { set(&$0, "") })
        }
    }

    func testCriticalSound() throws {
        let critical: (inout SendRequest) -> Void = { $0.interruptionLevel = "critical"; $0.criticalSound = .init(name: "alarm.caf", volume: 0.5) }
        check("critical_sound.name", accepted: { critical(&$0); $0.criticalSound?.name = self.s(64) },
              refused: { critical(&$0); $0.criticalSound?.name = self.s(65) })
        check("critical_sound.name", accepted: critical, refused: { critical(&$0); $0.criticalSound?.name = nil })
        check("critical_sound.volume", accepted: { critical(&$0); $0.criticalSound?.volume = 1 },
              refused: { critical(&$0); $0.criticalSound?.volume = 1.5 })
        check("interruption_level", accepted: critical, refused: { $0.interruptionLevel = "critical" })
        check("critical_sound", accepted: critical, refused: { $0.criticalSound = .init(name: "alarm.caf") })
        check("critical_sound", accepted: critical, refused: { critical(&$0); $0.sound = "default" })
    }

    /// The notification's texts in clear in `aps` share 128 bytes (R-LIM-1: the room left for the
    /// sealed content of an encrypted iOS push), the last of them given named.
    func testClearTextsTogether() throws {
        let full: (inout SendRequest) -> Void = { $0.sound = self.s(64); $0.threadID = self.s(63) }
        check("category", accepted: { full(&$0); $0.category = "c" }, refused: { full(&$0); $0.category = "cc" })
        check("target_content_id", accepted: { full(&$0); $0.targetContentID = "t" },
              refused: { full(&$0); $0.category = "c"; $0.targetContentID = "t" })
        check("critical_sound.name", accepted: { $0.threadID = self.s(64); $0.interruptionLevel = "critical"; $0.criticalSound = .init(name: self.s(64)) },
              refused: { $0.threadID = self.s(64); $0.category = "c"; $0.interruptionLevel = "critical"; $0.criticalSound = .init(name: self.s(64)) })
    }

    func testLocTextsAndChannel() throws {
        for field in ["title_loc_key", "body_loc_key"] {
            let set: (inout SendRequest, String) -> Void = { r, v in if field == "title_loc_key" { r.titleLocKey = v } else { r.bodyLocKey = v } }
            check(field, accepted: { set(&$0, self.s(256)) }, refused: { set(&$0, self.s(257)) })
            check(field, accepted: { set(&$0, "k") }, refused: { set(&$0, "") })
        }
        for field in ["title_loc_args", "body_loc_args"] {
            let set: (inout SendRequest, [String]) -> Void = { r, v in
                if field == "title_loc_args" { r.titleLocKey = "K"; r.titleLocArgs = v } else { r.bodyLocKey = "K"; r.bodyLocArgs = v }
            }
            check(field, accepted: { set(&$0, Array(repeating: "a", count: 16)) }, refused: { set(&$0, Array(repeating: "a", count: 17)) })
            check(field, accepted: { set(&$0, [self.s(1024)]) }, refused: { set(&$0, ["a", self.s(1025)]) })
            check(field, accepted: { set(&$0, []) }, refused: { set(&$0, ["a"]); $0.titleLocKey = nil; $0.bodyLocKey = nil })
        }
        check("channel_id", accepted: { $0.channelID = self.s(128) }, refused: { $0.channelID = self.s(129) })
        check("channel_id", accepted: { $0.channelID = "c" }, refused: { $0.channelID = "" })
    }

    /// The loc texts are content: with them the content floor can be over 4096 bytes, which both the
    /// service and push_enqueue refuse as PUSH_PAYLOAD_TOO_LARGE (R-SEND-7), not as a bound.
    func testLocArgsCountInTheContentFloor() throws {
        var r = base()
        r.title = s(100)
        r.titleLocKey = "K"
        r.titleLocArgs = Array(repeating: s(1000), count: 4)
        assertRefused(.pushPayloadTooLarge) { _ = try service.send(r) }
        XCTAssertEqual(sqlError(enqueueRequest(r))?.code, .pushPayloadTooLarge)
        r.titleLocArgs = Array(repeating: s(990), count: 4)
        XCTAssertNoThrow(try service.send(r), "4,061 bytes of content fit some payload kind")
    }

    /// R-API-5 with the kind fields: a replay with another push type or presentation field is refused
    /// naming it; the same request is answered with the first notification.
    func testIdempotentReplayComparesTheKindFields() throws {
        var r = base()
        r.idempotencyKey = "kind-1"
        r.interruptionLevel = "passive"
        r.titleLocKey = "K"
        r.titleLocArgs = ["a"]
        let first = try service.send(r)
        XCTAssertEqual(try service.send(r), SendResult(notificationID: first.notificationID, created: false))
        for (field, change) in [("interruption_level", { (q: inout SendRequest) in q.interruptionLevel = "active" }),
                                ("title_loc_args", { (q: inout SendRequest) in q.titleLocArgs = ["b"] }),
                                ("channel_id", { (q: inout SendRequest) in q.channelID = "c" })] as [(String, (inout SendRequest) -> Void)] {
            var other = r
            change(&other)
            assertRefused(.idempotencyKeyReused) { _ = try service.send(other) }
            XCTAssertEqual(sqlError(enqueueRequest(other))?.code, .idempotencyKeyReused)
            XCTAssertTrue(sqlError(enqueueRequest(other))?.message.hasSuffix("another \(field)") == true, field)
        }
        var bg = base()
        bg.title = nil
        bg.data = #"{"k":"v"}"#   // a data-only alert (an alert with nothing at all is refused)
        bg.idempotencyKey = "kind-2"
        _ = try service.send(bg)
        bg.pushType = "background"
        assertRefused(.idempotencyKeyReused) { _ = try service.send(bg) }
    }
}
