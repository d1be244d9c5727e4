import Foundation
import XCTest
@testable import PushAPI
import PushCore
import PushStore
import PushWorker

/// Confirmed delivery (issue 24 part 5, R-IDS-4), receipts (R-IDS-3) and the preview routes' rate
/// limits (part 3).
final class ConfirmedDeliveryTests: PreviewTestCase {
    /// N pushes and M distinct first fetches give M/N per platform in the two `/metrics` series
    /// (the worker's sent, the API's confirmed); a second fetch counts neither in the metric nor in
    /// `confirmed_count`; an app that did not opt in is counted in neither.
    func testNPushesAndMDistinctFetchesGiveMOverNPerPlatform() throws {
        let on = try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: #"{"confirm_deliveries":true}"#)
        XCTAssertEqual(on.status, 200, on.text)
        XCTAssertEqual(on.json["confirm_deliveries"] as? Bool, true)
        XCTAssertEqual(on.json["preview_window_seconds"] as? Int, 259_200)
        let ios = try (1...4).map { try device("test_accept_ios_\($0)") }
        let android = try (1...3).map { try device("test_accept_android_\($0)", platform: "android") }
        let quiet = try AppStore(connection: conn).appCreate(name: "no confirmations", accountID: account.id)
        try idsOnly(quiet.id)
        let quietDevice = try device("test_accept_quiet", app: PrefixedID.format(.app, quiet.id))
        let n = try send()
        let nQuiet = try send(app: PrefixedID.format(.app, quiet.id))
        let worker = try deliver()

        for d in [ios[0], ios[1], ios[2], android[0]] { XCTAssertEqual(try fetch(n, token: d.token).status, 200) }
        XCTAssertEqual(try fetch(n, token: ios[0].token).status, 200, "a second fetch is served")
        XCTAssertEqual(try fetch(nQuiet, token: quietDevice.token).status, 200)

        let sent = worker.render(), confirmed = try apiMetrics()
        func series(_ name: String, _ platform: String, app: String? = nil) -> String {
            "\(name){app_id=\"\(app ?? appID)\",mode=\"test\",platform=\"\(platform)\"}"
        }
        XCTAssertEqual(Self.value(sent, series("pushfleet_pushes_sent_total", "ios")), 4, sent)
        XCTAssertEqual(Self.value(sent, series("pushfleet_pushes_sent_total", "android")), 3)
        XCTAssertEqual(Self.value(confirmed, series("pushfleet_pushes_confirmed_total", "ios")), 3, confirmed)
        XCTAssertEqual(Self.value(confirmed, series("pushfleet_pushes_confirmed_total", "android")), 1)
        let quietID = PrefixedID.format(.app, quiet.id)
        XCTAssertFalse(sent.contains(quietID) || confirmed.contains(quietID), "an app that did not opt in has no series")

        let shown = try call("GET", "/v1/push/notifications/\(n)", key: testKey)
        XCTAssertEqual(shown.json["confirmed_count"] as? Int, 4, shown.text)
        XCTAssertEqual(shown.json["device_count"] as? Int, 7)
        let confirmedAt = (shown.json["deliveries"] as? [[String: Any]] ?? []).compactMap { $0["confirmed_at"] as? String }
        XCTAssertEqual(confirmedAt.count, 4)
        let listed = try call("GET", "/v1/push/notifications?app_id=\(appID)", key: testKey)
        XCTAssertEqual((listed.json["data"] as? [[String: Any]])?.first?["confirmed_count"] as? Int, 4, listed.text)
        XCTAssertEqual(try call("GET", "/v1/push/notifications/\(nQuiet)", key: testKey).json["confirmed_count"] as? Int, 0)
    }

