import Foundation
import XCTest
import PushAPI
import PushCore
import PushStore
import PushTestSupport
import PushWorker

/// Base of the HTTP tests: a fresh migrated database, an API server on 127.0.0.1 (port 0, with a
/// management address), one account with a test and a live key holding every permission, a
/// second account with its own keys and app, and helpers to call the API over a real socket.
class APITestCase: XCTestCase {
    var db: MigratedTestDatabase!
    var server: APIServer!
    var extraServers: [APIServer] = []
    var conn: PGConnection { db.connection }
    var port: UInt16 { server.api.port }
    var account: Account!
    var otherAccount: Account!
    var testKey = ""
    var liveKey = ""
    var otherTestKey = ""
    var app: UUID!
    var otherApp: UUID!
    /// The operator key the test servers seal webhook endpoint secrets with.
    var webhookKeys: CredentialKeys!
    static let allPermissions = "push_devices:wd,push:rw,push_apps:rw,webhooks:rw"
    /// The honkio v2 vector's recipient (Tests/Vectors/honkio_push_v2.json): its public key and kid.
    static let vectorRecipient: [String: Any] = {
        let data = (try? TestVectors.data(.honkioPushV2)) ?? Data()
        let o = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        return o?["recipient"] as? [String: Any] ?? [:]
    }()
    static var vectorPublicKey: String { vectorRecipient["public_key"] as? String ?? "vector missing" }
    static var vectorKid: String { vectorRecipient["kid"] as? String ?? "vector missing" }

    /// Logs of the servers under test stay quiet unless they are errors.
    static let quietLog = Log(level: .error)

    override func setUpWithError() throws {
        try super.setUpWithError()
        db = try MigratedTestDatabase.create()
        let accounts = AccountStore(connection: conn)
        account = try accounts.createAccount(name: "acme")
        otherAccount = try accounts.createAccount(name: "other")
        testKey = try issue(.test)
        liveKey = try issue(.live)
        otherTestKey = try issue(.test, account: otherAccount.id)
        app = try AppStore(connection: conn).appCreate(name: "acme app", accountID: account.id).id
        otherApp = try AppStore(connection: conn).appCreate(name: "other app", accountID: otherAccount.id).id
        // An event no webhook endpoint wants is deleted as it is written (sql/0009): with every type
        // wanted, each event stays in push_events and the outbox, where `fingerprint` sees it.
        try WebhookFixture.subscribeToEverything(conn, appID: app)
        try WebhookFixture.subscribeToEverything(conn, appID: otherApp)
        webhookKeys = try CredentialKeys(current: (0..<32).map { _ in UInt8.random(in: 0...255) })
        server = try startServer()
    }

    override func tearDownWithError() throws {
        for s in extraServers { s.stop() }
        extraServers = []
        server?.stop()
        server = nil
        try db?.database.drop()
        db = nil
        try super.tearDownWithError()
    }

    /// A server on this test's database; `configure` adjusts its configuration.
    func startServer(_ configure: (inout APIServer.Config) -> Void = { _ in }) throws -> APIServer {
        var config = APIServer.Config(databaseURL: db.database.conninfo, address: try ListenAddress.parse("127.0.0.1:0"),
                                      management: try ListenAddress.parse("127.0.0.1:0"))
        config.poolSize = 8
        config.webhooks = WebhookSettings(keys: webhookKeys, allowLoopback: false)
        configure(&config)
        return try APIServer.start(config, log: Self.quietLog)
    }

    /// A key of `mode` for the test's account (or `account`), with `permissions`.
    func issue(_ mode: Mode, account: UUID? = nil, permissions: String = APITestCase.allPermissions,
               rate: Int? = 100_000) throws -> String {
        try AccountStore(connection: conn).issueKey(accountID: account ?? self.account.id, mode: mode,
                                                    permissions: try APIPermissions(parsing: permissions),
                                                    rateLimitPerSecond: rate).key
    }

    /// An RFC 3339 time a day ahead (a scheduled notification that stays cancellable).
    static var inADay: String {
        let f = ISO8601DateFormatter()
        return f.string(from: Date().addingTimeInterval(86_400))
    }

    var appID: String { PrefixedID.format(.app, app) }
    var otherAppID: String { PrefixedID.format(.app, otherApp) }

    /// One request with `key` (nil: no credential) and a JSON body.
    func call(_ method: String, _ path: String, key: String?, json: String? = nil, headers: [(String, String)] = [],
              on port: UInt16? = nil) throws -> RawHTTP.Response {
        var h = headers
        if let key { h.append(("Authorization", "Bearer \(key)")) }
        if json != nil && !h.contains(where: { $0.0.lowercased() == "content-type" }) { h.append(("Content-Type", "application/json")) }
        return try RawHTTP.call(port: port ?? self.port, method, path, headers: h, body: json.map { Array($0.utf8) })
    }

    /// A device body for the test's app.
    func deviceJSON(token: String = "test_accept", user: String = "user_1042", app: String? = nil,
                    key: String? = nil) -> String {
        var fields = "\"app_id\":\"\(app ?? appID)\",\"token\":\"\(token)\",\"platform\":\"ios\",\"user_id\":\"\(user)\",\"apns_environment\":\"sandbox\""
        if let key { fields += ",\"encryption_public_key\":\"\(key)\"" }
        return "{\(fields)}"
    }

    /// Registers a device through the API; returns its id (`pdev_...`).
    @discardableResult
    func register(token: String, user: String = "user_1042", key: String? = nil, apiKey: String? = nil) throws -> String {
        let r = try call("PUT", "/v1/push/devices", key: apiKey ?? testKey, json: deviceJSON(token: token, user: user))
        XCTAssertEqual(r.status, 200, r.text)
        return try XCTUnwrap(r.json["id"] as? String)
    }

    /// A fingerprint of every row the API can write (apps, devices, counts, notifications, jobs,
    /// deliveries, ledger, events and their outbox, webhook endpoints, keys, credential sets): equal before and after
    /// means nothing was written.
    func fingerprint() throws -> String {
        let tables = ["push_apps", "push_devices", "push_device_counts", "push_notifications", "push_jobs",
                      "push_deliveries", "push_ledger", "push_events", "push_outbox", "push_webhook_endpoints",
                      "push_api_keys", "push_accounts", "push_credentials", "push_sms_credentials"]
        return try tables.map { t in
            try conn.exec("SELECT coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '-') FROM \(t) x").string(0, 0)
        }.joined(separator: ",")
    }

    /// Rows of `table` (optionally filtered by `whereClause`).
    func count(_ table: String, _ whereClause: String = "true") throws -> Int {
        try conn.exec("SELECT count(*)::int FROM \(table) WHERE \(whereClause)").int(0, 0)
    }
}
