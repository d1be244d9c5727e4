import Foundation
import Glibc
import XCTest
import PushAPI
import PushCore
import PushStore
import PushTestSupport

/// Faults (issue 14): the database stopped mid-run gives 503s within a second or two and the
/// server recovers by itself; slow clients are cut at their absolute deadline while others are
/// served.
final class APIResilienceTests: XCTestCase {
    /// A PostgreSQL cluster of this test's own (scripts/pg), so it can be stopped and started.
    /// Unix socket only, in its own directory: the port number only names the socket file
    /// (`PUSHFLEET_API_OUTAGE_PG_PORT`, default 55491).
    private final class OwnCluster {
        let dir: String
        let port: String
        var url = ""
        init() throws {
            dir = NSTemporaryDirectory() + "pushfleet-api-outage-\(UUID().uuidString.prefix(8))"
            port = ProcessInfo.processInfo.environment["PUSHFLEET_API_OUTAGE_PG_PORT"] ?? "55491"
            url = try run("start").split(separator: "\n").last.map(String.init) ?? ""
        }
        /// Runs scripts/pg through posix_spawn and waitpid: Foundation's Process watches a socket it
        /// leaves open in the child, which the server started here would hold for its whole life.
        @discardableResult
        func run(_ action: String) throws -> String {
            let script = RepoPaths.root.appendingPathComponent("scripts/pg").path
            let outPath = dir + ".out"
            defer { unlink(outPath) }
            let argv = [script] + (action == "start" ? ["start", dir, port] : [action, dir])
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            var pid: pid_t = 0
            let cArgs = argv.map { strdup($0) } + [nil]
            defer { cArgs.forEach { free($0) } }
            guard posix_spawn(&pid, script, &actions, nil, cArgs, environ) == 0 else {
                throw RawHTTP.Failure(description: "cannot spawn scripts/pg")
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            guard status == 0 else { throw RawHTTP.Failure(description: "scripts/pg \(action) failed (status \(status))") }
            return (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        }
        deinit {
            _ = try? run("stop")
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    func testAStoppedDatabaseGives503sAndTheServerRecoversByItself() throws {
        let cluster = try OwnCluster()
        let conn = try PGConnection.connect(cluster.url)
        try Migrator(connection: conn, migrations: try Migrator.loadMigrations(directory: RepoPaths.sqlDirectory)).migrate()
        let account = try AccountStore(connection: conn).createAccount(name: "outage")
        let key = try AccountStore(connection: conn).issueKey(accountID: account.id, mode: .test,
                                                              permissions: try APIPermissions(parsing: "push:rw,push_apps:rw")).key
        _ = try AppStore(connection: conn).appCreate(name: "a", accountID: account.id)
        var config = APIServer.Config(databaseURL: cluster.url, address: try ListenAddress.parse("127.0.0.1:0"),
                                      management: try ListenAddress.parse("127.0.0.1:0"))
        config.poolSize = 4
        let server = try APIServer.start(config, log: APITestCase.quietLog)
        defer { server.stop() }
        let auth = [("Authorization", "Bearer \(key)")]
        let port = server.api.port, management = try XCTUnwrap(server.managementServer).port
        XCTAssertEqual(try RawHTTP.call(port: port, "GET", "/v1/push/apps", headers: auth).status, 200)
        XCTAssertTrue(waitFor(5) { (try? RawHTTP.call(port: management, "GET", "/readyz"))?.status == 200 })

        try cluster.run("stop")
        for _ in 0..<5 {
            let started = Date()
            let r = try RawHTTP.call(port: port, "GET", "/v1/push/apps", headers: auth)
            XCTAssertEqual(r.status, 503, r.text)
            XCTAssertEqual(r.errorCode, "SERVICE_UNAVAILABLE")
            XCTAssertEqual(r.headers["retry-after"], "1")
            XCTAssertLessThan(Date().timeIntervalSince(started), 2.5, "503 within a second or two, never a hang")
        }
        XCTAssertTrue(waitFor(5) { (try? RawHTTP.call(port: management, "GET", "/readyz"))?.status == 503 }, "/readyz follows")
        XCTAssertEqual(try RawHTTP.call(port: management, "GET", "/healthz").status, 200, "alive all along")

        try cluster.run("start")
        XCTAssertTrue(waitFor(15) { (try? RawHTTP.call(port: port, "GET", "/v1/push/apps", headers: auth))?.status == 200 },
                      "recovers without a restart")
        XCTAssertTrue(waitFor(5) { (try? RawHTTP.call(port: management, "GET", "/readyz"))?.status == 200 })
        let metrics = try RawHTTP.call(port: management, "GET", "/metrics").text
        XCTAssertTrue(metrics.contains("pushfleet_api_requests_total{route=\"/v1/push/apps\",method=\"GET\",status=\"503\"} 5"), metrics)
    }

    func testSlowClientsAreCutAtTheirDeadlineWhileOthersAreServed() throws {
        let db = try MigratedTestDatabase.create()
        defer { try? db.database.drop() }
        let account = try AccountStore(connection: db.connection).createAccount(name: "slow")
        let key = try AccountStore(connection: db.connection).issueKey(accountID: account.id, mode: .test,
                                                                       permissions: try APIPermissions(parsing: "push_apps:r")).key
        var config = APIServer.Config(databaseURL: db.database.conninfo, address: try ListenAddress.parse("127.0.0.1:0"),
                                      management: nil)
        config.http.requestDeadlineSeconds = 1
        config.http.idleTimeoutSeconds = 2
        let server = try APIServer.start(config, log: APITestCase.quietLog)
        defer { server.stop() }
        let port = server.api.port

        // Headers one byte every 0.2 s: never idle for libmicrohttpd, cut by the absolute deadline.
        let slowHeaders = try RawHTTP(port: port)
        try slowHeaders.send("GET /v1/push/apps HTTP/1.1\r\n")
        let slowBody = try RawHTTP(port: port)
        try slowBody.send("PUT /v1/push/devices HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        let silent = try RawHTTP(port: port)
        let started = Date()
        var served = 0
        var headersCut: Double?
        while Date().timeIntervalSince(started) < 2.5 {
            if headersCut == nil {
                if (try? slowHeaders.send("X")) == nil || slowHeaders.closes(within: 0.01) {
                    headersCut = Date().timeIntervalSince(started)
                }
            }
            try? slowBody.send(" ")
            if (try? RawHTTP.call(port: port, "GET", "/v1/push/apps", headers: [("Authorization", "Bearer \(key)")]))?.status == 200 {
                served += 1
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        let cut = try XCTUnwrap(headersCut, "the slow header sender was never cut")
        XCTAssertGreaterThan(cut, 0.8)
        XCTAssertLessThan(cut, 2.0)
        XCTAssertTrue(slowBody.closes(within: 1), "a body trickling in is cut too")
        XCTAssertTrue(silent.closes(within: 3), "a silent connection is closed (idle + deadline at most)")
        XCTAssertGreaterThan(served, 5, "others were served meanwhile")
        XCTAssertGreaterThanOrEqual(server.api.deadlineClosures, 2)
    }

    private func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }
}
