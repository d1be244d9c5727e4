import Foundation
import XCTest
import PushTestSupport
@testable import PushAPI
import PushAcceptance
import PushCore

/// The pure layers of the API: routing, strict body decoding (wrong types 400, unknown fields
/// 422, both naming the field), the error shape, the rate limiter's local stock, the request
/// deadlines and the trusted-proxy rule.
final class RequestParsingTests: XCTestCase {
    func testEveryRouteMatchesItsMethodAndTemplate() {
        for route in APIRoute.allCases {
            let path = route.template.replacingOccurrences(of: "{id}", with: "pdev_x").replacingOccurrences(of: "{kind}", with: "apns")
            XCTAssertEqual(APIRouter.match(method: route.method, path: path),
                           .route(route, id: route.template.contains("{id}") ? "pdev_x" : nil,
                                  kind: route.template.contains("{kind}") ? "apns" : nil), route.rawValue)
            // HEAD is answered wherever GET is (RFC 9110 §9.3.2), as that GET route.
            if route.method == "GET" {
                XCTAssertEqual(APIRouter.match(method: "HEAD", path: path),
                               .route(route, id: route.template.contains("{id}") ? "pdev_x" : nil,
                                      kind: route.template.contains("{kind}") ? "apns" : nil), "HEAD \(route.rawValue)")
            }
        }
        XCTAssertEqual(APIRouter.match(method: "HEAD", path: "/v1/push/notifications/x/cancel"), .methodNotAllowed(allowed: ["POST"]))
        XCTAssertEqual(APIRouter.match(method: "POST", path: "/v1/push/devices"), .methodNotAllowed(allowed: ["PUT", "GET", "HEAD"]))
        XCTAssertEqual(APIRouter.match(method: "GET", path: "/v1/push/notifications/x/cancel"),
                       .methodNotAllowed(allowed: ["POST"]))
        XCTAssertEqual(APIRouter.match(method: "PUT", path: "/v1/push/webhook_endpoints/pwh_x"),
                       .methodNotAllowed(allowed: ["GET", "HEAD", "PATCH", "DELETE"]))
        XCTAssertEqual(APIRouter.match(method: "POST", path: "/v1/push/webhook_endpoints/pwh_x/rotate"), .notFound)
        XCTAssertEqual(APIRouter.match(method: "POST", path: "/v1/push/apps/papp_x/credentials/apns"),
                       .methodNotAllowed(allowed: ["PUT", "DELETE"]))
        XCTAssertEqual(APIRouter.match(method: "GET", path: "/v1/push/apps/papp_x/credentials/twilio"),
                       .methodNotAllowed(allowed: ["PUT", "DELETE"]))
        XCTAssertEqual(APIRouter.match(method: "PUT", path: "/v1/push/apps/papp_x/credentials/sms"), .route(.setCredentials, id: "papp_x", kind: "sms"),
                       "the kind is the route's to judge (404 for an unknown one)")
        for path in ["/", "/v1/push", "/v1/push/devices/", "/v1/push/devices/x/y", "/v2/push/devices", "/v1/push/nope",
                     "/v1/push/notifications/x/retry", "v1/push/devices", "/v1/push//devices",
                     "/v1/push/apps/x/credential", "/v1/push/apps/x/credentials/", "/v1/push/apps/x/credentials/apns/x",
                     "/v1/push/devices/x/credentials/apns"] {
            XCTAssertEqual(APIRouter.match(method: "GET", path: path), .notFound, path)
        }
    }

    func testEveryRouteNamesItsPermission() {
        // R-API-2: push_devices w registers, d removes; push r reads, w sends; push_apps r/w.
        XCTAssertTrue(APIRoute.registerDevice.permission == (.pushDevices, .write))
        XCTAssertTrue(APIRoute.deleteDevice.permission == (.pushDevices, .delete))
        XCTAssertTrue(APIRoute.listDevices.permission == (.push, .read))
        XCTAssertTrue(APIRoute.getNotification.permission == (.push, .read))
        XCTAssertTrue(APIRoute.sendNotification.permission == (.push, .write))
        XCTAssertTrue(APIRoute.cancelNotification.permission == (.push, .write))
        XCTAssertTrue(APIRoute.updateApp.permission == (.pushApps, .write))
        XCTAssertTrue(APIRoute.listApps.permission == (.pushApps, .read))
        // webhooks r reads endpoints, w makes, changes, deletes and rotates them.
        XCTAssertTrue(APIRoute.listWebhookEndpoints.permission == (.webhooks, .read))
        XCTAssertTrue(APIRoute.getWebhookEndpoint.permission == (.webhooks, .read))
        for route in [APIRoute.createWebhookEndpoint, .updateWebhookEndpoint, .deleteWebhookEndpoint, .rotateWebhookSecret] {
            XCTAssertTrue(route.permission == (.webhooks, .write), route.rawValue)
        }
    }

