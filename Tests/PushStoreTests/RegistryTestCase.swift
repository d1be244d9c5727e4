import Foundation
import XCTest
import PushTestSupport
import PushCore
import PushProviders
import PushCrypto
@testable import PushStore

/// Base for registry and maintenance tests: a fresh database migrated with the repository's own
/// `sql/` directory (found from this file's path), one push app, and helpers that read the truth
/// straight from the tables.
class RegistryTestCase: PGTestCase {
    /// The app every test registers into.
    var appID: UUID!
    /// A registry on `conn`.
    var registry: DeviceRegistry!

    /// `<repo>/sql` (`RepoPaths.sqlDirectory`).
    static var sqlDirectory: String { RepoPaths.sqlDirectory }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let report = try Migrator(connection: conn, directory: Self.sqlDirectory).migrate()
        XCTAssertGreaterThanOrEqual(report.databaseVersion, 3, "sql/ not found at \(Self.sqlDirectory)")
        appID = try AppStore(connection: conn).appCreate(name: "registry-tests").id
        try WebhookFixture.subscribeToEverything(conn, appID: appID)   // keeps the app's events to look at
        registry = DeviceRegistry(connection: conn)
    }

    override func tearDownWithError() throws {
        registry = nil
        try super.tearDownWithError()
    }

    // MARK: - Registrations

    /// A validated iOS registration (`key`: `.none` absent, `.some(nil)` null, `.some(text)` a key).
    func iosDevice(_ token: String, user: String = "u1", mode: Mode = .live,
                   key: String?? = .none) throws -> DeviceRegistration {
        try DeviceRegistration.validate(mode: mode.rawValue, platform: "ios", token: token, userID: user,
                                        apnsEnvironment: "production", encryptionPublicKey: key, platforms: ProviderTable.standard.addressing)
    }

    /// A validated web registration for `endpoint`.
    func webDevice(_ endpoint: String, user: String = "u1", mode: Mode = .live) throws -> DeviceRegistration {
        try DeviceRegistration.validate(mode: mode.rawValue, platform: "web", token: nil, userID: user,
                                        apnsEnvironment: nil, encryptionPublicKey: .none,
                                        subscriptionEndpoint: endpoint,
                                        subscriptionP256dh: try P256PrivateKey.generate().publicKey.base64URL,
                                        subscriptionAuth: Base64URL.encode([UInt8](repeating: 7, count: 16)), platforms: ProviderTable.standard.addressing)
    }

    /// Registers `d` into `appID` through `registry` (or another one).
    @discardableResult
    func register(_ d: DeviceRegistration, on registry: DeviceRegistry? = nil) throws -> RegistrationResult {
        try (registry ?? self.registry).register(appID: appID, d)
    }

    /// Runs `body` expecting `PushError` with `code`.
    func expectPushError(_ code: ErrorCode, file: StaticString = #filePath, line: UInt = #line,
                         _ body: () throws -> Void) {
        do {
            try body()
            XCTFail("expected \(code.rawValue), nothing was thrown", file: file, line: line)
        } catch let e as PushError {
            XCTAssertEqual(e.code, code, e.message, file: file, line: line)
        } catch {
            XCTFail("expected \(code.rawValue), got \(error)", file: file, line: line)
        }
    }

    // MARK: - The truth, from the tables

    /// The maintained counter of active devices (R-DEV-6); 0 when no row.
    func counter(_ mode: Mode = .live, app: UUID? = nil, on c: PGConnection? = nil) throws -> Int {
        let r = try (c ?? conn).exec("SELECT active_count FROM push_device_counts WHERE app_id = $1 AND mode = $2",
                                     [.uuid(app ?? appID), .text(mode.rawValue)])
        return r.rowCount == 0 ? 0 : try r.int(0, 0)
    }

    /// Active devices counted by scanning the table.
    func activeCount(_ mode: Mode = .live, user: String? = nil, on c: PGConnection? = nil) throws -> Int {
        try (c ?? conn).exec("""
            SELECT count(*) FROM push_devices
             WHERE app_id = $1 AND mode = $2 AND active AND ($3::text IS NULL OR user_id = $3::text)
            """, [.uuid(appID), .text(mode.rawValue), user.map(PGValue.text)]).int(0, 0)
    }

    /// All device rows of the app (active or not) in `mode`.
    func rowCount(_ mode: Mode = .live) throws -> Int {
        try conn.exec("SELECT count(*) FROM push_devices WHERE app_id = $1 AND mode = $2",
                      [.uuid(appID), .text(mode.rawValue)]).int(0, 0)
    }

    /// Device ids named by `push_device.deactivated` events with `reason`, in event order.
    func deactivationEvents(reason: String) throws -> [UUID] {
        let r = try conn.exec("""
            SELECT payload ->> 'device_id' AS id FROM push_events
             WHERE app_id = $1 AND type = 'push_device.deactivated' AND payload ->> 'reason' = $2 ORDER BY id
            """, [.uuid(appID), .text(reason)])
        return try r.rows.map { try r.uuid($0, "id") }
    }

    /// Number of rows in `push_events` for the app.
    func eventCount() throws -> Int {
        try conn.exec("SELECT count(*) FROM push_events WHERE app_id = $1", [.uuid(appID)]).int(0, 0)
    }

    /// The stored key bytes and kid of a device (test-only read of what the API never returns).
    func storedKey(_ id: UUID) throws -> (raw: [UInt8]?, kid: String?) {
        let r = try conn.exec("SELECT public_key, kid FROM push_devices WHERE id = $1", [.uuid(id)])
        return (try r.decode(0, "public_key"), try r.decode(0, "kid"))
    }

    /// Runs `count` bodies on their own threads, each with its own connection, released together.
    /// - Returns: each body's result or error, by index.
    func inParallel<T>(_ count: Int, timeout: TimeInterval = 120,
                       _ body: @escaping (Int, PGConnection) throws -> T) throws -> [Result<T, Error>] {
        let connections = PGLockedBox(try (0..<count).map { _ in try database.connect() })
        let results = PGLockedBox([Result<T, Error>?](repeating: nil, count: count))
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            let connection = connections.value[i]
            let worker = Thread {
                start.wait()
                let outcome = Result { try body(i, connection) }
                results.update { $0[i] = outcome }
                group.leave()
            }
            worker.stackSize = 1 << 20
            worker.start()
        }
        for _ in 0..<count { start.signal() }
        XCTAssertEqual(group.wait(timeout: .now() + timeout), .success, "parallel bodies did not finish")
        return results.value.map { $0 ?? .failure(PGError(code: .usage, message: "did not finish")) }
    }
}
