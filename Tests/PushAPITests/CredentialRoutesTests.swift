import Foundation
import XCTest
import PushAPI
import PushCore
import PushCrypto
import PushStore
import PushTestSupport

/// `/v1/push/apps/{id}/credentials` (R-APP-3, R-SMS-1; issue 15 part 2): each kind stored through
/// the API with the CLI's checks (one acceptance path), sealed and never answered; a test key and
/// a key without `push_apps` w refused with nothing stored; each bad body refused naming its field.
final class CredentialRoutesTests: APITestCase {
    static let twilioAccount = "AC" + String(repeating: "0f", count: 16)
    static let twilioToken = "0123456789abcdef0123456789abcdef"
    static let apnsIDs = ["team_id": "TEAM123456", "key_id": "KEY1234567", "topic": "com.example.app"]

    func path(_ kind: String, app: String? = nil) -> String { "/v1/push/apps/\(app ?? appID)/credentials/\(kind)" }

    func body(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    func storedSets() throws -> Int { try count("push_credentials") + count("push_sms_credentials") }

    /// The lines of a PEM's base64 body (what a leak of the key would show).
    static func pemLines(_ pem: String) -> [String] {
        pem.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count >= 16 }
    }

    var p8: String { (try? FakeMaterial.text("apns_key.p8")) ?? "missing" }

    var serviceAccount: [String: Any] {
        ["type": "service_account", "project_id": "pushfleet-test", "client_email": "fcm@pushfleet-test.iam.gserviceaccount.com",
         "private_key_id": "kid-1", "private_key": (try? FakeMaterial.text("sa_key.pem")) ?? "missing",
         "token_uri": "https://oauth2.googleapis.com/token"]
    }

