import Foundation
import XCTest
import PushCore
import PushStore

/// The product documentation's own curl commands (R-DEV-3, R-API-2), run with the curl binary against a live server,
/// only the host, the key, the app id and the public key replaced (issue 14, tests).
final class SeedCurlTests: APITestCase {
    /// Runs /usr/bin/curl with `arguments`; returns its stdout.
    private func curl(_ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return String(decoding: data, as: UTF8.self)
    }

    private func object(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    func testTheSeedsRegistrationCommandAnswersTheVectorsKid() throws {
        // The documented command: curl -X PUT https://api.honkio.ca/v1/push/devices ...
        let body = """
        {
            "app_id": "\(appID)",
            "token": "test_accept",
            "platform": "ios",
            "user_id": "user_1042",
            "apns_environment": "sandbox",
            "encryption_public_key": "\(Self.vectorPublicKey)"
          }
        """
        let answer = try object(try curl(["-X", "PUT", "http://127.0.0.1:\(port)/v1/push/devices",
                                          "-H", "Authorization: Bearer \(testKey)",
                                          "-H", "Content-Type: application/json",
                                          "-d", body]))
        // # Response: { "id": "pdev_...", "active": true, "encryption_key_id": "cHRL-UfvREIeEx3Q", ... }
        XCTAssertEqual(answer["active"] as? Bool, true, "\(answer)")
        XCTAssertEqual(answer["encryption_key_id"] as? String, "cHRL-UfvREIeEx3Q")
        XCTAssertEqual(Self.vectorKid, "cHRL-UfvREIeEx3Q")
        let id = try XCTUnwrap(answer["id"] as? String)
        XCTAssertTrue(id.hasPrefix("pdev_") && id.count == 37, id)
        XCTAssertEqual(answer["app_id"] as? String, appID)
        XCTAssertNil(answer["encryption_public_key"], "the key is never returned (R-DEV-3)")
        XCTAssertNil(answer["token"])
        // Stored as a test device (the key's mode, R-MODE-1) with the key and its kid.
        let row = try conn.exec("SELECT mode, kid, octet_length(public_key) AS n FROM push_devices WHERE id = $1::uuid",
                                [.uuid(try XCTUnwrap(PrefixedID.parse(id, as: .device)))])
        XCTAssertEqual(try row.string(0, "mode"), "test")
        XCTAssertEqual(try row.string(0, "kid"), Self.vectorKid)
        XCTAssertEqual(try row.int(0, "n"), 65)
        // Registering again without the field keeps the key (R-DEV-4).
        let again = try call("PUT", "/v1/push/devices", key: testKey, json: deviceJSON())
        XCTAssertEqual(again.json["id"] as? String, id)
        XCTAssertEqual(again.json["encryption_key_id"] as? String, Self.vectorKid)
        // An explicit null removes it.
        let removed = try call("PUT", "/v1/push/devices", key: testKey,
                               json: deviceJSON().replacingOccurrences(of: "}", with: ",\"encryption_public_key\":null}"))
        XCTAssertEqual(removed.status, 200, removed.text)
        XCTAssertTrue(removed.json["encryption_key_id"] is NSNull, removed.text)
    }

    func testTheSeedsRequireEncryptionCommandNeedsALiveKeyAndTurningItOffIsRecorded() throws {
        let patch = { (key: String, value: Bool) throws -> String in
            try self.curl(["-X", "PATCH", "http://127.0.0.1:\(self.port)/v1/push/apps/\(self.appID)",
                           "-H", "Authorization: Bearer \(key)",
                           "-H", "Content-Type: application/json",
                           "-d", "{ \"require_encryption\": \(value) }"])
        }
        // A test key may not change what governs live traffic (R-API-2).
        let refused = try object(try patch(testKey, true))
        XCTAssertEqual((refused["error"] as? [String: Any])?["code"] as? String, "PERMISSION_DENIED")
        XCTAssertEqual((refused["error"] as? [String: Any])?["field"] as? String, "require_encryption")
        XCTAssertFalse(try AppStore(connection: conn).appGet(id: app)!.requireEncryption)
        // # Response: the app, with "require_encryption": true.
        let app = try object(try patch(liveKey, true))
        XCTAssertEqual(app["require_encryption"] as? Bool, true, "\(app)")
        XCTAssertEqual(app["id"] as? String, appID)
        XCTAssertTrue(try AppStore(connection: conn).appGet(id: self.app)!.requireEncryption)
        XCTAssertEqual(try count("push_events", "type = 'push_app.encryption_disabled'"), 0)
        // Turning it off is made visible: one push_app.encryption_disabled event for the live mode.
        let off = try object(try patch(liveKey, false))
        XCTAssertEqual(off["require_encryption"] as? Bool, false)
        let events = try conn.exec("SELECT payload->>'mode' AS mode, app_id FROM push_events WHERE type = 'push_app.encryption_disabled'")
        XCTAssertEqual(events.rowCount, 1)
        XCTAssertEqual(try events.string(0, "mode"), "live")
        XCTAssertEqual(try events.uuid(0, "app_id"), self.app)
        // Setting it to the value it has is no change, and a test key may do that.
        XCTAssertEqual(try object(try patch(testKey, false))["require_encryption"] as? Bool, false)
        XCTAssertEqual(try count("push_events", "type = 'push_app.encryption_disabled'"), 1)
    }
}