    /// A receipt confirms a sealed delivery (what an extension sends after opening the envelope),
    /// once; it answers the same empty 204 for an unknown token, an unknown or malformed id, a
    /// device never addressed and an app that does not confirm (R-IDS-3), changing nothing then.
    func testAReceiptConfirmsASealedDeliveryAndAnswers204WhateverTheCase() throws {
        try idsOnly(app, mode: "sealed")
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: testKey, json: #"{"confirm_deliveries":true}"#).status, 200)
        let (_, key) = try keyPair()
        let phone = try device("test_accept_phone", publicKey: key)
        let stranger = try device("test_accept_stranger", user: "someone_else")
        let n = try send()
        try deliver()
        let unconfirmed = try fingerprint()
        for (id, token) in [(n, "ppt_" + String(repeating: "y", count: 43)), ("pnot_nope", phone.token),
                            (PrefixedID.format(.notification, UUID()), phone.token), (n, stranger.token), (n, "")] {
            let r = try receipt(id, token: token)
            XCTAssertEqual(r.status, 204, r.text)
            XCTAssertTrue(r.body.isEmpty)
        }
        XCTAssertEqual(try fingerprint(), unconfirmed, "no receipt of those changed anything")
        XCTAssertEqual(try receipt(n, token: phone.token).status, 204)
        XCTAssertEqual(try receipt(n, token: phone.token).status, 204, "a second receipt")
        XCTAssertEqual(try count("push_deliveries", "confirmed_at IS NOT NULL"), 1)
        XCTAssertEqual(Self.value(try apiMetrics(),
                                  "pushfleet_pushes_confirmed_total{app_id=\"\(appID)\",mode=\"test\",platform=\"ios\"}"), 1)
        XCTAssertEqual(try call("GET", "/v1/push/notifications/\(n)", key: testKey).json["confirmed_count"] as? Int, 1)
        XCTAssertEqual(try fetch(n, token: phone.token).status, 404, "a sealed notification is never served by the fetch")
        // Bodies are checked before anything else, the same way for every token.
        let bad = try RawHTTP.call(port: port, "POST", "/v1/push/receipts",
                                   headers: [("Authorization", "Bearer \(phone.token)"), ("Content-Type", "application/json")],
                                   body: Array(#"{"notification_id":"\#(n)","extra":1}"#.utf8))
        XCTAssertEqual(bad.status, 422, bad.text)
    }

    /// A flood of fetches with random tokens from one address is refused by that address's limit
    /// (429 with Retry-After, before any database work), while good tokens from another address
    /// keep being served.
    func testAFloodOfRandomTokensFromOneAddressIsLimitedWhileOtherAddressesAreServed() throws {
        let flooded = try startServer { c in
            c.trustedProxies = (try? TrustedProxies(parsing: "127.0.0.1")) ?? TrustedProxies()
            c.previewLimits.perAddressRate = 2
            c.previewLimits.perAddressBurst = 10
            c.previewLimits.overallRate = 50
            c.previewLimits.overallBurst = 100
        }
        extraServers.append(flooded)
        let good = try device("test_accept_good")
        let n = try send()
        try deliver()
        var statuses: [Int: Int] = [:], served = 0
        let started = Date()
        for i in 0..<300 {
            let token = "ppt_" + String((0..<43).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
            let r = try fetch(n, token: token, forwardedFor: "198.51.100.7", on: flooded.api.port)
            statuses[r.status, default: 0] += 1
            if r.status == 429 {
                XCTAssertNotNil(r.headers["retry-after"])
                // A fetch has no key: the message names the preview limits, not which one tripped.
                XCTAssertEqual((r.json["error"] as? [String: Any])?["message"] as? String, PreviewHandler.limitedMessage, r.text)
                XCTAssertFalse(r.text.contains("key"), r.text)
            }
            if i % 30 == 0 {
                let g = try fetch(n, token: good.token, forwardedFor: "198.51.100.8", on: flooded.api.port)
                XCTAssertEqual(g.status, 200, "a good token from another address is served during the flood (\(i))")
                served += 1
            }
        }
        XCTAssertEqual(served, 10)
        // What the address's bucket allows (burst 10, then 2 a second) reaches the database; the rest is 429.
        let allowed = 10 + Int((2 * Date().timeIntervalSince(started)).rounded(.up))
        XCTAssertLessThanOrEqual(statuses[404] ?? 0, allowed, "\(statuses)")
        XCTAssertGreaterThanOrEqual(statuses[429] ?? 0, 300 - allowed, "\(statuses)")
        XCTAssertEqual((statuses[404] ?? 0) + (statuses[429] ?? 0), 300, "\(statuses)")
        let limited = flooded.metrics.previewLimited.value(["address"])
        XCTAssertEqual(limited, Double(statuses[429] ?? 0), "every refusal was the address's limit")
    }

    /// The limiter alone (pure, no clock): an address's flood never spends the overall bucket, and a
    /// token's own limit holds across addresses.
    func testTheLimiterRefusesByAddressBeforeSpendingTheOverallBucket() {
        let limiter = PreviewLimiter(limits: .init(perToken: .init(rate: 1, burst: 2), perAddress: .init(rate: 1, burst: 3),
                                                   overall: .init(rate: 1, burst: 5)))
        var refusals: [PreviewLimiter.Refusal] = []
        for i in 0..<50 {
            if let (why, _) = limiter.admit(tokenKey: [UInt8(i)], address: "a", now: 0) { refusals.append(why) }
        }
        XCTAssertEqual(refusals.count, 47)
        XCTAssertEqual(Set(refusals), [.address])
        XCTAssertNil(limiter.admit(tokenKey: [200], address: "b", now: 0), "overall still has 2 of 5")
        XCTAssertNil(limiter.admit(tokenKey: [200], address: "c", now: 0), "overall's last token")
        XCTAssertEqual(limiter.admit(tokenKey: [200], address: "d", now: 0)?.0, .token, "the token's burst of 2 is spent")
        XCTAssertEqual(limiter.admit(tokenKey: [201], address: "e", now: 0)?.0, .overall)
        XCTAssertNil(limiter.admit(tokenKey: [201], address: "e", now: 1.5), "refilled after a second and a half")
    }
}
