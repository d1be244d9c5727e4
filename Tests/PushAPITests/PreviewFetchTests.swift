import Foundation
import XCTest
@testable import PushAPI
import PushCore
import PushCrypto
@testable import PushStore
import PushWorker

/// The preview token and the device-bound preview fetch (issue 24 parts 2 to 4, R-IDS-2, R-IDS-3).
final class PreviewFetchTests: PreviewTestCase {
    /// A registration answers a preview token only when it creates the device or rotates it; the
    /// token is stored only as its SHA-256; a rotation invalidates the old one at once.
    func testThePreviewTokenIsAnsweredOnceStoredAsAHashAndRotationInvalidatesTheOldOne() throws {
        let first = try device("test_accept")
        XCTAssertTrue(first.token.hasPrefix("ppt_"), first.token)
        XCTAssertEqual(first.token.utf8.count, 4 + PreviewTokenFormat.randomLength)
        XCTAssertEqual(try device("test_accept").token, "", "registering again answers no token")
        let row = try conn.exec("SELECT preview_token_hash, to_jsonb(d)::text AS whole FROM push_devices d WHERE id = $1",
                                [.uuid(first.uuid)])
        XCTAssertEqual(try row.bytes(0, "preview_token_hash"), try PreviewTokenFormat.hash(first.token))
        XCTAssertFalse(try row.string(0, "whole").contains(String(first.token.dropFirst(4))), "never stored in clear")

        let n = try send()
        try deliver()
        XCTAssertEqual(try fetch(n, token: first.token).status, 200)
        let rotated = try device("test_accept", rotate: true)
        XCTAssertTrue(rotated.token.hasPrefix("ppt_"))
        XCTAssertNotEqual(rotated.token, first.token)
        XCTAssertEqual(rotated.id, first.id, "the same device")
        XCTAssertEqual(try fetch(n, token: first.token).status, 404, "the old token no longer works")
        XCTAssertEqual(try fetch(n, token: rotated.token).status, 200)
    }

    /// A keyed device's preview is the push envelope (R-ENC-2) sealed to its current key and opens with
    /// its private key to the exact R-ENC-3 plaintext; a keyless device of the same user gets that
    /// plaintext in clear. Both carry the sent title, body and data exactly.
    func testAKeyedPreviewOpensToTheExactContentAndAKeylessOneIsPlainJSON() throws {
        let (privateKey, publicKey) = try keyPair()
        let keyed = try device("test_accept_keyed", publicKey: publicKey)
        let keyless = try device("test_accept_plain")
        let n = try send(extra: #","title":"Rendez-vous à 12 h","body":"Table 4 — \"booth\"","data":{"order":"42","n":[1,2]},"badge":3,"sound":"ping.caf","thread_id":"t-9""#)
        try deliver()

        let plain = try fetch(n, token: keyless.token)
        XCTAssertEqual(plain.status, 200, plain.text)
        XCTAssertEqual(plain.headers["cache-control"], "no-store")
        let content = try XCTUnwrap(plain.json["content"] as? [String: Any])
        XCTAssertEqual(content["title"] as? String, "Rendez-vous à 12 h")
        XCTAssertEqual(content["body"] as? String, "Table 4 — \"booth\"")
        XCTAssertEqual((content["data"] as? [String: Any])?["order"] as? String, "42")
        XCTAssertEqual(content["badge"] as? Int, 3)
        XCTAssertEqual(content["thread_id"] as? String, "t-9")
        XCTAssertNil(plain.json["envelope"])
        let expected = SealedPlaintext.bytes(for: NotificationContent(
            title: "Rendez-vous à 12 h", body: "Table 4 — \"booth\"",
            data: try JSONParser.parseDataObject(#"{"order":"42","n":[1,2]}"#), badge: 3, sound: "ping.caf", threadId: "t-9"))
        XCTAssertTrue(plain.text.hasSuffix(",\"content\":" + String(decoding: expected, as: UTF8.self) + "}"), plain.text)

        let sealed = try fetch(n, token: keyed.token)
        XCTAssertEqual(sealed.status, 200, sealed.text)
        XCTAssertNil(sealed.json["content"])
        XCTAssertFalse(sealed.text.contains("Rendez-vous"), "nothing in clear for a keyed device")
        let envelope = try XCTUnwrap(sealed.json["envelope"] as? [String: Any])
        XCTAssertEqual(envelope["v"] as? Int, 2)
        XCTAssertEqual(envelope["kid"] as? String, privateKey.publicKey.kid)
        let enc = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(envelope["enc"] as? String)))
        let ct = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(envelope["ct"] as? String)))
        let opened = try EnvelopeSealer().open(enc: enc, ct: ct, with: privateKey)
        XCTAssertEqual(opened, expected, "opens to the exact plaintext")
        let (other, _) = try keyPair()
        XCTAssertThrowsError(try EnvelopeSealer().open(enc: enc, ct: ct, with: other), "sealed to this device's key only")
    }

