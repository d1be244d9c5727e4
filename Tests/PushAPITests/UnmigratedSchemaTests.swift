import Foundation
import XCTest
@testable import PushAPI
import PushCore
import PushStore
import PushTestSupport
import PushWorker

/// The API on a database `pushfleet migrate` has not run on yet (fresh-user trial): while the
/// readiness probe finds the schema behind (`SCHEMA_TOO_OLD`), every route that needs the
/// database answers 503 `SERVICE_UNAVAILABLE` with `Retry-After` instead of a 500 from a missing
/// table; a missing table or function met before the probe's first verdict is the same 503; once
/// migrated, the routes answer as before (R-API-6: no input yields a 500).
final class UnmigratedSchemaTests: XCTestCase {
    var database: PGTestDatabase!
    var server: APIServer?
    static let key = "mk_test_" + String(repeating: "a", count: 32)
    static let notification = "ntf_" + String(repeating: "0", count: 26)

    override func setUpWithError() throws {
        try super.setUpWithError()
        database = try PGTestDatabase.create()
    }

    override func tearDownWithError() throws {
        server?.stop()
        server = nil
        try database?.drop()
        database = nil
        try super.tearDownWithError()
    }

    /// The four routes of the trial, with the key (a well-formed one no database knows) or a preview token.
    func calls(port: UInt16) throws -> [(String, RawHTTP.Response)] {
        let auth = ("Authorization", "Bearer \(Self.key)")
        let json = ("Content-Type", "application/json")
        return [
            ("PUT devices", try RawHTTP.call(port: port, "PUT", "/v1/push/devices", headers: [auth, json], body: Array("{}".utf8))),
            ("GET apps", try RawHTTP.call(port: port, "GET", "/v1/push/apps", headers: [auth])),
            ("GET preview", try RawHTTP.call(port: port, "GET", "/v1/push/previews/\(Self.notification)", headers: [("Authorization", "Bearer pvt_x")])),
            ("POST receipts", try RawHTTP.call(port: port, "POST", "/v1/push/receipts", headers: [("Authorization", "Bearer pvt_x"), json],
                                               body: Array("{\"notification_id\":\"\(Self.notification)\"}".utf8))),
        ]
    }

    func testRoutesAnswer503UntilMigratedThenServe() throws {
        var config = APIServer.Config(databaseURL: database.conninfo, address: try ListenAddress.parse("127.0.0.1:0"),
                                      management: nil)
        config.poolSize = 2
        let s = try APIServer.start(config, log: Log(level: .error))
        server = s
        let deadline = Date().addingTimeInterval(10)
        while !s.handler.schema.isBehind && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertTrue(s.handler.schema.isBehind, "the probe never found the empty database's schema behind")
        for (name, r) in try calls(port: s.api.port) {
            XCTAssertEqual(r.status, 503, "\(name): \(String(decoding: r.body, as: UTF8.self))")
            XCTAssertEqual(r.errorCode, "SERVICE_UNAVAILABLE", name)
            XCTAssertEqual(r.headers["retry-after"], "1", name)
        }
        XCTAssertEqual(s.metrics.ready.current, 0)

        let connection = try database.connect()
        _ = try Migrator(connection: connection, migrations: try Migrator.loadMigrations(directory: RepoPaths.sqlDirectory)).migrate()
        let ready = Date().addingTimeInterval(10)
        while (s.handler.schema.isBehind || s.metrics.ready.current != 1) && Date() < ready { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(s.metrics.ready.current, 1, "not ready after migrate")
        let answers = Dictionary(uniqueKeysWithValues: try calls(port: s.api.port).map { ($0.0, $0.1.status) })
        XCTAssertEqual(answers["PUT devices"], 401, "an unknown key once migrated")
        XCTAssertEqual(answers["GET apps"], 401)
        XCTAssertEqual(answers["GET preview"], 404, "the preview fetch's one refusal")
        XCTAssertEqual(answers["POST receipts"], 204)
    }

    /// Before any verdict (the gate open), a statement meeting an undefined table (42P01) or an
    /// undefined function (42883) is the same 503, not a logged 500.
    func testMissingTableOrFunctionIsA503WithTheGateOpen() throws {
        let pool = PGPool(config: PGPool.Config(conninfo: database.conninfo, maxConnections: 1))
        defer { pool.close() }
        let metrics = APIMetrics()
        let handler = APIHandler(pool: pool, metrics: metrics, log: Log(level: .error))
        XCTAssertFalse(handler.schema.isBehind)
        let keyed = HTTPRequest(method: "GET", path: "/v1/push/apps", headers: [.init("Authorization", "Bearer \(Self.key)")])
        let preview = HTTPRequest(method: "GET", path: "/v1/push/previews/\(Self.notification)",
                                  headers: [.init("Authorization", "Bearer pvt_x")])
        for request in [keyed, preview] {
            let r = handler.handle(request)
            XCTAssertEqual(r.status, 503, request.path + ": " + String(decoding: r.body, as: UTF8.self))
            XCTAssertTrue(String(decoding: r.body, as: UTF8.self).contains("SERVICE_UNAVAILABLE"))
            XCTAssertTrue(r.headers.contains { $0.0 == "Retry-After" && $0.1 == "1" }, request.path)
        }
        for state in ["42P01", "42883"] {
            let e = handler.databaseError(PGError(code: .query, message: "missing", sqlState: state), route: "/v1/push/apps", request: keyed)
            XCTAssertEqual(e.status, 503, state)
        }
        let other = handler.databaseError(PGError(code: .query, message: "boom", sqlState: "42601"), route: "/v1/push/apps", request: keyed)
        XCTAssertEqual(other.status, 500, "a syntax error is still a bug")
    }
}
