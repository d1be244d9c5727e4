import Foundation
import XCTest
import PushAPI
import PushCore
import PushStore

/// Keys scoped to apps (issue 15 part 3): `api-keys create --apps` limits a key to some apps of its
/// account; every other app of the same account, and its devices, notifications and webhook
/// endpoints, answer the same 404 as an object that does not exist (R-API-1), and nothing is written.
final class AppScopedKeyTests: APITestCase {
    var sibling: UUID!
    var siblingID: String { PrefixedID.format(.app, sibling) }
    var scopedKey = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        sibling = try AppStore(connection: conn).appCreate(name: "sibling app", accountID: account.id).id
        scopedKey = try AccountStore(connection: conn).issueKey(
            accountID: account.id, mode: .test, permissions: try APIPermissions(parsing: APITestCase.allPermissions),
            rateLimitPerSecond: 100_000, appIDs: [app, app]).key
    }

    /// Objects of the sibling app, made with the account-wide key.
    private func siblingObjects() throws -> (device: String, notification: String, endpoint: String) {
        let d = try call("PUT", "/v1/push/devices", key: testKey, json: deviceJSON(token: "sibling_device", app: siblingID))
        XCTAssertEqual(d.status, 200, d.text)
        let n = try call("POST", "/v1/push/notifications", key: testKey,
                         json: #"{"app_id":"\#(siblingID)","user_ids":["user_1042"],"title":"t","send_at":"\#(APITestCase.inADay)"}"#)
        XCTAssertEqual(n.status, 201, n.text)
        let e = try call("POST", "/v1/push/webhook_endpoints", key: testKey,
                         json: #"{"app_id":"\#(siblingID)","url":"https://hooks.example.com/sibling"}"#)
        XCTAssertEqual(e.status, 201, e.text)
        return (try XCTUnwrap(d.json["id"] as? String), try XCTUnwrap(n.json["id"] as? String), try XCTUnwrap(e.json["id"] as? String))
    }

    /// Every route naming the sibling app or one of its objects, with the same request naming an
    /// object that does not exist: the scoped key gets the same 404 body for both.
    func testEveryRouteAnswersTheSiblingAppLikeAnUnknownOne() throws {
        let o = try siblingObjects()
        let unknownApp = PrefixedID.format(.app, UUID())
        let unknownDevice = PrefixedID.format(.device, UUID())
        let unknownNotification = PrefixedID.format(.notification, UUID())
        let unknownEndpoint = PrefixedID.format(.webhookEndpoint, UUID())
        func pairs() -> [(String, String, String?, String, String?)] {
            func both(_ method: String, _ path: (String) -> String, _ body: ((String) -> String)?, _ real: String, _ unknown: String)
                -> (String, String, String?, String, String?) {
                (method, path(real), body?(real), path(unknown), body?(unknown))
            }
            return [
                both("PUT", { _ in "/v1/push/devices" }, { self.deviceJSON(token: "scoped_new", app: $0) }, siblingID, unknownApp),
                both("GET", { "/v1/push/devices?app_id=\($0)" }, nil, siblingID, unknownApp),
                both("GET", { "/v1/push/devices/\($0)" }, nil, o.device, unknownDevice),
                both("DELETE", { "/v1/push/devices/\($0)" }, nil, o.device, unknownDevice),
                both("GET", { "/v1/push/apps/\($0)" }, nil, siblingID, unknownApp),
                both("PATCH", { "/v1/push/apps/\($0)" }, { _ in #"{"name":"renamed"}"# }, siblingID, unknownApp),
                both("POST", { _ in "/v1/push/notifications" }, { #"{"app_id":"\#($0)","user_ids":["user_1042"],"title":"x"}"# },
                     siblingID, unknownApp),
                both("GET", { "/v1/push/notifications?app_id=\($0)" }, nil, siblingID, unknownApp),
                both("GET", { "/v1/push/notifications/\($0)" }, nil, o.notification, unknownNotification),
                both("POST", { "/v1/push/notifications/\($0)/cancel" }, nil, o.notification, unknownNotification),
                both("POST", { _ in "/v1/push/webhook_endpoints" }, { #"{"app_id":"\#($0)","url":"https://hooks.example.com/n"}"# },
                     siblingID, unknownApp),
                both("GET", { "/v1/push/webhook_endpoints?app_id=\($0)" }, nil, siblingID, unknownApp),
                both("GET", { "/v1/push/webhook_endpoints/\($0)" }, nil, o.endpoint, unknownEndpoint),
                both("PATCH", { "/v1/push/webhook_endpoints/\($0)" }, { _ in #"{"enabled":false}"# }, o.endpoint, unknownEndpoint),
                both("DELETE", { "/v1/push/webhook_endpoints/\($0)" }, nil, o.endpoint, unknownEndpoint),
                both("POST", { "/v1/push/webhook_endpoints/\($0)/rotate_secret" }, nil, o.endpoint, unknownEndpoint),
            ]
        }
        let before = try fingerprint()
        for (method, path, body, unknownPath, unknownBody) in pairs() {
            let real = try call(method, path, key: scopedKey, json: body)
            let unknown = try call(method, unknownPath, key: scopedKey, json: unknownBody)
            XCTAssertEqual(real.status, 404, "\(method) \(path): \(real.text)")
            XCTAssertEqual(real.text, unknown.text, "\(method) \(path) differs from an unknown object's answer")
            // The account-wide key sees the same objects: the 404 is the scope's.
            if method == "GET" {
                XCTAssertEqual(try call(method, path, key: testKey).status, 200, "\(method) \(path) with the account's key")
            }
        }
        XCTAssertEqual(try fingerprint(), before, "a scoped key wrote to an app outside its scope")
    }

    /// Within its app the key works as any other; lists never show the sibling's objects.
    func testTheScopedKeyWorksOnItsAppAndListsOnlyIt() throws {
        _ = try siblingObjects()
        let mine = try register(token: "scoped_mine", apiKey: scopedKey)
        let apps = try call("GET", "/v1/push/apps", key: scopedKey)
        XCTAssertEqual((apps.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [appID])
        let devices = try call("GET", "/v1/push/devices", key: scopedKey)
        XCTAssertEqual((devices.json["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [mine])
        let all = try call("GET", "/v1/push/devices", key: testKey)
        XCTAssertEqual((all.json["data"] as? [Any])?.count, 2, "the account's key sees both apps' devices")
        let notifications = try call("GET", "/v1/push/notifications", key: scopedKey)
        XCTAssertEqual((notifications.json["data"] as? [Any])?.count, 0)
        XCTAssertEqual(try call("GET", "/v1/push/apps/\(appID)", key: scopedKey).status, 200)
        let created = try call("POST", "/v1/push/apps", key: scopedKey, json: #"{"name":"new"}"#)
        XCTAssertEqual(created.status, 403, created.text)
    }

    /// A key is scoped only to its own account's apps: another account's app, or an unknown one,
    /// is refused when the key is made, and the stored list has no duplicate.
    func testScopingToAnotherAccountsAppIsRefused() throws {
        let store = AccountStore(connection: conn)
        let perms = try APIPermissions(parsing: "push:rw")
        XCTAssertThrowsError(try store.issueKey(accountID: account.id, mode: .test, permissions: perms, appIDs: [app, otherApp])) {
            XCTAssertEqual(($0 as? PushError)?.code, .notFound)
        }
        XCTAssertThrowsError(try store.issueKey(accountID: account.id, mode: .test, permissions: perms, appIDs: [])) {
            XCTAssertEqual(($0 as? PushError)?.code, .validationError)
        }
        let listed = try store.listKeys(accountID: account.id).compactMap(\.appIDs)
        XCTAssertEqual(listed, [[app]], "only the setUp's scoped key, its duplicate dropped")
    }
}
