import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import PushStore
import PushTestSupport
import XCTest

/// Base for the acceptance service's tests: a fresh migrated database per test, the service on one
/// session, and helpers that register devices and read rows straight from the tables.
class AcceptanceTestCase: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!
    var service: AcceptanceService!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        service = AcceptanceService(connection: conn)
    }

    override func tearDownWithError() throws {
        service = nil
        conn = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// A new app through the service.
    func makeApp(requireEncryption: Bool = false, placeholderTitle: String? = nil,
                 placeholderBody: String? = nil) throws -> UUID {
        try service.createApp(AppCreateRequest(name: "app", requireEncryption: requireEncryption,
                                               placeholderTitle: placeholderTitle, placeholderBody: placeholderBody)).id
    }

    /// Registers an iOS or Android test device through the service, with `key` when given.
    @discardableResult
    func device(_ app: UUID, user: String, platform: String, key: P256PrivateKey? = nil,
                token: String = "tok-\(UUID().uuidString)") throws -> UUID {
        try service.registerDevice(DeviceRegistrationRequest(
            appID: app, mode: .test, platform: platform, token: token, userID: user,
            apnsEnvironment: platform == "ios" ? "sandbox" : nil,
            encryptionKey: key.map { .set($0.publicKey.base64URL) } ?? .keep)).device.id
    }

    /// Registers a web test device (a public-looking endpoint; nothing is sent in these tests).
    @discardableResult
    func webDevice(_ app: UUID, user: String) throws -> UUID {
        let browser = try P256PrivateKey.generate()
        return try service.registerDevice(DeviceRegistrationRequest(
            appID: app, mode: .test, platform: "web",
            subscription: .init(endpoint: "https://push.example.com/send/\(UUID().uuidString.lowercased())",
                                p256dh: browser.publicKey.base64URL, auth: Base64URL.encode([UInt8](repeating: 7, count: 16))),
            userID: user)).device.id
    }

    func count(_ sql: String, _ params: [PGValue?] = []) throws -> Int {
        try conn.exec(sql, params).int(0, 0)
    }

    /// Asserts `body` throws an `AcceptanceError` with `code` (and `field` when given) whose message
    /// does not quote `secret`.
    func assertRefused(_ code: ErrorCode, field: String? = nil, quoting secret: String? = nil,
                       file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        do {
            try body()
            XCTFail("expected \(code.rawValue)\(field.map { "(\($0))" } ?? ""), accepted", file: file, line: line)
        } catch let e as AcceptanceError {
            XCTAssertEqual(e.code, code, e.message, file: file, line: line)
            if let field { XCTAssertEqual(e.field, field, e.message, file: file, line: line) }
            if let secret { XCTAssertFalse(e.message.contains(secret), "the message quotes the content: \(e.message)", file: file, line: line) }
        } catch {
            XCTFail("expected AcceptanceError, got \(error)", file: file, line: line)
        }
    }
}
