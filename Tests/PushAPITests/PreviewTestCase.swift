import Foundation
import XCTest
import PushAPI
import PushCore
import PushCrypto
import PushStore
import PushWorker

/// Base of the preview tests (issue 24, R-IDS-2..4): devices registered through the API with their
/// preview tokens, notifications sent through the API and delivered by an in-process worker in test
/// mode (the simulator), previews fetched over a real socket. The two apps are `ids_only` (only a
/// notification sent so is served, sql/0022); `idsOnly(_:)` switches another one.
class PreviewTestCase: APITestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try idsOnly(app)
        try idsOnly(otherApp)
    }

    /// Sets the app's content mode to `ids_only` (or `mode`), as a live key's PATCH would.
    func idsOnly(_ app: UUID, mode: String = "ids_only") throws {
        try conn.exec("UPDATE push_apps SET content_mode = $2 WHERE id = $1", [.uuid(app), .text(mode)])
    }

    /// A device as registered: its id and the preview token the registration answered.
    struct Device {
        var id: String
        var token: String
        var uuid: UUID { PrefixedID.parse(id, as: .device) ?? PreviewStore.noNotification }
    }

    /// Registers a device of `platform` (`ios` or `android`) through the API; `publicKey` the
    /// base64url of its key, if any.
    func device(_ providerToken: String, user: String = "user_1042", platform: String = "ios", app: String? = nil,
                publicKey: String? = nil, apiKey: String? = nil, rotate: Bool = false) throws -> Device {
        var fields = "\"app_id\":\"\(app ?? appID)\",\"token\":\"\(providerToken)\",\"platform\":\"\(platform)\",\"user_id\":\"\(user)\""
        if platform == "ios" { fields += ",\"apns_environment\":\"sandbox\"" }
        if let publicKey { fields += ",\"encryption_public_key\":\"\(publicKey)\"" }
        if rotate { fields += ",\"rotate_preview_token\":true" }
        let r = try call("PUT", "/v1/push/devices", key: apiKey ?? testKey, json: "{\(fields)}")
        XCTAssertEqual(r.status, 200, r.text)
        return Device(id: try XCTUnwrap(r.json["id"] as? String), token: (r.json["preview_token"] as? String) ?? "")
    }

    /// Sends a notification through the API; returns its id.
    func send(users: [String] = ["user_1042"], app: String? = nil, apiKey: String? = nil,
              extra: String = #","title":"Lunch at 12","body":"Table for two, booth 4","data":{"order":"42","n":[1,2]}"#) throws -> String {
        let list = users.map { "\"\($0)\"" }.joined(separator: ",")
        let r = try call("POST", "/v1/push/notifications", key: apiKey ?? testKey,
                         json: "{\"app_id\":\"\(app ?? appID)\",\"user_ids\":[\(list)]\(extra)}")
        XCTAssertEqual(r.status, 201, r.text)
        return try XCTUnwrap(r.json["id"] as? String)
    }

    /// Runs an in-process worker (simulator, no maintenance: content stays) until every job is done.
    /// Returns its metrics.
    @discardableResult
    func deliver(metrics: WorkerMetrics = WorkerMetrics()) throws -> WorkerMetrics {
        let config = WorkerConfig(owner: "preview-test", claimLimit: 16, batchSize: 500, leaseSeconds: 30, pollInterval: 0.05,
                                  rescueInterval: 60, statsInterval: 0.01)
        let worker = try Worker(config: config, databaseURL: db.database.conninfo, router: SimulatorOnlyRouter(),
                                metrics: metrics, log: Self.quietLog)
        worker.maintainer = nil
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            _ = try worker.runOnce(connection: conn)
            if try count("push_jobs", "state IN ('available', 'running')") == 0 { return metrics }
        }
        XCTFail("the worker did not drain the queue")
        return metrics
    }

    /// `GET /v1/push/previews/{id}` with `token` (nil: no Authorization header).
    func fetch(_ id: String, token: String?, forwardedFor: String? = nil, on port: UInt16? = nil) throws -> RawHTTP.Response {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if let forwardedFor { headers.append(("X-Forwarded-For", forwardedFor)) }
        return try RawHTTP.call(port: port ?? self.port, "GET", "/v1/push/previews/\(id)", headers: headers, body: nil)
    }

    /// `POST /v1/push/receipts` for `id` with `token`.
    func receipt(_ id: String, token: String) throws -> RawHTTP.Response {
        try RawHTTP.call(port: port, "POST", "/v1/push/receipts",
                         headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                         body: Array("{\"notification_id\":\"\(id)\"}".utf8))
    }

    /// A fresh device key pair: the private key and the base64url of its public point.
    func keyPair() throws -> (P256PrivateKey, String) {
        let k = try P256PrivateKey.generate()
        return (k, Base64URL.encode(k.publicKey.raw))
    }

    /// The management address's `/metrics` text.
    func apiMetrics() throws -> String {
        let port = try XCTUnwrap(server.managementServer?.port)
        return try RawHTTP.call(port: port, "GET", "/metrics", headers: [], body: nil).text
    }

    /// The value of the series `name{labels}` in an exposition text (0 when absent).
    static func value(_ text: String, _ series: String) -> Double {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)) ?? -1
        }
        return 0
    }
}
