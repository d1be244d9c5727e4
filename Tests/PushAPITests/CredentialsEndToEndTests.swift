import Foundation
import XCTest
import PushCore
import PushCrypto
import PushStore
import PushTestSupport

/// Issue 20 part 1 and issue 15 part 2 end to end, as the fleet runs: credential sets put through
/// `pushfleet api` (a process, its log kept) are used by `pushfleet worker` (another process)
/// against the project's fakes: APNs and FCM take the pushes, Twilio the SMS fallback (R-SEND-6,
/// R-SMS-1), each set then verified (R-APP-3). The SMS outcome the API answers is the one
/// `pushfleet notifications show` prints; no answer and no log of either process holds a secret.
final class CredentialsEndToEndTests: APITestCase {
    static let teamID = "TEAM123456", keyID = "KEY1234567", topic = "com.example.app"
    static let fcmProject = "pushfleet-test", fcmClient = "fcm@pushfleet-test.iam.gserviceaccount.com"
    static let twilioAccount = "AC" + String(repeating: "5e", count: 16)
    static let twilioToken = String(repeating: "7a", count: 16)

    func testSetsPutThroughTheAPIAreUsedByAWorkerAgainstTheFakesAndNoSecretIsShownOrLogged() throws {
        let apns = try FakeProviderServer.startAPNs(teamID: Self.teamID, keyID: Self.keyID, topic: Self.topic)
        defer { apns.stop() }
        let fcm = try FakeProviderServer.startFCM(clientEmail: Self.fcmClient, projectID: Self.fcmProject)
        defer { fcm.stop() }
        let twilio = try FakeProviderServer.startTwilio(accountSID: Self.twilioAccount, authToken: Self.twilioToken)
        defer { twilio.stop() }
        let operatorKey = ["PUSHFLEET_CREDENTIALS_KEY": Base64URL.encode(webhookKeys.current)]
        let server = try APIProcesses.startAPI(databaseURL: db.database.conninfo, environment: operatorKey)
        defer { server.stop(); try? FileManager.default.removeItem(atPath: server.logPath) }

        var answers: [String] = []
        func api(_ method: String, _ path: String, _ object: [String: Any]? = nil, status: Int = 200) throws -> [String: Any] {
            let json = try object.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
            let r = try call(method, path, key: liveKey, json: json, on: server.port)
            answers.append(r.text)
            XCTAssertEqual(r.status, status, "\(method) \(path): \(r.text)")
            return r.json
        }
        let p8 = try FakeMaterial.text("apns_key.p8"), saKey = try FakeMaterial.text("sa_key.pem")
        let credentials = "/v1/push/apps/\(appID)/credentials"
        // R-APP-1: carol's keyless phone cannot take a notification of this app, so hers falls back to SMS.
        _ = try api("PATCH", "/v1/push/apps/\(appID)", ["require_encryption": true])
        _ = try api("PUT", credentials + "/apns", [
            "team_id": Self.teamID, "key_id": Self.keyID, "topic": Self.topic, "p8": p8,
            "apns_base_url_production": apns.baseURL, "apns_base_url_sandbox": apns.baseURL])
        _ = try api("PUT", credentials + "/fcm", [
            "service_account": ["type": "service_account", "project_id": Self.fcmProject, "client_email": Self.fcmClient,
                                "private_key_id": "kid-1", "private_key": saKey, "token_uri": fcm.baseURL + "/token"],
            "fcm_base_url": fcm.baseURL, "fcm_token_uri": fcm.baseURL + "/token"])
        _ = try api("PUT", credentials + "/twilio", [
            "account_sid": Self.twilioAccount, "auth_token": Self.twilioToken, "from": "+15005550006",
            "twilio_base_url": twilio.baseURL])

        for (token, platform, user, key) in [("ok-e2e-ios", "ios", "alice", true), ("ok-e2e-android", "android", "alice", true),
                                             ("ok-e2e-carol", "ios", "carol", false)] {
            var device: [String: Any] = ["app_id": appID, "platform": platform, "token": token, "user_id": user]
            if platform == "ios" { device["apns_environment"] = "production" }
            if key { device["encryption_public_key"] = Self.vectorPublicKey }
            _ = try api("PUT", "/v1/push/devices", device)
        }
        let toAlice = try XCTUnwrap(try api("POST", "/v1/push/notifications", [
            "app_id": appID, "user_ids": ["alice"], "title": "Order shipped", "body": "secret"], status: 201)["id"] as? String)
        let toCarol = try XCTUnwrap(try api("POST", "/v1/push/notifications", [
            "app_id": appID, "user_ids": ["carol"], "title": "Hi Carol", "body": "secret",
            "sms_fallback": ["phone": "+33612345678", "text": "Votre code : 123456"]], status: 201)["id"] as? String)

        let env = operatorKey.merging(["DATABASE_URL": db.database.conninfo,
                                       "PUSHFLEET_PROVIDER_CA_FILE": try FakeMaterial.file("ca.pem")]) { $1 }
        let worker = try APIProcesses.run(["worker", "--until-drained"], environment: env)
        XCTAssertEqual(worker.status, 0, worker.stderr)

        // The providers were reached with the sets' identifiers and secrets (each fake checks them).
        XCTAssertEqual(apns.log("push").map { $0["topic"] as? String }, [Self.topic], "one push, to the set's topic")
        XCTAssertTrue(apns.log("jwt_refused").isEmpty, "the provider token signed with the .p8 put through the API")
        XCTAssertEqual(fcm.log("push").count, 1)
        XCTAssertFalse(fcm.log("oauth").isEmpty, "an OAuth assertion signed with the service account's key")
        let requests = twilio.log("request")
        XCTAssertEqual(requests.count, 1, "exactly one SMS")
        XCTAssertEqual(requests.first?["auth_user"] as? String, Self.twilioAccount)
        XCTAssertEqual(requests.first?["auth_ok"] as? Bool, true, "basic auth with the auth token put through the API")
        XCTAssertEqual(requests.first?["form"] as? [String: [String]],
                       ["To": ["+33612345678"], "From": ["+15005550006"], "Body": ["Votre code : 123456"]])

        let alice = try api("GET", "/v1/push/notifications/\(toAlice)")
        XCTAssertEqual(alice["status"] as? String, "sent")
        XCTAssertEqual((alice["deliveries"] as? [[String: Any]])?.map { $0["status"] as? String }, ["sent", "sent"])
        XCTAssertTrue(alice["sms"] is NSNull, "no SMS fallback: sms is null")
        // R-APP-3: each set used is verified by its first accepted message.
        let sets = try XCTUnwrap(try api("GET", credentials)["data"] as? [[String: Any]])
        for set in sets {
            XCTAssertEqual(set["state"] as? String, "verified", "\(set["kind"] ?? "?")")
            XCTAssertFalse(set["first_accepted_at"] is NSNull, "\(set["kind"] ?? "?")")
        }
        XCTAssertEqual(Set(sets.compactMap { $0["kind"] as? String }), ["apns", "fcm", "twilio"])

        // The SMS outcome on the API's answer, in the one read and in the list, equals `notifications show`'s.
        let carol = try api("GET", "/v1/push/notifications/\(toCarol)")
        XCTAssertEqual(carol["status"] as? String, "sms_fallback")
        let sms = try XCTUnwrap(carol["sms"] as? [String: Any], carol.description)
        XCTAssertEqual(sms["status"] as? String, "queued")
        XCTAssertEqual(sms["provider"] as? String, "twilio")
        XCTAssertEqual(sms["provider_message_id"] as? String, twilio.log("message").first?["sid"] as? String, "Twilio's SID")
        XCTAssertEqual(sms["segments"] as? Int, 1)
        XCTAssertEqual(sms["encoding"] as? String, "GSM-7")
        XCTAssertTrue(sms["request"] is NSNull, "live mode keeps no request body")
        let listed = try XCTUnwrap(try api("GET", "/v1/push/notifications?app_id=\(appID)")["data"] as? [[String: Any]])
        XCTAssertEqual(listed.first { $0["id"] as? String == toCarol }?["sms"] as? NSDictionary, sms as NSDictionary)
        XCTAssertTrue(listed.first { $0["id"] as? String == toAlice }?["sms"] is NSNull)
        try SMSFacts.assertEqual(api: sms, cli: try SMSFacts.shown(toCarol, environment: env))

        // Secrets are write-only: no answer, no line of the server's log or the worker's shows one.
        let secrets = [Self.twilioToken, "PRIVATE KEY"] + CredentialRoutesTests.pemLines(p8) + CredentialRoutesTests.pemLines(saKey)
        let logs = [("the API server's log", server.log), ("the worker's log", worker.stdout + worker.stderr)]
        XCTAssertTrue(server.log.contains("\"event\":\"api.request\""), "the access log was written and read")
        for (label, text) in answers.map({ ("an answer", $0) }) + logs {
            for s in secrets { XCTAssertFalse(text.contains(s), "\(label) shows a secret: \(s.prefix(12))...") }
        }
    }
}