    /// Revocation between the push and the fetch (R-IDS-2): the fetch that answered 200 answers
    /// 404 after `revoke`; a revocation for one user leaves the other users' devices served.
    func testRevokeBetweenPushAndFetchAnswers404() throws {
        let alice = try device("test_accept_alice", user: "alice")
        let bob = try device("test_accept_bob", user: "bob")
        let n = try send(users: ["alice", "bob"])
        try deliver()
        XCTAssertEqual(try fetch(n, token: alice.token).status, 200)
        XCTAssertEqual(try fetch(n, token: bob.token).status, 200)

        // `"user_ids": null` is refused (400 naming the field), not read as "every device".
        let null = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: #"{"user_ids":null}"#)
        XCTAssertEqual(null.status, 400, null.text)
        XCTAssertTrue(null.text.contains("user_ids"), null.text)
        XCTAssertEqual(try fetch(n, token: alice.token).status, 200, "a refused revoke revokes nothing")
        XCTAssertEqual(try fetch(n, token: bob.token).status, 200)

        let one = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: #"{"user_ids":["alice"]}"#)
        XCTAssertEqual(one.status, 200, one.text)
        XCTAssertEqual(one.json["revoked"] as? Bool, false, "revoked for one user only")
        XCTAssertEqual(try fetch(n, token: alice.token).status, 404)
        XCTAssertEqual(try fetch(n, token: bob.token).status, 200)

        let all = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey)
        XCTAssertEqual(all.status, 200, all.text)
        XCTAssertEqual(all.json["revoked"] as? Bool, true)
        XCTAssertEqual(try fetch(n, token: bob.token).status, 404)