    /// docs/openapi.yaml lists exactly the server's routes (method and path template), each with
    /// the permission the server checks (`x-permission`, R-API-2; `preview_token` for the two
    /// routes a device calls, issue 24): the document cannot name a route the server lacks, miss
    /// one, or promise another permission.
    func testTheOpenAPIDocumentListsEveryRouteWithItsPermission() throws {
        let text = try String(contentsOf: RepoPaths.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var documented: [String: String] = [:]   // "GET /v1/push/devices" -> "push:r"
        var path: String?, method: String?
        var inPaths = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if !line.hasPrefix(" ") { inPaths = line == "paths:"; path = nil; continue }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast()); method = nil
            } else if let m = ["get", "put", "post", "patch", "delete"].first(where: { line == "    \($0):" }) {
                method = m.uppercased()
                if let path { documented["\(m.uppercased()) \(path)"] = "" }
            } else if line.hasPrefix("      x-permission: "), let path, let method {
                documented["\(method) \(path)"] = String(line.dropFirst("      x-permission: ".count))
            }
        }
        var served: [String: String] = [:]
        for route in APIRoute.allCases {
            let (resource, access) = route.permission
            served["\(route.method) \(route.template)"] = "\(resource.rawValue):\(access.rawValue)"
                + (route.alsoNeeds.map { ",\($0.resource.rawValue):\($0.access.rawValue)" } ?? "")
        }
        // The preview routes take a device's preview token, never a key (issue 24).
        for route in PreviewRoute.allCases { served["\(route.method) \(route.template)"] = "preview_token" }
        XCTAssertEqual(documented, served)
    }

    private func refusal(_ body: String, decode: ([UInt8]) throws -> Void) -> APIError? {
        do { try decode(Array(body.utf8)); return nil } catch { return error as? APIError }
    }

    func testDeviceBodiesAreStrict() throws {
        let ok = try DeviceBody.decode(Array(#"{"app_id":"papp_1","token":"t","platform":"ios","user_id":"u","apns_environment":"sandbox","encryption_public_key":null}"#.utf8))
        XCTAssertEqual(ok.request.token, "t")
        XCTAssertEqual(ok.appID, "papp_1")
        XCTAssertEqual(ok.request.encryptionKey, .remove, "null must mean remove (R-DEV-4)")
        let absent = try DeviceBody.decode(Array(#"{"app_id":"a","token":"t","platform":"ios","user_id":"u"}"#.utf8))
        XCTAssertEqual(absent.request.encryptionKey, .keep, "absent must mean keep (R-DEV-4)")
        let set = try DeviceBody.decode(Array(#"{"app_id":"a","token":"t","platform":"ios","user_id":"u","encryption_public_key":"k"}"#.utf8))
        XCTAssertEqual(set.request.encryptionKey, .set("k"))
        let web = try DeviceBody.decode(Array(#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"https://e","keys":{"p256dh":"p","auth":"q"}}}"#.utf8))
        XCTAssertEqual(web.request.subscription?.endpoint, "https://e")
        XCTAssertEqual(web.request.subscription?.auth, "q")
        // `PushSubscription.toJSON()` as a browser gives it: `expirationTime` null or a number (ms).
        for expiration in ["null", "1764633600000", "1.7646336e12"] {
            let json = #"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"https://e","expirationTime":"#
                + expiration + #","keys":{"p256dh":"p","auth":"q"}}}"#
            XCTAssertEqual(try DeviceBody.decode(Array(json.utf8)).request.subscription?.endpoint, "https://e", expiration)
        }

        let cases: [(String, Int, String?)] = [
            (#"{"app_id":"a","token":"t","platform":"ios","user_id":"u","tokn":"x"}"#, 422, "tokn"),
            (#"{"app_id":1,"token":"t","platform":"ios","user_id":"u"}"#, 400, "app_id"),
            (#"{"app_id":"a","token":["t"],"platform":"ios","user_id":"u"}"#, 400, "token"),
            (#"{"app_id":"a","token":"t","platform":"ios"}"#, 422, "user_id"),
            (#"{"app_id":"a","token":"t","platform":"ios","user_id":null}"#, 400, "user_id"),
            (#"{"app_id":"a","token":"t","platform":"ios","user_id":"u","encryption_public_key":5}"#, 400, "encryption_public_key"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"e","keys":{"p256dh":"p"}}}"#, 422, "subscription.keys.auth"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"e","keys":{"p256dh":"p","auth":"a","x":1}}}"#, 422, "subscription.keys.x"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":"e"}"#, 400, "subscription"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"e","expirationTime":"soon","keys":{"p256dh":"p","auth":"a"}}}"#, 400, "subscription.expirationTime"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"e","expirationTime":{},"keys":{"p256dh":"p","auth":"a"}}}"#, 400, "subscription.expirationTime"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"e","expirationTime":1e400,"keys":{"p256dh":"p","auth":"a"}}}"#, 422, "subscription.expirationTime"),
            (#"{"app_id":"a","platform":"web","user_id":"u","subscription":{"endpoint":"e","expiration_time":1,"keys":{"p256dh":"p","auth":"a"}}}"#, 422, "subscription.expiration_time"),
            (#"["a"]"#, 400, nil), (#"{"a":1,"a":2}"#, 400, nil), ("{", 400, nil), ("", 400, nil), ("{} x", 400, nil),
        ]
        for (body, status, field) in cases {
            let e = refusal(body) { _ = try DeviceBody.decode($0) }
            XCTAssertEqual(e?.status, status, body)
            XCTAssertEqual(e?.field, field, body)
        }
        let notUTF8 = [UInt8](#"{"app_id":""#.utf8) + [0xff, 0x22, 0x7d]
        XCTAssertEqual((try? DeviceBody.decode(notUTF8)) == nil, true)
        XCTAssertThrowsError(try DeviceBody.decode(notUTF8)) { XCTAssertEqual(($0 as? APIError)?.message, "the body is not valid UTF-8") }
    }

    func testWebhookEndpointBodiesAreStrict() throws {
        let made = try WebhookEndpointBody.decode(Array(#"{"app_id":"papp_x","url":"https://h.example.com","event_types":["a"]}"#.utf8),
                                                  creating: true)
        XCTAssertEqual(made.appID, "papp_x")
        XCTAssertEqual(made.eventTypes, ["a"])
        XCTAssertNil(made.enabled)
        func refused(_ json: String, creating: Bool) -> (Int, String?) {
            do { _ = try WebhookEndpointBody.decode(Array(json.utf8), creating: creating); return (0, nil) } catch let e as APIError {
                return (e.status, e.field)
            } catch { return (-1, nil) }
        }
        XCTAssertTrue(refused(#"{"enabled":true}"#, creating: true) == (422, "enabled"), "enabled is an update's")
        XCTAssertTrue(refused(#"{"app_id":"papp_x"}"#, creating: false) == (422, "app_id"), "the app is fixed")
        XCTAssertTrue(refused(#"{"mode":"live"}"#, creating: true) == (422, "mode"), "the key's mode, never the body's")
        XCTAssertTrue(refused(#"{"event_types":[1]}"#, creating: false) == (400, "event_types"))
        XCTAssertTrue(refused(#"{"url":true}"#, creating: false) == (400, "url"))
        let update = try WebhookEndpointBody.decode(Array(#"{"enabled":false,"url":null}"#.utf8), creating: false)
        XCTAssertEqual(update.enabled, false)
        XCTAssertNil(update.url)
    }

    func testNotificationBodiesKeepDataOrderAndReadTimes() throws {
        let n = try NotificationBody.decode(Array(#"{"app_id":"a","user_ids":["u1","u2"],"data":{"z":1,"a":{"y":"é/"},"m":[1.50,true]},"badge":3,"send_at":"2026-11-29T12:00:00+01:00","ttl":60,"sms_fallback":{"phone":"+33600000000","text":"t"}}"#.utf8))
        XCTAssertEqual(n.request.userIDs, ["u1", "u2"])
        XCTAssertEqual(n.request.data, #"{"z":1,"a":{"y":"é/"},"m":[1.50,true]}"#)   // R-ENC-9: the client's order and numbers
        XCTAssertEqual(n.request.badge, 3)
        XCTAssertEqual(n.request.ttlSeconds, 60)
        XCTAssertEqual(n.request.sendAt, Date(timeIntervalSince1970: 1_795_953_600 - 3600))
        XCTAssertEqual(n.request.smsFallback?.phone, "+33600000000")
        let cases: [(String, Int, String?)] = [
            (#"{"app_id":"a","user_ids":"u"}"#, 400, "user_ids"),
            (#"{"app_id":"a","user_ids":["u",1]}"#, 400, "user_ids"),
            (#"{"app_id":"a"}"#, 422, "user_ids"),
            (#"{"app_id":"a","user_ids":["u"],"badge":1.5}"#, 400, "badge"),
            (#"{"app_id":"a","user_ids":["u"],"badge":"1"}"#, 400, "badge"),
            (#"{"app_id":"a","user_ids":["u"],"badge":99999999999999999999999}"#, 422, "badge"),
            (#"{"app_id":"a","user_ids":["u"],"data":"{}"}"#, 400, "data"),
            (#"{"app_id":"a","user_ids":["u"],"send_at":"tomorrow"}"#, 422, "send_at"),
            (#"{"app_id":"a","user_ids":["u"],"send_at":"2026-11-29T12:00:00"}"#, 422, "send_at"),
            (#"{"app_id":"a","user_ids":["u"],"sms_fallback":{"phone":"p"}}"#, 422, "sms_fallback.text"),
            (#"{"app_id":"a","user_ids":["u"],"titel":"x"}"#, 422, "titel"),
        ]
        for (body, status, field) in cases {
            let e = refusal(body) { _ = try NotificationBody.decode($0) }
            XCTAssertEqual(e?.status, status, body)
            XCTAssertEqual(e?.field, field, body)
        }
    }

    func testTheErrorShapeIsOneObject() throws {
        var e = APIError(status: 422, code: "PUSH_PAYLOAD_TOO_LARGE", message: "cut 7 bytes", field: nil)
        e.bytesToCut = 7
        XCTAssertEqual(String(decoding: e.body, as: UTF8.self),
                       #"{"error":{"code":"PUSH_PAYLOAD_TOO_LARGE","message":"cut 7 bytes","field":null,"bytes_to_cut":7}}"#)
        XCTAssertEqual(String(decoding: APIError.validation("token: bad", field: "token").body, as: UTF8.self),
                       #"{"error":{"code":"VALIDATION_ERROR","message":"token: bad","field":"token"}}"#)
        XCTAssertEqual(APIError.rateLimited(retryAfterSeconds: 0.2).headers, [.init(name: "Retry-After", value: "1")])
        XCTAssertEqual(APIError.rateLimited(retryAfterSeconds: 2.5).headers, [.init(name: "Retry-After", value: "3")])
    }

    func testTheRateLimiterSpendsChunksLocallyAndRemembersAnEmptyBucket() throws {
        let limiter = RateLimiter()
        let key = UUID()
        var trips: [Int] = []
        var bucket = 25
        func take(_ want: Int) -> (granted: Int, retryAfter: Double) {
            trips.append(want)
            let g = min(want, bucket)
            bucket -= g
            return (g, g == 0 ? 0.5 : 0)
        }
        var admitted = 0
        for i in 0..<40 {
            if case .admitted = limiter.admit(keyID: key, rate: 100, now: 10 + Double(i) * 0.001, take: take) { admitted += 1 }
        }
        XCTAssertEqual(admitted, 25, "never more than the shared bucket granted")
        XCTAssertEqual(trips, [10, 10, 10, 10], "chunks of a tenth of the rate; then the empty bucket is remembered")
        // The 26th request (at 10.025) found the bucket empty, due again 0.5 s later.
        guard case .limited(let wait) = limiter.admit(keyID: key, rate: 100, now: 10.2, take: take) else {
            return XCTFail("no trip while the bucket is known empty")
        }
        XCTAssertEqual(wait, 0.5 - (10.2 - 10.025), accuracy: 1e-9)
        XCTAssertEqual(trips.count, 4)
        bucket = 100
        XCTAssertEqual(limiter.admit(keyID: key, rate: 100, now: 10.6, take: take), .admitted)
        XCTAssertEqual(trips.count, 5)
        // Stock lapses after a second: the next request goes back to the bucket.
        XCTAssertEqual(limiter.admit(keyID: key, rate: 100, now: 11.7, take: take), .admitted)
        XCTAssertEqual(trips.count, 6)
        // Two requests of one replica at the bucket at once: the first takes the last tokens, the
        // second finds it empty, yet there is stock here, so it is admitted, not refused.
        let racing = RateLimiter(), other = UUID()
        var bucketLeft = 10
        let second = racing.admit(keyID: other, rate: 100, now: 20, take: { _ in
            let first = racing.admit(keyID: other, rate: 100, now: 20, take: { want in
                let g = min(want, bucketLeft); bucketLeft -= g; return (g, 0)
            })
            XCTAssertEqual(first, .admitted)
            return (0, 0.5)
        })
        XCTAssertEqual(second, .admitted, "stock a concurrent trip brought serves this request")
        XCTAssertEqual(RateLimiter.chunk(rate: 1), 1)
        XCTAssertEqual(RateLimiter.chunk(rate: 25), 3)
    }

    func testRequestDeadlinesAreAbsolute() {
        typealias T = ConnectionTracker
        XCTAssertFalse(T.expired(phase: .receiving, since: 0, now: 9.9, draining: false, idleTimeout: 75, requestDeadline: 10))
        XCTAssertTrue(T.expired(phase: .receiving, since: 0, now: 10.1, draining: false, idleTimeout: 75, requestDeadline: 10))
        XCTAssertFalse(T.expired(phase: .processing, since: 0, now: 1_000, draining: true, idleTimeout: 75, requestDeadline: 10))
        XCTAssertFalse(T.expired(phase: .idle, since: 0, now: 84, draining: false, idleTimeout: 75, requestDeadline: 10))
        XCTAssertTrue(T.expired(phase: .idle, since: 0, now: 86, draining: false, idleTimeout: 75, requestDeadline: 10))
        XCTAssertTrue(T.expired(phase: .idle, since: 0, now: 0, draining: true, idleTimeout: 75, requestDeadline: 10))
    }

    func testForwardedForIsReadOnlyFromTrustedProxies() throws {
        let none = TrustedProxies()
        XCTAssertEqual(none.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4"), "10.0.0.5")
        let lb = try TrustedProxies(parsing: "10.0.0.0/8, 192.168.1.7")
        XCTAssertEqual(lb.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4"), "1.2.3.4")
        XCTAssertEqual(lb.client(peer: "10.0.0.5", forwardedFor: "9.9.9.9, 1.2.3.4, 10.1.1.1"), "1.2.3.4")
        XCTAssertEqual(lb.client(peer: "192.168.1.7", forwardedFor: "5.6.7.8"), "5.6.7.8")
        XCTAssertEqual(lb.client(peer: "11.0.0.5", forwardedFor: "1.2.3.4"), "11.0.0.5")
        XCTAssertEqual(lb.client(peer: "10.0.0.5", forwardedFor: nil), "10.0.0.5")
        XCTAssertThrowsError(try TrustedProxies(parsing: "10.0.0.0/33"))
        XCTAssertThrowsError(try TrustedProxies(parsing: "lb.example"))
    }

    func testListQueriesRefuseUnknownAndRepeatedArguments() throws {
        typealias Q = HTTPRequest.QueryItem
        let q = try ListQuery.parse([Q("limit", "5"), Q("user_id", "u")], filters: ["user_id"])
        XCTAssertEqual(q.limit, 5)
        XCTAssertEqual(q.filters["user_id"], "u")
        for items in [[Q("limit", "0")], [Q("limit", "101")], [Q("limit", "x")], [Q("usr", "u")], [Q("user_id", "a"), Q("user_id", "b")],
                      [Q("user_id", nil)]] {
            XCTAssertThrowsError(try ListQuery.parse(items, filters: ["user_id"])) { XCTAssertEqual(($0 as? APIError)?.status, 422) }
        }
    }
}
