import Foundation
import XCTest
import PushAPI
import PushCore
import PushStore

/// The authorization matrix (issue 14): every route with no credential, a malformed or unknown
/// key, a revoked key, a key lacking the route's permission (R-API-2), another account's key
/// (R-API-1: 404 like a missing object) and the other mode's key (R-MODE-1): the documented
/// status, and nothing written.
final class AuthorizationMatrixTests: APITestCase {
    private struct Fixture {
        var testDevice = "", testNotification = "", testEndpoint = ""
    }

    private func fixture() throws -> Fixture {
        var f = Fixture()
        f.testDevice = try register(token: "matrix_device")
        let n = try call("POST", "/v1/push/notifications", key: testKey,
                         json: #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"t","send_at":"\#(APITestCase.inADay)"}"#)
        XCTAssertEqual(n.status, 201, n.text)
        f.testNotification = try XCTUnwrap(n.json["id"] as? String)
        let e = try call("POST", "/v1/push/webhook_endpoints", key: testKey,
                         json: #"{"app_id":"\#(appID)","url":"https://hooks.example.com/matrix"}"#)
        XCTAssertEqual(e.status, 201, e.text)
        f.testEndpoint = try XCTUnwrap(e.json["id"] as? String)
        return f
    }

    /// (route, method, path, body) for every route, naming the fixture's objects.
    private func requests(_ f: Fixture) -> [(APIRouteName, String, String, String?)] {
        [
            (.registerDevice, "PUT", "/v1/push/devices", deviceJSON(token: "matrix_new")),
            (.listDevices, "GET", "/v1/push/devices?app_id=\(appID)", nil),
            (.getDevice, "GET", "/v1/push/devices/\(f.testDevice)", nil),
            (.deleteDevice, "DELETE", "/v1/push/devices/\(f.testDevice)", nil),
            (.createApp, "POST", "/v1/push/apps", #"{"name":"new app"}"#),
            (.listApps, "GET", "/v1/push/apps", nil),
            (.getApp, "GET", "/v1/push/apps/\(appID)", nil),
            (.updateApp, "PATCH", "/v1/push/apps/\(appID)", #"{"name":"renamed"}"#),
            (.sendNotification, "POST", "/v1/push/notifications", #"{"app_id":"\#(appID)","user_ids":["user_1042"],"title":"x"}"#),
            (.listNotifications, "GET", "/v1/push/notifications?app_id=\(appID)", nil),
            (.getNotification, "GET", "/v1/push/notifications/\(f.testNotification)", nil),
            (.cancelNotification, "POST", "/v1/push/notifications/\(f.testNotification)/cancel", nil),
            (.revokeNotification, "POST", "/v1/push/notifications/\(f.testNotification)/revoke", nil),
            (.createWebhookEndpoint, "POST", "/v1/push/webhook_endpoints", #"{"app_id":"\#(appID)","url":"https://hooks.example.com/new"}"#),
            (.listWebhookEndpoints, "GET", "/v1/push/webhook_endpoints?app_id=\(appID)", nil),
            (.getWebhookEndpoint, "GET", "/v1/push/webhook_endpoints/\(f.testEndpoint)", nil),
            (.updateWebhookEndpoint, "PATCH", "/v1/push/webhook_endpoints/\(f.testEndpoint)", #"{"enabled":false}"#),
            (.deleteWebhookEndpoint, "DELETE", "/v1/push/webhook_endpoints/\(f.testEndpoint)", nil),
            (.rotateWebhookSecret, "POST", "/v1/push/webhook_endpoints/\(f.testEndpoint)/rotate_secret", nil),
            (.listCredentials, "GET", "/v1/push/apps/\(appID)/credentials", nil),
            (.setCredentials, "PUT", "/v1/push/apps/\(appID)/credentials/webpush", #"{"subject":"mailto:ops@example.com"}"#),
            (.deleteCredentials, "DELETE", "/v1/push/apps/\(appID)/credentials/webpush", nil),
            (.listAuditEvents, "GET", "/v1/push/audit?app_id=\(appID)", nil),
            (.usage, "GET", "/v1/push/usage?app_id=\(appID)", nil),
            (.eraseUser, "DELETE", "/v1/push/users/user_1042?app_id=\(appID)", nil),
        ]
    }

    enum APIRouteName: String {
        case registerDevice, listDevices, getDevice, deleteDevice, createApp, listApps, getApp, updateApp
        case sendNotification, listNotifications, getNotification, cancelNotification, revokeNotification
        case createWebhookEndpoint, listWebhookEndpoints, getWebhookEndpoint, updateWebhookEndpoint, deleteWebhookEndpoint
        case rotateWebhookSecret
        case listCredentials, setCredentials, deleteCredentials
        case listAuditEvents, usage, eraseUser
    }

    /// The permission each route needs, and a key holding every other one.
    private static let needs: [APIRouteName: String] = [
        .registerDevice: "push_devices:w", .deleteDevice: "push_devices:d", .listDevices: "push:r", .getDevice: "push:r",
        .listNotifications: "push:r", .getNotification: "push:r", .sendNotification: "push:w", .cancelNotification: "push:w",
        .revokeNotification: "push:w",
        .createApp: "push_apps:w", .updateApp: "push_apps:w", .listApps: "push_apps:r", .getApp: "push_apps:r",
        .createWebhookEndpoint: "webhooks:w", .updateWebhookEndpoint: "webhooks:w", .deleteWebhookEndpoint: "webhooks:w",
        .rotateWebhookSecret: "webhooks:w", .listWebhookEndpoints: "webhooks:r", .getWebhookEndpoint: "webhooks:r",
        .listCredentials: "push_apps:r", .setCredentials: "push_apps:w", .deleteCredentials: "push_apps:w",
        .listAuditEvents: "push_apps:r", .usage: "push_apps:r", .eraseUser: "push_devices:d",
    ]

    /// The matrix names every route the server has.
    func testTheMatrixCoversEveryRoute() throws {
        let f = Fixture(testDevice: "d", testNotification: "n", testEndpoint: "e")
        XCTAssertEqual(Set(requests(f).map(\.0.rawValue)), Set(APIRoute.allCases.map(\.rawValue)))
        for (name, method, path, _) in requests(f) {
            let route = try XCTUnwrap(APIRoute(rawValue: name.rawValue))
            XCTAssertEqual(route.method, method, name.rawValue)
            XCTAssertEqual(try XCTUnwrap(Self.needs[name]), "\(route.permission.resource.rawValue):\(route.permission.access.rawValue)")
            guard case .route(let matched, _, _) = APIRouter.match(method: method, path: String(path.split(separator: "?")[0])) else {
                return XCTFail("\(path) does not route")
            }
            XCTAssertEqual(matched, route)
        }
    }

    private func allBut(_ permission: String) -> String {
        let (resource, letter) = (permission.split(separator: ":")[0], permission.split(separator: ":")[1])
        let all: [(String, String)] = [("push_devices", "wd"), ("push", "rw"), ("push_apps", "rw"), ("webhooks", "rw")]
        return all.compactMap { r, letters in
            let kept = r == resource ? letters.replacingOccurrences(of: letter, with: "") : letters
            return kept.isEmpty ? nil : "\(r):\(kept)"
        }.joined(separator: ",")
    }

    private func expect(_ method: String, _ path: String, _ body: String?, key: String?, headers: [(String, String)] = [],
                        status: Int, code: String?, _ label: String) throws {
        let before = try fingerprint()
        let r = try call(method, path, key: key, json: body, headers: headers)
        XCTAssertEqual(r.status, status, "\(label): \(method) \(path): \(r.text)")
        if let code { XCTAssertEqual(r.errorCode, code, "\(label): \(method) \(path)") }
        if status >= 400 { XCTAssertEqual(try fingerprint(), before, "\(label): \(method) \(path) wrote something") }
    }

    func testEveryRouteRefusesAMissingMalformedUnknownOrRevokedCredential() throws {
        let f = try fixture()
        let revoked = try issue(.test)
        XCTAssertNotNil(try AccountStore(connection: conn).revokeKey(id: try keyID(revoked)))
        let unknown = "mk_test_" + String(repeating: "Q", count: 32)
        for (route, method, path, body) in requests(f) {
            try expect(method, path, body, key: nil, status: 401, code: "UNAUTHORIZED", "\(route) none")
            try expect(method, path, body, key: unknown, status: 401, code: "UNAUTHORIZED", "\(route) unknown")
            try expect(method, path, body, key: "mk_test_short", status: 401, code: "UNAUTHORIZED", "\(route) malformed")
            try expect(method, path, body, key: revoked, status: 401, code: "UNAUTHORIZED", "\(route) revoked")
            try expect(method, path, body, key: nil, headers: [("Authorization", "Basic \(testKey)")], status: 401,
                       code: "UNAUTHORIZED", "\(route) basic")
        }
        let r = try call("GET", "/v1/push/apps", key: nil)
        XCTAssertEqual(r.headers["www-authenticate"], "Bearer realm=\"pushfleet\"")
    }

    func testEveryRouteRefusesAKeyWithoutItsPermission() throws {
        let f = try fixture()
        for (route, method, path, body) in requests(f) {
            let needed = try XCTUnwrap(Self.needs[route])
            let key = try issue(.test, permissions: allBut(needed))
            try expect(method, path, body, key: key, status: 403, code: "PERMISSION_DENIED", "\(route) without \(needed)")
        }
        // A key that only registers and removes devices (R-API-2) does exactly that.
        let devicesOnly = try issue(.test, permissions: "push_devices:wd")
        XCTAssertEqual(try call("PUT", "/v1/push/devices", key: devicesOnly, json: deviceJSON(token: "only_devices")).status, 200)
        XCTAssertEqual(try call("GET", "/v1/push/devices?app_id=\(appID)", key: devicesOnly).status, 403)
    }

    func testAnotherAccountsKeySeesNothingOfThisAccount() throws {
        let f = try fixture()
        for (route, method, path, body) in requests(f) where route != .createApp && route != .listApps {
            try expect(method, path, body, key: otherTestKey, status: 404, code: "NOT_FOUND", "\(route) other account")
        }
        let list = try call("GET", "/v1/push/apps", key: otherTestKey)
        XCTAssertEqual(list.status, 200)
        let ids = (list.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
        XCTAssertEqual(ids, [otherAppID], "only its own app")
        // Its own objects answer; ours, named with a well-formed id, are exactly like missing ones.
        let missing = try call("GET", "/v1/push/apps/\(PrefixedID.format(.app, UUID()))", key: otherTestKey)
        let ours = try call("GET", "/v1/push/apps/\(appID)", key: otherTestKey)
        XCTAssertEqual(missing.status, ours.status)
        XCTAssertEqual(missing.text, ours.text)
    }

    func testTheOtherModesKeyDoesNotSeeThisModesObjects() throws {
        let f = try fixture()
        for (route, method, path, body) in requests(f)
        where [.getDevice, .deleteDevice, .getNotification, .cancelNotification, .getWebhookEndpoint, .updateWebhookEndpoint,
               .deleteWebhookEndpoint, .rotateWebhookSecret].contains(route) {
            try expect(method, path, body, key: liveKey, status: 404, code: "NOT_FOUND", "\(route) live key on test objects")
        }
        let devices = try call("GET", "/v1/push/devices?app_id=\(appID)", key: liveKey)
        XCTAssertEqual(devices.status, 200)
        XCTAssertEqual((devices.json["data"] as? [Any])?.count, 0, "live credentials see only live devices (R-MODE-1)")
        let notifications = try call("GET", "/v1/push/notifications?app_id=\(appID)", key: liveKey)
        XCTAssertEqual((notifications.json["data"] as? [Any])?.count, 0)
        // The same token registered with the live key is another device, in live mode.
        let live = try call("PUT", "/v1/push/devices", key: liveKey, json: deviceJSON(token: "matrix_device"))
        XCTAssertEqual(live.status, 200)
        XCTAssertNotEqual(live.json["id"] as? String, f.testDevice)
        XCTAssertEqual(try count("push_devices", "token = 'matrix_device'"), 2)
    }

    private func keyID(_ key: String) throws -> UUID {
        try conn.exec("SELECT id FROM push_api_keys WHERE key_hash = $1::bytea", [.bytea(try APIKeyFormat.hash(key))]).uuid(0, 0)
    }
}
