import Foundation
import XCTest
import PushCore
import PushStore
import PushTestSupport

/// SIGTERM with requests in flight (issue 14): `pushfleet api` stops accepting connections,
/// answers every request it has (with `Connection: close`), and exits 0.
final class APIDrainTests: APITestCase {
    /// Starts `pushfleet api` on ports the kernel picks; returns it, its API and management ports.
    private func startProcess() throws -> (Process, UInt16, UInt16, String) {
        let s = try APIProcesses.startAPI(databaseURL: db.database.conninfo, environment: ["PUSHFLEET_API_DRAIN_SECONDS": "10"])
        return (s.process, s.port, s.managementPort, s.logPath)
    }

    func testSIGTERMAnswersRequestsInFlightAndExitsZero() throws {
        let (process, port, management, log) = try startProcess()
        defer { if process.isRunning { process.terminate() }; try? FileManager.default.removeItem(atPath: log) }
        XCTAssertEqual(try call("GET", "/v1/push/apps", key: testKey, on: port).status, 200)

        // Requests held in flight: their registrations wait on the user's registration lock (sql/0003),
        // held here in an open transaction.
        let holder = try db.database.connect()
        try holder.exec("BEGIN")
        try holder.exec("SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/test/drain_user', 0))", [.text(app.uuidString.lowercased())])
        let answers = LockedList<(Int, String?)>()
        let group = DispatchGroup()
        let key = testKey
        for i in 0..<4 {
            let body = Array(deviceJSON(token: "drain_\(i)", user: "drain_user").utf8)
            group.enter()
            Thread.detachNewThread {
                let r = try? RawHTTP.call(port: port, "PUT", "/v1/push/devices",
                                          headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")], body: body)
                answers.append((r?.status ?? 0, r?.headers["connection"]))
                group.leave()
            }
        }
        // And one whose body is still arriving when the signal comes.
        let partial = try RawHTTP(port: port)
        let body = Array(deviceJSON(token: "drain_partial").utf8)
        try partial.send(RawHTTP.requestBytes("PUT", "/v1/push/devices",
                                              headers: [("Authorization", "Bearer \(testKey)"), ("Content-Type", "application/json")],
                                              body: body).dropLast(10).map { $0 })
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try count("push_devices", "token LIKE 'drain_%'"), 0, "the four wait on the lock")

        kill(process.processIdentifier, SIGTERM)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertThrowsError(try RawHTTP(port: port), "no new connection once draining")
        XCTAssertEqual(try RawHTTP.call(port: management, "GET", "/readyz").status, 503, "/readyz turns 503 at once")
        try partial.send(Array(body.suffix(10)))
        try holder.exec("COMMIT")

        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        let partialAnswer = try partial.readResponse()
        XCTAssertEqual(partialAnswer.status, 200, partialAnswer.text)
        XCTAssertEqual(answers.items.map(\.0), [200, 200, 200, 200], "every request in flight answered")
        XCTAssertTrue(answers.items.allSatisfy { $0.1 == "close" }, "answers during the drain say Connection: close")
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertFalse(process.isRunning)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try count("push_devices", "token LIKE 'drain_%'"), 5)
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertTrue(text.contains("\"event\":\"api.drained\""), text)
        XCTAssertTrue(text.contains("\"clean\":true"), text)
        // The access log: one JSON line per request with its route template and key prefix, and
        // never the key, a device token or a body (issue 14 part 8).
        let requests = text.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard line.contains("\"event\":\"api.request\"") else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        XCTAssertEqual(requests.count, 6, text)
        for r in requests {
            for field in ["method", "route", "status", "duration_ms", "request_id", "key_prefix", "client"] {
                XCTAssertNotNil(r[field], "\(field) in \(r)")
            }
        }
        XCTAssertEqual(requests.filter { $0["route"] as? String == "/v1/push/devices" }.count, 5)
        XCTAssertTrue(requests.allSatisfy { ($0["key_prefix"] as? String).map { testKey.hasPrefix($0) && $0.count == 14 } ?? false })
        XCTAssertFalse(text.contains(testKey), "the key never reaches the log")
        for token in ["drain_0", "drain_3", "drain_partial"] { XCTAssertFalse(text.contains(token), "nor a device token") }
    }
}