        // Another account's key sees no such notification; a key without push:w may not revoke.
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: otherTestKey).status, 404)
        let reader = try issue(.test, permissions: "push:r")
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(n)/revoke", key: reader).status, 403)
        let bad = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: #"{"user_ids":[]}"#)
        XCTAssertEqual(bad.status, 422, bad.text)
    }

    /// A whole-app audience (issue 22) names no user: each device it was sent to fetches its
    /// preview (R-IDS-2 addresses the devices of the app's audience), a revocation for one user
    /// still takes effect, and a device of a platform the audience left out is refused.
    func testAWholeAppAudienceIsFetchedByItsDevicesAndRevokedPerUser() throws {
        let alice = try device("test_accept_alice", user: "alice")
        let bob = try device("test_accept_bob", user: "bob")
        let carol = try device("test_accept_carol", user: "carol", platform: "android")
        let r = try call("POST", "/v1/push/notifications", key: testKey,
                         json: "{\"app_id\":\"\(appID)\",\"audience\":\"all\",\"platforms\":[\"ios\"],\"title\":\"Maintenance\",\"body\":\"Back at 4\"}")
        XCTAssertEqual(r.status, 201, r.text)
        let n = try XCTUnwrap(r.json["id"] as? String)
        try deliver()
        let served = try fetch(n, token: alice.token)
        XCTAssertEqual(served.status, 200, served.text)
        XCTAssertTrue(served.text.contains("Back at 4"), served.text)
        XCTAssertEqual(try fetch(n, token: bob.token).status, 200)
        XCTAssertEqual(try fetch(n, token: carol.token).status, 404, "android was not in the audience")

        let one = try call("POST", "/v1/push/notifications/\(n)/revoke", key: testKey, json: #"{"user_ids":["alice"]}"#)
        XCTAssertEqual(one.status, 200, one.text)
        XCTAssertEqual(try fetch(n, token: alice.token).status, 404)
        XCTAssertEqual(try fetch(n, token: bob.token).status, 200)
    }

    /// Every refusal is the same 404 with the same body, and the same work: one SHA-256 of the
    /// token and one prepared statement whose executed plan (each node and how many times it ran)
    /// is the same in every case (R-IDS-3; counted, never timed). A notification sent sealed is one
    /// of the refusals (sql/0022: its device opens its push), even to a device it was delivered to.
    func testEveryRefusalIsTheSame404WithTheSameStatementsAndPlan() throws {
        let strict = try AppStore(connection: conn).appCreate(name: "strict", requireEncryption: true, accountID: account.id)
        let strictID = PrefixedID.format(.app, strict.id)
        try idsOnly(strict.id)
        let sealedApp = try AppStore(connection: conn).appCreate(name: "sealed", accountID: account.id)
        let sealedAppID = PrefixedID.format(.app, sealedApp.id)
        let served = try device("test_accept_served", user: "u1")
        let revoked = try device("test_accept_revoked", user: "u1")
        let moved = try device("test_accept_moved", user: "u1")
        let deleted = try device("test_accept_deleted", user: "u1")
        let stranger = try device("test_accept_stranger", user: "u2")
        let refused = try device("test_app_mismatch", user: "u1", app: strictID)
        let other = try device("test_accept_other", user: "u1", app: otherAppID, apiKey: otherTestKey)
        let sealedPhone = try device("test_accept_sealed", user: "u1", app: sealedAppID)
        let n = try send(users: ["u1"])
        let nRevoked = try send(users: ["u1"])
        let nStrict = try send(users: ["u1"], app: strictID)
        let nOther = try send(users: ["u1"], app: otherAppID, apiKey: otherTestKey)
        let nErased = try send(users: ["u1"])
        let nWindow = try send(users: ["u1"])
        let nSealed = try send(users: ["u1"], app: sealedAppID)
        try deliver()
        XCTAssertEqual(try fetch(n, token: served.token).status, 200, "the baseline is served")
        XCTAssertEqual(try fetch(nOther, token: other.token).status, 200, "the other app's token works on its own")
        XCTAssertEqual(try call("POST", "/v1/push/notifications/\(nRevoked)/revoke", key: testKey).status, 200)
        _ = try device("test_accept_moved", user: "u9")
        XCTAssertEqual(try call("DELETE", "/v1/push/devices/\(deleted.id)", key: testKey).status, 200)
        XCTAssertEqual(try count("push_deliveries", "status = 'failed' AND error_code = 'APP_MISMATCH'"), 1)
        let sealedID = try XCTUnwrap(PrefixedID.parse(nSealed, as: .notification))
        XCTAssertEqual(try count("push_deliveries", "status = 'sent' AND notification_id = '\(sealedID.uuidString.lowercased())'"), 1,
                       "the sealed notification reached its device")
        XCTAssertEqual(try count("push_notifications", "content_mode = 'sealed' AND content_erased_at IS NULL AND title IS NOT NULL"), 1,
                       "and its content is still stored")
        try conn.exec("UPDATE push_notifications SET content_erased_at = now(), title = NULL, body = NULL, data = NULL WHERE id = $1",
                      [.uuid(try XCTUnwrap(PrefixedID.parse(nErased, as: .notification)))])
        try conn.exec("UPDATE push_notifications SET preview_until = now() - interval '1 second' WHERE id = $1",
                      [.uuid(try XCTUnwrap(PrefixedID.parse(nWindow, as: .notification)))])

        let cases: [(String, String, String?)] = [
            ("revoked", nRevoked, revoked.token),
            ("moved to another user", n, moved.token),
            ("deactivated", n, deleted.token),
            ("never addressed", n, stranger.token),
            ("delivery refused", nStrict, refused.token),
            ("wrong token", n, "ppt_" + String(repeating: "x", count: 43)),
            ("another app's token", n, other.token),
            ("malformed id", "pnot_not-an-id", served.token),
            ("malformed id, no prefix", "12345", served.token),
            ("unknown notification", PrefixedID.format(.notification, UUID()), served.token),
            ("no token", n, nil),
            ("content erased", nErased, served.token),
            ("preview window over", nWindow, served.token),
            ("sent sealed", nSealed, sealedPhone.token),
        ]
        var bodies = Set<String>()
        for (name, id, token) in cases {
            let r = try fetch(id, token: token)
            XCTAssertEqual(r.status, 404, "\(name): \(r.text)")
            bodies.insert(r.text)
        }
        XCTAssertEqual(bodies.count, 1, "one body for every refusal: \(bodies)")
        XCTAssertEqual(bodies.first, #"{"error":{"code":"NOT_FOUND","message":"no such preview","field":null}}"#)

        // The same statements: what PreviewHandler runs, on one session, counted per case.
        let store = PreviewStore(connection: conn)
        func inputs(_ id: String, _ token: String?) throws -> ([UInt8], UUID) {
            (try PreviewTokenFormat.hash(token ?? ""), PrefixedID.parse(id, as: .notification) ?? PreviewStore.noNotification)
        }
        _ = try store.fetch(tokenHash: [UInt8](repeating: 0, count: 32), notificationID: PreviewStore.noNotification)  // prepare
        var counts: [String: Int] = [:], plans: [String: String] = [:]
        for (name, id, token) in cases {
            let (hash, nid) = try inputs(id, token)
            let before = conn.statementCount
            XCTAssertNil(try store.fetch(tokenHash: hash, notificationID: nid), name)
            counts[name] = conn.statementCount - before
            plans[name] = try executedPlan(hash, nid)
        }
        XCTAssertEqual(Set(counts.values), [1], "one statement in every case: \(counts)")
        XCTAssertEqual(Set(plans.values).count, 1, "the same executed plan in every case:\n\(plans)")
        let (hash, nid) = try inputs(n, served.token)
        XCTAssertNotNil(try store.fetch(tokenHash: hash, notificationID: nid))
        XCTAssertTrue(plans.values.first?.contains("push_devices_preview_token_key") == true, plans.values.first ?? "")
    }

    /// The API's log (every line, debug level, and the access log it writes on standard error)
    /// never carries a preview token, the notification id of a fetch, or content: the access log
    /// names the route template and the client only.
    func testTheLogNeverCarriesAPreviewTokenOrContent() throws {
        let lines = LockedLines()
        var config = APIServer.Config(databaseURL: db.database.conninfo, address: try ListenAddress.parse("127.0.0.1:0"),
                                      management: nil)
        config.poolSize = 4
        let server = try APIServer.start(config, log: Log(level: .debug, sink: { lines.append($0) }))
        extraServers.append(server)
        let phone = try device("test_accept_logged")
        let n = try send(extra: #","title":"Secret title 7731","body":"Secret body 5521""#)
        try deliver()
        // Standard error into a pipe while the three requests run (a few lines: far below its buffer).
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let saved = dup(2)
        dup2(fds[1], 2)
        let served = try fetch(n, token: phone.token, on: server.api.port)
        let refused = try fetch(n, token: phone.token + "x", on: server.api.port)
        let receipt = try RawHTTP.call(port: server.api.port, "POST", "/v1/push/receipts",
                                       headers: [("Authorization", "Bearer \(phone.token)"), ("Content-Type", "application/json")],
                                       body: Array("{\"notification_id\":\"\(n)\"}".utf8))
        Thread.sleep(forTimeInterval: 0.3)  // the access log line is written once the answer is sent
        dup2(saved, 2)
        close(saved)
        close(fds[1])
        var captured = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let k = read(fds[0], &chunk, chunk.count)
            if k <= 0 { break }
            captured += chunk[0..<k]
        }
        close(fds[0])
        XCTAssertEqual(served.status, 200)
        XCTAssertTrue(served.text.contains("Secret title 7731"), "the fetch was served")
        XCTAssertEqual(refused.status, 404)
        XCTAssertEqual(receipt.status, 204)
        let access = String(decoding: captured, as: UTF8.self)
        XCTAssertEqual(access.components(separatedBy: "\"route\":\"/v1/push/previews/{id}\"").count - 1, 2, access)
        XCTAssertTrue(access.contains("\"route\":\"/v1/push/receipts\""), access)
        let text = access + lines.all.joined(separator: "\n")
        for secret in [String(phone.token.dropFirst(4).prefix(20)), "Secret title", "Secret body", String(n.dropFirst(5))] {
            XCTAssertFalse(text.contains(secret), "the log holds \(secret)")
        }
    }

    /// The executed plan of the fetch for these inputs, as its nodes (type, relation, index) and
    /// how many times each ran, without timings or row counts. (A refusal writes nothing, so
    /// executing it under EXPLAIN ANALYZE changes nothing either.)
    private func executedPlan(_ hash: [UInt8], _ nid: UUID) throws -> String {
        do {
            let r = try conn.exec("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) " + PreviewQueries.fetch,
                                  [.bytea(hash), .uuid(nid), .bool(true)])
            let json = try JSONSerialization.jsonObject(with: Data(try r.string(0, 0).utf8)) as? [[String: Any]]
            var out: [String] = []
            func walk(_ node: [String: Any], _ depth: Int) {
                let parts = [node["Node Type"], node["Relation Name"], node["Index Name"], node["Actual Loops"]]
                    .map { $0.map { "\($0)" } ?? "-" }
                out.append(String(repeating: " ", count: depth) + parts.joined(separator: " "))
                for child in node["Plans"] as? [[String: Any]] ?? [] { walk(child, depth + 1) }
            }
            if let plan = json?.first?["Plan"] as? [String: Any] { walk(plan, 0) }
            return out.joined(separator: "\n")
        }
    }
}

/// Log lines collected from the server's threads.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