/// The SMS fallback's outcome in test mode (R-MODE-2: the simulator, never a network) on the API's
/// answer: null until the notification is final, then the simulator's verdict, Twilio's magic
/// invalid number included, with the same facts as `notifications show`.
final class SMSOnTheAPITests: APITestCase {
    func testTheSimulatorsOutcomeIsOnTheAnswerAsNotificationsShowPrintsIt() throws {
        XCTAssertEqual(try call("PATCH", "/v1/push/apps/\(appID)", key: liveKey, json: #"{"require_encryption":true}"#).status, 200)
        XCTAssertEqual(try call("PUT", "/v1/push/devices", key: testKey, json: deviceJSON(token: "keyless", user: "carol")).status, 200)
        func send(_ phone: String) throws -> String {
            let r = try call("POST", "/v1/push/notifications", key: testKey, json: """
                {"app_id":"\(appID)","user_ids":["carol"],"title":"Hi","sms_fallback":{"phone":"\(phone)","text":"Code 4242"}}
                """)
            XCTAssertEqual(r.status, 201, r.text)
            XCTAssertTrue(r.json["sms"] is NSNull, "no SMS before the notification is final: \(r.text)")
            return try XCTUnwrap(r.json["id"] as? String)
        }
        let ok = try send("+33612345678"), invalid = try send("+15005550001")
        let plain = try call("POST", "/v1/push/notifications", key: testKey,
                             json: #"{"app_id":"\#(appID)","user_ids":["carol"],"title":"no fallback"}"#).json["id"] as? String
        // The operator key lets the worker's webhook dispatcher drain the events this test's app
        // keeps (APITestCase subscribes it to every type); the SMS simulator needs no credentials.
        // Content is kept, so the simulator's request is still there to read (it is erased with
        // the content, by default as soon as the notification is final).
        let env = ["DATABASE_URL": db.database.conninfo, "PUSHFLEET_CREDENTIALS_KEY": Base64URL.encode(webhookKeys.current),
                   "PUSHFLEET_RETENTION_CONTENT": "keep"]
        let worker = try APIProcesses.run(["worker", "--until-drained"], environment: env)
        XCTAssertEqual(worker.status, 0, worker.stderr)

        func sms(_ id: String) throws -> [String: Any] {
            let r = try call("GET", "/v1/push/notifications/\(id)", key: testKey)
            XCTAssertEqual(r.status, 200, r.text)
            XCTAssertEqual(r.json["status"] as? String, "sms_fallback", r.text)
            let s = try XCTUnwrap(r.json["sms"] as? [String: Any], r.text)
            try SMSFacts.assertEqual(api: s, cli: try SMSFacts.shown(id, environment: env))
            return s
        }
        let queued = try sms(ok)
        XCTAssertEqual(queued["status"] as? String, "queued")
        XCTAssertEqual(queued["provider"] as? String, "simulator")
        XCTAssertEqual(queued["request"] as? String, "To=%2B33612345678&From=%2B15005550006&Body=Code%204242",
                       "the exact form body it would have sent")
        XCTAssertEqual(queued["segments"] as? Int, 1)
        XCTAssertEqual(queued["erased"] as? Bool, false)
        let refused = try sms(invalid)
        XCTAssertEqual(refused["status"] as? String, "failed")
        XCTAssertEqual(refused["error_code"] as? String, "SMS_REJECTED")
        XCTAssertEqual(refused["provider_error_code"] as? String, "21211", "Twilio's code for an invalid To number")
        XCTAssertTrue(refused["provider_message_id"] is NSNull)
        let list = try call("GET", "/v1/push/notifications?app_id=\(appID)&status=sms_fallback", key: testKey)
        let listed = (list.json["data"] as? [[String: Any]]) ?? []
        XCTAssertEqual(Set(listed.compactMap { ($0["sms"] as? [String: Any])?["status"] as? String }), ["queued", "failed"])
        let other = try call("GET", "/v1/push/notifications/\(try XCTUnwrap(plain))", key: testKey)
        XCTAssertTrue(other.json["sms"] is NSNull, "a notification without a fallback answers sms: null")
    }
}


/// The SMS facts the API answers and `notifications show --json` prints (R-SMS-1): one object,
/// member for member (nulls and milliseconds included).
enum SMSFacts {
    static let values = ["status", "provider", "provider_message_id", "error_code", "provider_error_code", "error_detail",
                         "attempts", "segments", "encoding", "request", "erased"]
    static let times = ["queued_at", "sent_at", "finished_at"]

    /// The `sms` object `pushfleet notifications show ID --json` prints for notification `id` (pnot_...).
    static func shown(_ id: String, environment: [String: String]) throws -> [String: Any] {
        let uuid = try XCTUnwrap(PrefixedID.parse(id, as: .notification)).uuidString.lowercased()
        let show = try APIProcesses.run(["notifications", "show", uuid, "--json"], environment: environment)
        XCTAssertEqual(show.status, 0, show.stderr)
        let printed = try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any]
        return try XCTUnwrap(printed?["sms"] as? [String: Any], show.stdout)
    }

    /// The CLI's `sms` is the API's: every member (absent ones null in both) with the same value,
    /// times to the same millisecond.
    static func assertEqual(api: [String: Any], cli: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(Set(api.keys), Set(values + times), "the API's sms members", file: file, line: line)
        XCTAssertEqual(Set(cli.keys), Set(values + times), "the CLI's sms members, nulls too", file: file, line: line)
        for key in values + times {
            XCTAssertEqual(api[key].map { "\($0)" }, cli[key].map { "\($0)" }, key, file: file, line: line)
        }
        for key in times where !(api[key] is NSNull) {
            XCTAssertNotNil((api[key] as? String)?.range(of: #"\.\d{3}Z$"#, options: .regularExpression), "\(key) in ms", file: file, line: line)
        }
    }
}
