import Foundation
@testable import PushAcceptance
import PushCore
import PushCrypto
import PushStore
import XCTest

/// R-LIM-1: every bounded field, at its bound and one past it, through the acceptance service and
/// through the SQL function directly (as any backend may call it, `push_enqueue`). Both accept the
/// bound, both refuse one more with VALIDATION_ERROR naming the same field, and no message quotes
/// the content.
final class FieldBoundsTests: AcceptanceTestCase {
    var app: UUID!

    override func setUpWithError() throws {
        try super.setUpWithError()
        app = try makeApp()
    }

    func base() -> SendRequest {
        var r = SendRequest(appID: app, mode: .test, userIDs: ["alice"])
        r.title = "t"
        return r
    }

    /// The request as the storage step receives it (what a backend would pass to push_enqueue).
    func enqueueRequest(_ r: SendRequest) -> EnqueueRequest { SendValidation.storageRequest(r, data: r.data) }

    func sqlError(_ q: EnqueueRequest) -> PushError? {
        do {
            _ = try NotificationStore(connection: conn).enqueue(q)
            return nil
        } catch let e as PGError {
            return StoreErrors.domainError(e) ?? PushError(.providerError, "raw database error \(e)")
        } catch {
            return PushError(.providerError, "\(error)")
        }
    }

    /// `accepted` passes both paths; `refused` fails both with `field`, without quoting `marker`.
    func check(_ field: String, marker: String? = nil, accepted: (inout SendRequest) -> Void,
                       refused: (inout SendRequest) -> Void, file: StaticString = #filePath, line: UInt = #line) {
        var ok = base()
        accepted(&ok)
        XCTAssertNoThrow(try service.send(ok), "service, \(field) at its bound", file: file, line: line)
        XCTAssertNil(sqlError(enqueueRequest(ok)), "push_enqueue, \(field) at its bound", file: file, line: line)
        var bad = base()
        refused(&bad)
        assertRefused(.validationError, field: field, quoting: marker, file: file, line: line) { _ = try service.send(bad) }
        let e = sqlError(enqueueRequest(bad))
        XCTAssertEqual(e?.code, .validationError, "push_enqueue, \(field): \(e.map(String.init(describing:)) ?? "accepted")",
                       file: file, line: line)
        XCTAssertEqual(e?.field, field, e?.message ?? "", file: file, line: line)
        if let marker, let e { XCTAssertFalse(e.message.contains(marker), e.message, file: file, line: line) }
    }

    func testUserIDs() throws {
        check("user_ids", accepted: { $0.userIDs = (0..<1000).map { "user\($0)" } },
              refused: { $0.userIDs = (0..<1001).map { "user\($0)" } })
        check("user_ids", accepted: { $0.userIDs = [String(repeating: "é", count: 255)] },
              refused: { $0.userIDs = ["ok", String(repeating: "u", count: 256)] })
        check("user_ids", accepted: { $0.userIDs = ["a"] }, refused: { $0.userIDs = ["a", ""] })
        // A NULL element and an empty array reach the SQL function only from another backend.
        for bad in ["ARRAY['a', NULL]::text[]", "'{}'::text[]", "NULL::text[]", "ARRAY[ARRAY['a'],ARRAY['b']]"] {
            XCTAssertThrowsError(try conn.exec("""
                SELECT push_enqueue($1::uuid, 'test', \(bad), NULL, 't', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                    NULL, NULL, NULL, NULL, NULL)
                """, [.uuid(app)]), bad) { error in
                XCTAssertEqual((error as? PGError).flatMap(StoreErrors.domainError)?.field, "user_ids", "\(error)")
            }
        }
    }

    func testDeviceIDs() throws {
        check("device_ids", accepted: { $0.deviceIDs = (0..<1000).map { _ in UUID() } },
              refused: { $0.deviceIDs = (0..<1001).map { _ in UUID() } })
        check("device_ids", accepted: { $0.deviceIDs = [UUID()] }, refused: { $0.deviceIDs = [] })
    }

