import Foundation
import XCTest
import PushCore

/// R-HOOK-1: the webhook body, `{"id","type","created_at","data"}` with prefixed ids (R-API-4),
/// built from an allow-list per type: never content or a device token.
final class WebhookBodyTests: XCTestCase {
    let eventID = UUID(uuidString: "0F8FAD5B-D9CB-469F-A165-70867728950E")!
    let appID = UUID(uuidString: "7C9E6679-7425-40DE-944B-E07FC1F90AE7")!
    let created = Date(timeIntervalSince1970: 1_796_118_921.380)

    func event(_ type: String, _ payload: String) -> WebhookBody.Event {
        WebhookBody.Event(publicID: eventID, type: type, createdAt: created, appID: appID, payload: payload)
    }

    func text(_ type: String, _ payload: String) throws -> String {
        String(decoding: try WebhookBody.bytes(event(type, payload)), as: UTF8.self)
    }

    func testDeviceDeactivatedBodyIsExact() throws {
        let payload = #"{"mode": "test", "reason": "UNREGISTERED", "user_id": "bob", "device_id": "136a3c38-eb2e-4f48-aea7-68a999ce0102", "notification_id": "6d1381c8-c56a-414b-9f26-80834721eb26"}"#
        XCTAssertEqual(try text("push_device.deactivated", payload),
                       #"{"id":"pevt_0f8fad5bd9cb469fa16570867728950e","type":"push_device.deactivated","#
                       + #""created_at":"2026-12-01T09:55:21.380Z","data":{"app_id":"papp_7c9e6679742540de944be07fc1f90ae7","#
                       + #""device_id":"pdev_136a3c38eb2e4f48aea768a999ce0102","user_id":"bob","mode":"test","#
                       + #""reason":"UNREGISTERED","notification_id":"pnot_6d1381c8c56a414b9f2680834721eb26"}}"#)
    }

    func testDeviceLimitDeactivationHasANullNotification() throws {
        let payload = #"{"mode":"live","reason":"DEVICE_LIMIT","user_id":"u","device_id":"136a3c38-eb2e-4f48-aea7-68a999ce0102"}"#
        XCTAssertTrue(try text("push_device.deactivated", payload).hasSuffix(#""reason":"DEVICE_LIMIT","notification_id":null}}"#))
    }

    func testAppEventsAreLiveAndCarryOnlyTheirFields() throws {
        XCTAssertTrue(try text("push_app.credentials_invalid", #"{"kind":"apns","reason":"InvalidProviderToken"}"#).hasSuffix(
            #""data":{"app_id":"papp_7c9e6679742540de944be07fc1f90ae7","mode":"live","kind":"apns","reason":"InvalidProviderToken"}}"#))
        XCTAssertTrue(try text("push_app.encryption_disabled", #"{"mode":"live"}"#).hasSuffix(
            #""data":{"app_id":"papp_7c9e6679742540de944be07fc1f90ae7","mode":"live"}}"#))
    }

    func testNotificationFinishedCarriesStatusCountAndErrorCode() throws {
        let failed = #"{"mode":"test","status":"failed","device_count":0,"error_code":"NO_DEVICES","notification_id":"6d1381c8-c56a-414b-9f26-80834721eb26"}"#
        XCTAssertTrue(try text("push_notification.finished", failed).hasSuffix(
            #""notification_id":"pnot_6d1381c8c56a414b9f2680834721eb26","mode":"test","status":"failed","device_count":0,"error_code":"NO_DEVICES","sms":null}}"#))
        let sent = #"{"mode":"live","status":"sent","device_count":3,"error_code":null,"notification_id":"6d1381c8-c56a-414b-9f26-80834721eb26"}"#
        XCTAssertTrue(try text("push_notification.finished", sent).hasSuffix(#""status":"sent","device_count":3,"error_code":null,"sms":null}}"#))
        // R-SMS-1: written when the notification is final, before its SMS fallback is sent.
        let fallback = #"{"mode":"test","status":"sms_fallback","device_count":0,"error_code":null,"sms":"queued","notification_id":"6d1381c8-c56a-414b-9f26-80834721eb26"}"#
        XCTAssertTrue(try text("push_notification.finished", fallback).hasSuffix(
            #""status":"sms_fallback","device_count":0,"error_code":null,"sms":"queued"}}"#))
    }

    /// R-SMS-1: the SMS's outcome, as sql/0012's trigger stores it; never the phone or the text,
    /// even when a stored payload held them.
    func testSMSFinishedCarriesTheOutcomeAndNeverThePhoneOrTheText() throws {
        let queued = #"{"mode":"live","status":"queued","provider":"twilio","provider_message_id":"SM0123456789abcdef0123456789abcdef","error_code":null,"provider_error_code":null,"segments":2,"phone":"+33612345678","text":"code 123456","notification_id":"6d1381c8-c56a-414b-9f26-80834721eb26"}"#
        XCTAssertEqual(try text("push_notification.sms_finished", queued),
                       #"{"id":"pevt_0f8fad5bd9cb469fa16570867728950e","type":"push_notification.sms_finished","#
                       + #""created_at":"2026-12-01T09:55:21.380Z","data":{"app_id":"papp_7c9e6679742540de944be07fc1f90ae7","#
                       + #""notification_id":"pnot_6d1381c8c56a414b9f2680834721eb26","mode":"live","status":"queued","#
                       + #""provider":"twilio","provider_message_id":"SM0123456789abcdef0123456789abcdef","error_code":null,"#
                       + #""provider_error_code":null,"segments":2}}"#)
        let expired = #"{"mode":"test","status":"failed","provider":null,"provider_message_id":null,"error_code":"EXPIRED","provider_error_code":null,"segments":null,"notification_id":"6d1381c8-c56a-414b-9f26-80834721eb26"}"#
        XCTAssertTrue(try text("push_notification.sms_finished", expired).hasSuffix(
            #""status":"failed","provider":null,"provider_message_id":null,"error_code":"EXPIRED","provider_error_code":null,"segments":null}}"#))
        XCTAssertThrowsError(try WebhookBody.bytes(event("push_notification.sms_finished", #"{"mode":"test","status":"queued","segments":"2","notification_id":"6d1381c8-c56a-414b-9f26-80834721eb26"}"#)))
        XCTAssertTrue(WebhookEventType.pushNotificationSMSFinished.isOptIn)
        XCTAssertFalse(WebhookEventType.defaultSubscription.contains(.pushNotificationSMSFinished))
    }

    /// Whatever a stored payload holds beyond the type's allow-list never leaves: no token, no content.
    func testMembersOutsideTheAllowListNeverLeave() throws {
        let payload = #"{"mode":"test","reason":"INVALID_TOKEN","user_id":"u","device_id":"136a3c38-eb2e-4f48-aea7-68a999ce0102","token":"fcm-token-abcdef","title":"Your code is 123456","body":"secret","data":{"k":"v"}}"#
        let body = try text("push_device.deactivated", payload)
        for leaked in ["fcm-token-abcdef", "123456", "secret", "token", "title", "\"k\""] {
            XCTAssertFalse(body.contains(leaked), "\(leaked) leaked into \(body)")
        }
        let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(Set(parsed.keys), ["id", "type", "created_at", "data"])
        XCTAssertEqual(Set((parsed["data"] as? [String: Any] ?? [:]).keys),
                       ["app_id", "device_id", "user_id", "mode", "reason", "notification_id"])
    }

    func testTheSameEventGivesTheSameBytes() throws {
        let e = event("push_app.encryption_disabled", #"{"mode":"live"}"#)
        XCTAssertEqual(try WebhookBody.bytes(e), try WebhookBody.bytes(e))
    }

    func testUnknownTypesAndMalformedPayloadsHaveNoBody() {
        XCTAssertThrowsError(try WebhookBody.bytes(event("push_future.thing", "{}"))) {
            XCTAssertEqual($0 as? WebhookBody.Failure, .unknownType("push_future.thing"))
        }
        XCTAssertThrowsError(try WebhookBody.bytes(event("push_device.deactivated", #"{"mode":"test"}"#))) {
            guard case .malformed? = $0 as? WebhookBody.Failure else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try WebhookBody.bytes(event("push_device.deactivated", "[1]")))
        XCTAssertThrowsError(try WebhookBody.bytes(event("push_device.deactivated",
            #"{"mode":"test","reason":"X","user_id":"u","device_id":"not-a-uuid"}"#)))
    }
}