    func testEachKindIsStoredThroughTheAPIAndNeverAnsweredWithItsSecret() throws {
        var answers: [String] = []
        func put(_ kind: String, _ object: [String: Any]) throws -> [String: Any] {
            let r = try call("PUT", path(kind), key: liveKey, json: try body(object))
            answers.append(r.text)
            XCTAssertEqual(r.status, 200, "\(kind): \(r.text)")
            XCTAssertEqual(r.json["object"] as? String, "push_credential_set")
            XCTAssertEqual(r.json["kind"] as? String, kind)
            XCTAssertEqual(r.json["state"] as? String, "unverified", "R-APP-3: a new set is unverified")
            XCTAssertEqual(r.json["app_id"] as? String, appID)
            return r.json
        }
        let apns = try put("apns", Self.apnsIDs.merging(["p8": p8]) { $1 })
        XCTAssertEqual(apns["identifiers"] as? [String: String], Self.apnsIDs)
        XCTAssertTrue(apns["first_accepted_at"] is NSNull)
        let fcm = try put("fcm", ["service_account": serviceAccount])
        XCTAssertEqual(fcm["identifiers"] as? [String: String],
                       ["project_id": "pushfleet-test", "client_email": "fcm@pushfleet-test.iam.gserviceaccount.com",
                        "private_key_id": "kid-1"])
        let web = try put("webpush", ["subject": "mailto:ops@example.com"])
        let serverKey = try XCTUnwrap(web["application_server_key"] as? String)
        XCTAssertEqual(Base64URL.decode(serverKey)?.count, 65, "an uncompressed P-256 point")
        XCTAssertEqual(Base64URL.decode(serverKey)?.first, 0x04)
        XCTAssertEqual((web["identifiers"] as? [String: String])?["public_key"], serverKey)
        let twilio = try put("twilio", ["account_sid": Self.twilioAccount, "auth_token": Self.twilioToken, "from": "+15005550006"])
        XCTAssertEqual(twilio["identifiers"] as? [String: String], ["account_sid": Self.twilioAccount, "from": "+15005550006"])
        XCTAssertTrue(apns["application_server_key"] is NSNull)

        // What was sealed opens to exactly what was sent; the VAPID key made is the one answered.
        let opened = try CredentialStore(connection: conn, keys: webhookKeys).load(appID: app)
        func secret(_ k: CredentialKind) -> [UInt8]? { opened.first { $0.summary.kind == k }?.secret }
        XCTAssertEqual(secret(.apns), Array(p8.utf8))
        XCTAssertEqual(secret(.twilio), Array(Self.twilioToken.utf8))
        let sa = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(secret(.fcm)))) as? [String: String])
        XCTAssertEqual(sa["private_key"], serviceAccount["private_key"] as? String)
        let vapid = try VAPIDKeys(privateKeyPEM: String(decoding: try XCTUnwrap(secret(.webpush)), as: UTF8.self))
        XCTAssertEqual(vapid.publicKeyBase64URL, serverKey)

        let list = try call("GET", "/v1/push/apps/\(appID)/credentials", key: liveKey)
        answers.append(list.text)
        XCTAssertEqual(list.status, 200, list.text)
        let kinds = (list.json["data"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } ?? []
        XCTAssertEqual(Set(kinds), ["apns", "fcm", "webpush", "twilio"])
        XCTAssertEqual(list.json["has_more"] as? Bool, false)

        // Replacing a verified set: unverified again, its first acceptance kept for good (R-APP-3).
        _ = try conn.exec("UPDATE push_credentials SET state = 'verified', first_accepted_at = now() - interval '1 day' WHERE kind = 'apns'")
        let replaced = try put("apns", Self.apnsIDs.merging(["p8": p8, "topic": "com.example.other"]) { $1 })
        XCTAssertFalse(replaced["first_accepted_at"] is NSNull, "the first acceptance is kept")
        XCTAssertEqual((replaced["identifiers"] as? [String: String])?["topic"], "com.example.other")

        let removed = try call("DELETE", path("twilio"), key: liveKey)
        XCTAssertEqual(removed.status, 200, removed.text)
        XCTAssertEqual(removed.json["deleted"] as? Bool, true)
        XCTAssertEqual(try call("DELETE", path("twilio"), key: liveKey).status, 404, "no set left to remove")
        XCTAssertEqual(try count("push_sms_credentials"), 0)

        let secrets = [Self.twilioToken, "PRIVATE KEY"] + Self.pemLines(p8)
            + Self.pemLines(serviceAccount["private_key"] as? String ?? "")
        for text in answers {
            for s in secrets { XCTAssertFalse(text.contains(s), "an answer shows a secret: \(s.prefix(12))...") }
        }
    }

    func testATestKeyAndAKeyWithoutPushAppsWriteAreRefusedWithNothingStored() throws {
        let good = try body(["account_sid": Self.twilioAccount, "auth_token": Self.twilioToken, "from": "+15005550006"])
        let reader = try issue(.live, permissions: "push_apps:r,push:rw")
        let noApps = try issue(.live, permissions: "push:rw,push_devices:wd")
        let otherLive = try issue(.live, account: otherAccount.id)
        let before = try fingerprint()
        func refused(_ method: String, _ p: String, key: String, json: String? = nil, status: Int, code: String,
                     _ label: String) throws {
            let r = try call(method, p, key: key, json: json)
            XCTAssertEqual(r.status, status, "\(label): \(r.text)")
            XCTAssertEqual(r.errorCode, code, label)
            XCTAssertFalse(r.text.contains(Self.twilioToken), label)
        }
        // A test key holding every permission: sets serve live mode only (R-APP-3), whatever the body.
        for (method, json) in [("PUT", good), ("PUT", #"{"account_sid":"nope"}"#), ("DELETE", nil)] {
            try refused(method, path("twilio"), key: testKey, json: json, status: 403, code: "PERMISSION_DENIED", "test key \(method)")
        }
        try refused("GET", "/v1/push/apps/\(appID)/credentials", key: testKey, status: 403, code: "PERMISSION_DENIED", "test key list")
        let message = try call("PUT", path("twilio"), key: testKey, json: good).json["error"] as? [String: Any]
        XCTAssertTrue((message?["message"] as? String ?? "").contains("live key"), "the refusal says why")
        // A live key that only reads apps (R-API-2: writing them needs push_apps w).
        try refused("PUT", path("twilio"), key: reader, json: good, status: 403, code: "PERMISSION_DENIED", "push_apps:r PUT")
        try refused("DELETE", path("twilio"), key: reader, status: 403, code: "PERMISSION_DENIED", "push_apps:r DELETE")
        XCTAssertEqual(try call("GET", "/v1/push/apps/\(appID)/credentials", key: reader).status, 200, "reading needs push_apps r")
        try refused("GET", "/v1/push/apps/\(appID)/credentials", key: noApps, status: 403, code: "PERMISSION_DENIED", "no push_apps")
        // Another account's live key: our app is not found (R-API-1); an unknown kind is no path.
        try refused("PUT", path("twilio"), key: otherLive, json: good, status: 404, code: "NOT_FOUND", "other account")
        try refused("PUT", path("sms"), key: liveKey, json: good, status: 404, code: "NOT_FOUND", "unknown kind")
        let unknown = try call("PUT", path("sms"), key: liveKey, json: good).json["error"] as? [String: Any]
        XCTAssertEqual(unknown?["message"] as? String, "no such credential kind: use apns, fcm, webpush or twilio",
                       "the standard table's kinds, then the SMS provider's")
        try refused("DELETE", path("apns"), key: liveKey, status: 404, code: "NOT_FOUND", "no apns set")
        XCTAssertEqual(try storedSets(), 0)
        XCTAssertEqual(try fingerprint(), before, "nothing written")
        // The same body with the live key is stored (the refusals were the key's, not the body's).
        XCTAssertEqual(try call("PUT", path("twilio"), key: liveKey, json: good).status, 200)
        XCTAssertEqual(try storedSets(), 1)
    }

    func testEachBadBodyIsRefusedNamingItsField() throws {
        let apns = Self.apnsIDs.merging(["p8": p8]) { $1 }
        let twilio: [String: Any] = ["account_sid": Self.twilioAccount, "auth_token": Self.twilioToken, "from": "+15005550006"]
        func with(_ base: [String: Any], _ changes: [String: Any?]) -> [String: Any] {
            var o = base
            for (k, v) in changes { o[k] = v }
            return o
        }
        var sa = serviceAccount
        sa.removeValue(forKey: "client_email")
        var badKey = serviceAccount
        badKey["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        let cases: [(String, [String: Any], Int, String, String)] = [
            ("apns", with(apns, ["team_id": "SHORT"]), 422, "VALIDATION_ERROR", "team_id"),
            ("apns", with(apns, ["team_id": nil]), 422, "VALIDATION_ERROR", "team_id"),
            ("apns", with(apns, ["key_id": "KEY-123456"]), 422, "VALIDATION_ERROR", "key_id"),
            ("apns", with(apns, ["topic": "com.example app"]), 422, "VALIDATION_ERROR", "topic"),
            ("apns", with(apns, ["p8": "not a key"]), 422, "VALIDATION_ERROR", "p8"),
            ("apns", with(apns, ["p8": nil]), 422, "VALIDATION_ERROR", "p8"),
            ("apns", with(apns, ["p8": 42]), 400, "INVALID_REQUEST", "p8"),
            ("apns", with(apns, ["apns_base_url_production": "http://127.0.0.1:1"]), 422, "VALIDATION_ERROR", "apns_base_url_production"),
            ("apns", with(apns, ["auth_token": Self.twilioToken]), 422, "VALIDATION_ERROR", "auth_token"),
            ("fcm", [:], 422, "VALIDATION_ERROR", "service_account"),
            ("fcm", ["service_account": "{}"], 400, "INVALID_REQUEST", "service_account"),
            ("fcm", ["service_account": sa], 422, "VALIDATION_ERROR", "service_account.client_email"),
            ("fcm", ["service_account": badKey], 422, "VALIDATION_ERROR", "service_account.private_key"),
            ("webpush", ["subject": "ops@example.com"], 422, "VALIDATION_ERROR", "subject"),
            ("webpush", ["subject": "mailto:ops@example.com", "p8": "x"], 422, "VALIDATION_ERROR", "p8"),
            ("twilio", with(twilio, ["account_sid": "AC123"]), 422, "VALIDATION_ERROR", "account_sid"),
            ("twilio", with(twilio, ["account_sid": nil]), 422, "VALIDATION_ERROR", "account_sid"),
            ("twilio", with(twilio, ["from": "06 12 34 56 78"]), 422, "VALIDATION_ERROR", "from"),
            ("twilio", with(twilio, ["from": nil]), 422, "VALIDATION_ERROR", "from"),
            ("twilio", with(twilio, ["messaging_service_sid": "MG" + String(repeating: "1", count: 32)]), 422, "VALIDATION_ERROR", "from"),
            ("twilio", with(twilio, ["auth_token": "short"]), 422, "VALIDATION_ERROR", "auth_token"),
            ("twilio", with(twilio, ["auth_token": nil]), 422, "VALIDATION_ERROR", "auth_token"),
            ("twilio", with(twilio, ["api_key_sid": "SK" + String(repeating: "a", count: 32)]), 422, "VALIDATION_ERROR", "auth_token"),
            ("twilio", with(twilio, ["auth_token": nil, "api_key_sid": "SK" + String(repeating: "a", count: 32)]), 422,
             "VALIDATION_ERROR", "api_key_secret"),
            ("twilio", with(twilio, ["api_key_sid": "SK12", "auth_token": nil, "api_key_secret": Self.twilioToken]), 422,
             "VALIDATION_ERROR", "api_key_sid"),
            ("twilio", with(twilio, ["api_key_secret": Self.twilioToken]), 422, "VALIDATION_ERROR", "api_key_secret"),
            ("twilio", with(twilio, ["twilio_base_url": "ftp://x.example"]), 422, "VALIDATION_ERROR", "twilio_base_url"),
            ("twilio", with(twilio, ["auth_token": true]), 400, "INVALID_REQUEST", "auth_token"),
            ("twilio", with(twilio, ["sender": "x"]), 422, "VALIDATION_ERROR", "sender"),
        ]
        for (kind, object, status, code, field) in cases {
            let r = try call("PUT", path(kind), key: liveKey, json: try body(object))
            let label = "\(kind) \(field)"
            XCTAssertEqual(r.status, status, "\(label): \(r.text)")
            XCTAssertEqual(r.errorCode, code, "\(label): \(r.text)")
            XCTAssertEqual(r.errorField, field, "\(label): \(r.text)")
            XCTAssertFalse(r.text.contains(Self.twilioToken), "\(label): the refusal quotes the secret")
            for line in Self.pemLines(p8) { XCTAssertFalse(r.text.contains(line), "\(label): the refusal quotes the key") }
        }
        XCTAssertEqual(try storedSets(), 0, "no refused body stored anything")
        for (text, why) in [("[]", "not an object"), ("{\"subject\":", "not JSON")] {
            let r = try call("PUT", path("webpush"), key: liveKey, json: text)
            XCTAssertEqual(r.status, 400, "\(why): \(r.text)")
            XCTAssertEqual(r.errorCode, "INVALID_REQUEST", why)
        }
    }

    func testAServerWithoutTheOperatorKeyCannotSealASet() throws {
        let keyless = try startServer { $0.webhooks = WebhookSettings(keys: nil, allowLoopback: false) }
        extraServers.append(keyless)
        let r = try call("PUT", path("webpush"), key: liveKey, json: #"{"subject":"mailto:ops@example.com"}"#, on: keyless.api.port)
        XCTAssertEqual(r.status, 503, r.text)
        XCTAssertEqual(r.errorCode, "SERVICE_UNAVAILABLE")
        XCTAssertEqual(try storedSets(), 0)
    }
}