    func testDataTextAndShape() throws {
        let pad = { (n: Int) in #"{"a":"SECRET"}"# + String(repeating: " ", count: n - 14) }
        check("data", accepted: { $0.data = pad(65_536) }, refused: { $0.data = pad(65_537) })
        check("data", marker: "SECRET", accepted: { $0.data = #"{"a":"SECRET"}"# }, refused: { $0.data = #"{"a":"SECRET""# })
        check("data", marker: "SECRET", accepted: { $0.data = "{}" }, refused: { $0.data = #"["SECRET"]"# })
        check("data", accepted: { $0.data = #"{"a":"\u0001"}"# }, refused: { $0.data = #"{"a":"\u0000"}"# })
    }

    func testClearFieldsAreMeasuredAsEscapedInJSON() throws {
        for field in ["sound", "thread_id"] {
            let set: (inout SendRequest, String) -> Void = { r, v in if field == "sound" { r.sound = v } else { r.threadID = v } }
            check(field, accepted: { set(&$0, String(repeating: "s", count: 64)) }, refused: { set(&$0, String(repeating: "s", count: 65)) })
            check(field, accepted: { set(&$0, String(repeating: "\"", count: 32)) }, refused: { set(&$0, String(repeating: "\"", count: 33)) })
            check(field, accepted: { set(&$0, String(repeating: "\u{1}", count: 10)) },
                  refused: { set(&$0, String(repeating: "\u{1}", count: 11)) })
            check(field, accepted: { set(&$0, String(repeating: "é", count: 32)) }, refused: { set(&$0, String(repeating: "é", count: 32) + "e") })
        }
    }

    func testCollapseKeyBadgeTTLPriority() throws {
        check("collapse_key", accepted: { $0.collapseKey = String(repeating: "k", count: 64) },
              refused: { $0.collapseKey = String(repeating: "k", count: 65) })
        check("collapse_key", accepted: { $0.collapseKey = "k" }, refused: { $0.collapseKey = "k\r\nx-injected: 1" })
        check("collapse_key", accepted: { $0.collapseKey = "k" }, refused: { $0.collapseKey = "" })
        check("badge", accepted: { $0.badge = 2_147_483_647 }, refused: { $0.badge = -1 })
        assertRefused(.validationError, field: "badge") { _ = try service.send({ var r = base(); r.badge = 2_147_483_648; return r }()) }
        check("ttl", accepted: { $0.ttlSeconds = 2_419_200 }, refused: { $0.ttlSeconds = 2_419_201 })
        check("ttl", accepted: { $0.ttlSeconds = 0 }, refused: { $0.ttlSeconds = -1 })
        assertRefused(.validationError, field: "ttl") { _ = try service.send({ var r = base(); r.ttlSeconds = 1 << 31; return r }()) }
        check("priority", accepted: { $0.priority = "normal" }, refused: { $0.priority = "urgent" })
    }

    func testSendAtWindowAndFiniteness() throws {
        let day = 86_400.0
        check("send_at", accepted: { $0.sendAt = Date().addingTimeInterval(364 * day) },
              refused: { $0.sendAt = Date().addingTimeInterval(366 * day) })
        check("send_at", accepted: { $0.sendAt = Date().addingTimeInterval(-29 * day) },
              refused: { $0.sendAt = Date().addingTimeInterval(-31 * day) })
        check("send_at", accepted: { $0.sendAt = Date() }, refused: { $0.sendAt = Date(timeIntervalSince1970: 1e300) })
        for value in ["infinity", "-infinity"] {
            XCTAssertThrowsError(try conn.exec("""
                SELECT push_enqueue($1::uuid, 'test', ARRAY['a'], NULL, 't', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                    '\(value)'::timestamptz, NULL, NULL, NULL, NULL)
                """, [.uuid(app)])) { error in
                XCTAssertEqual((error as? PGError).flatMap(StoreErrors.domainError)?.field, "send_at", "\(error)")
            }
        }
    }

    func testIdempotencyKeyAndSMSFallback() throws {
        check("idempotency_key", accepted: { $0.idempotencyKey = String(repeating: "i", count: 255) },
              refused: { $0.idempotencyKey = String(repeating: "i", count: 256) })
        // R-SMS-1: E.164, `+` and 8 to 15 digits, the first not 0; the same refusal from the service and push_enqueue.
        check("sms_fallback.phone", accepted: { $0.smsFallback = .init(phone: "+123456789012345", text: "t") },
              refused: { $0.smsFallback = .init(phone: "+1234567890123456", text: "t") })
        check("sms_fallback.phone", accepted: { $0.smsFallback = .init(phone: "+12345678", text: "t") },
              refused: { $0.smsFallback = .init(phone: "+1234567", text: "t") })
        for bad in ["+05005550006", "33612345678", "+33 6 12 34 56 78", "+33-612345678", "+3361234567a", "++33612345678"] {
            check("sms_fallback.phone", marker: bad, accepted: { $0.smsFallback = .init(phone: "+33612345678", text: "t") },
                  refused: { $0.smsFallback = .init(phone: bad, text: "t") })
        }
        check("sms_fallback.text", accepted: { $0.smsFallback = .init(phone: "+15005550006", text: String(repeating: "é", count: 1600)) },
              refused: { $0.smsFallback = .init(phone: "+15005550006", text: String(repeating: "t", count: 1601)) })
        check("sms_fallback.text", accepted: { $0.smsFallback = .init(phone: "+15005550006", text: "t") },
              refused: { $0.smsFallback = .init(phone: "+15005550006", text: "") })
    }

    /// R-SMS-1: the accepted SMS fallback's segments and encoding come back with the notification.
    func testTheSMSSegmentsAreComputedAtAcceptance() throws {
        var r = base()
        XCTAssertNil(try service.send(r).smsSegments)
        r.smsFallback = .init(phone: "+15005550006", text: String(repeating: "a", count: 161))
        XCTAssertEqual(try service.send(r).smsSegments.map { [$0.count, $0.units] }, [2, 161])
        XCTAssertEqual(try service.send(r).smsSegments?.encoding, .gsm7)
        r.smsFallback = .init(phone: "+15005550006", text: "Code ✓ 42")
        XCTAssertEqual(try service.send(r).smsSegments?.encoding, .ucs2)
        XCTAssertEqual(try service.send(r).smsSegments?.count, 1)
    }

    func testAppFields() throws {
        func sqlField(_ sql: String, _ params: [PGValue?]) -> String? {
            do { _ = try conn.exec(sql, params); return nil } catch let e as PGError { return StoreErrors.domainError(e)?.field ?? "raw: \(e)" } catch { return "\(error)" }
        }
        let create = "SELECT * FROM push_app_create($1::text, NULL, $2::text, $3::text)"
        // The placeholder loc keys (sql/0011) are set through push_app_update (in the creating
        // transaction for a new app).
        let update = "SELECT * FROM push_app_update($1::uuid, NULL, NULL, NULL, NULL, $2::text, $3::text)"
        XCTAssertNoThrow(try service.createApp(AppCreateRequest(name: String(repeating: "n", count: 200))))
        assertRefused(.validationError, field: "name") { _ = try service.createApp(AppCreateRequest(name: String(repeating: "n", count: 201))) }
        assertRefused(.validationError, field: "name") { _ = try service.createApp(AppCreateRequest(name: "")) }
        XCTAssertEqual(sqlField(create, [.text(String(repeating: "n", count: 201)), nil, nil]), "name")
        // 96 bytes as escaped (sql/0011; 128 before): 96 plain bytes or 48 escaped backslashes pass.
        let atBound = AppCreateRequest(name: "n", placeholderTitle: String(repeating: "p", count: 96),
                                       placeholderBody: String(repeating: "\\", count: 48),
                                       placeholderTitleLocKey: String(repeating: "k", count: 96),
                                       placeholderBodyLocKey: String(repeating: "\"", count: 48))
        XCTAssertNoThrow(try service.createApp(atBound))
        XCTAssertNil(sqlField(create, [.text("n"), atBound.placeholderTitle.map(PGValue.text), atBound.placeholderBody.map(PGValue.text)]))
        XCTAssertNil(sqlField(update, [.uuid(app), atBound.placeholderTitleLocKey.map(PGValue.text),
                                       atBound.placeholderBodyLocKey.map(PGValue.text)]))
        func sqlFieldOf(_ r: AppCreateRequest) -> String? {
            r.placeholderTitleLocKey == nil && r.placeholderBodyLocKey == nil
                ? sqlField(create, [.text(r.name), r.placeholderTitle.map(PGValue.text), r.placeholderBody.map(PGValue.text)])
                : sqlField(update, [.uuid(app), r.placeholderTitleLocKey.map(PGValue.text), r.placeholderBodyLocKey.map(PGValue.text)])
        }
        for (field, over) in [("placeholder_title", AppCreateRequest(name: "n", placeholderTitle: String(repeating: "p", count: 97))),
                              ("placeholder_body", AppCreateRequest(name: "n", placeholderBody: String(repeating: "\\", count: 49))),
                              ("placeholder_title_loc_key", AppCreateRequest(name: "n", placeholderTitleLocKey: String(repeating: "k", count: 97))),
                              ("placeholder_body_loc_key", AppCreateRequest(name: "n", placeholderBodyLocKey: String(repeating: "\n", count: 49)))] {
            assertRefused(.validationError, field: field) { _ = try service.createApp(over) }
            XCTAssertEqual(sqlFieldOf(over), field)
            assertRefused(.validationError, field: field) {
                _ = try service.updateApp(id: app, AppUpdateRequest(placeholderTitle: over.placeholderTitle, placeholderBody: over.placeholderBody,
                                                                     placeholderTitleLocKey: over.placeholderTitleLocKey,
                                                                     placeholderBodyLocKey: over.placeholderBodyLocKey))
            }
        }
        XCTAssertEqual(sqlField("SELECT * FROM push_app_update($1::uuid, NULL, NULL, NULL, $2::text)",
                                [.uuid(app), .text(String(repeating: "n", count: 201))]), "name")
        assertRefused(.notFound) { _ = try service.updateApp(id: UUID(), AppUpdateRequest(name: "x")) }
    }

    /// R-DEV-1 at the storage boundary: tokens that the registry's Swift validation refuses are
    /// refused by `push_register_device_v2` too (CR/LF, `/`, spaces, `@`, over 512 characters), as
    /// are a missing apns_environment and out-of-bounds user ids.
    func testDeviceFieldsAtTheStorageBoundary() throws {
        func register(token: String?, user: String = "u", platform: String = "ios", env: String? = "sandbox") -> String? {
            do {
                _ = try conn.exec("""
                    SELECT * FROM push_register_device_v2($1::uuid, 'test', $2::text, $3::text, NULL, NULL, NULL, $4::text,
                                                          $5::text, 'keep', NULL, NULL, $6::bigint, $7::int)
                    """, [.uuid(app), .text(platform), token.map(PGValue.text), .text(user), env.map(PGValue.text),
                          .int64(DeviceLimits.perApp(.test)), .int(DeviceLimits.perUser)])
                return nil
            } catch let e as PGError { return StoreErrors.domainError(e)?.field ?? "raw: \(e)" } catch { return "\(error)" }
        }
        XCTAssertNil(register(token: String(repeating: "A", count: 512)))
        for bad in [String(repeating: "A", count: 513), "a\r\nb", "a/b", "a b", "a@b", ""] {
            XCTAssertEqual(register(token: bad), "token", bad)
            assertRefused(.validationError, field: "token") {
                _ = try service.registerDevice(DeviceRegistrationRequest(appID: app, mode: .test, platform: "ios", token: bad,
                                                                         userID: "u", apnsEnvironment: "sandbox"))
            }
        }
        XCTAssertEqual(register(token: "t", env: nil), "apns_environment")
        XCTAssertEqual(register(token: "t", platform: "android"), "apns_environment")
        XCTAssertEqual(register(token: "t", platform: "blackberry"), "platform")
        XCTAssertNil(register(token: "t2", user: String(repeating: "é", count: 255)))
        XCTAssertEqual(register(token: "t3", user: String(repeating: "u", count: 256)), "user_id")
        XCTAssertEqual(register(token: "t4", user: ""), "user_id")
        XCTAssertEqual(try count("SELECT count(*)::int FROM push_devices"), 2, "only the two valid registrations")
    }
}
