import Foundation
import PushAcceptance
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore
import PushTestSupport
@testable import PushWorker
import XCTest

/// Issue 16's walk "add a provider" on PostgreSQL: the provider `ExtraProviderTests` declares in
/// the test target ("pigeon": its writer, answer rules and client) added to the provider table,
/// the table told to the database (`push_platforms`, sql/0024), and a live notification accepted
/// by the acceptance service, stored by `push_register_device_v2` and `push_enqueue`, split by
/// `push_split_audience` for a whole-app audience, and delivered by the real worker through the
/// live router, with no product file and no SQL function changed for it. The controls: without
/// the table's line the platform is refused at registration (Swift and SQL alike) and a stored
/// device of it fails its own delivery UNKNOWN_PLATFORM; the seeded rows are today's platforms;
/// the previous release's entry points keep working on sql/0024 without ever writing the table.
final class ExtraProviderPGTests: WorkerTestCase {
    override class var backend: Backend { .postgres }

    let clients = LockedBox<[ExtraProviderTests.PigeonClient]>([])
    let keys = try! CredentialKeys(current: SecretBox.generateKey())

    var conn: PGConnection { (world as! PGWorld).conn }

    /// The descriptor the memory test declares, its clients recorded here.
    func pigeon() -> ProviderDescriptor { ExtraProviderTests.pigeon(recordingInto: clients) }

    private func service(_ table: ProviderTable) -> AcceptanceService {
        let s = AcceptanceService(connection: conn)
        s.providers = table
        return s
    }

    private func registerPigeon(_ s: AcceptanceService, _ app: UUID, token: String, key: P256PrivateKey? = nil) throws -> UUID {
        try s.registerDevice(DeviceRegistrationRequest(appID: app, mode: .live, platform: "pigeon", token: token, userID: "u1",
                                                       encryptionKey: key.map { .set($0.publicKey.base64URL) } ?? .keep)).device.id
    }

    /// The pigeon credential set, stored as `apps credentials set` and `PUT .../credentials/pigeon`
    /// store sets (`AcceptanceService.setCredentials`), checked by the descriptor's own rules.
    @discardableResult
    private func setPigeonCredentials(_ s: AcceptanceService, _ app: UUID, loft: String) throws -> CredentialResult {
        var request = CredentialRequest(kind: CredentialKind(rawValue: "pigeon"), config: ["loft": loft])
        request.secret = Array("s".utf8)
        request.actor = "cli:tester"
        return try s.setCredentials(appID: app, request, keys: keys)
    }

    private func worker(_ table: ProviderTable, metrics: WorkerMetrics) throws -> Worker {
        var rc = LiveRouter.Configuration()
        rc.providers = table
        let router = LiveRouter(credentials: world.credentialSource(keys: keys), configuration: rc,
                                apnsTokenCache: world.apnsTokenCache(keys: keys))
        var config = WorkerConfig(owner: "pigeon-pg", claimLimit: 8, retryPolicy: Self.fastRetry)
        config.providers = table
        return try Worker(config: config, sessions: world.sessions, router: router, metrics: metrics, log: Self.quietLog)
    }

    private func pigeonRow() throws -> PlatformTraits? {
        try PlatformStore(connection: conn).served().first { $0.platform == "pigeon" }
    }

    func testAProviderRegisteredFromTheTestTargetDeliversOnPostgreSQL() throws {
        let table = ProviderTable.standard.adding(pigeon())
        let app = try createApp()
        let s = service(table)
        // Not yet told: the SQL function refuses the platform, naming the ones served (R-DEV-1).
        XCTAssertThrowsError(try registerPigeon(s, app, token: "bird-0")) { error in
            let e = error as? AcceptanceError
            XCTAssertEqual(e?.code, .validationError)
            XCTAssertEqual(e?.field, "platform")
            XCTAssertEqual(e?.message, "platform: must be android, ios, web")
        }
        try s.servePlatforms()
        XCTAssertEqual(try pigeonRow(), PlatformTraits(platform: "pigeon", addressing: .token(apnsEnvironment: false),
                                                       encryptsItself: false))
        // Its set goes through the product's path, checked by its descriptor's rules (R-APP-3).
        XCTAssertThrowsError(try setPigeonCredentials(s, app, loft: "North")) { error in
            XCTAssertEqual((error as? AcceptanceError)?.code, .validationError)
            XCTAssertEqual((error as? AcceptanceError)?.field, "loft")
        }
        XCTAssertThrowsError(try s.setCredentials(appID: app, CredentialRequest(kind: CredentialKind(rawValue: "pigeon"),
                                                                               config: ["loft": "north"]), keys: keys)) { error in
            XCTAssertEqual((error as? AcceptanceError)?.code, .validationError)
            XCTAssertEqual((error as? AcceptanceError)?.field, "secret", "its secret is required")
        }
        let stored = try setPigeonCredentials(s, app, loft: "north").summary
        XCTAssertEqual(stored.kind.rawValue, "pigeon")
        XCTAssertEqual(stored.identifiers, ["loft": "north"])
        XCTAssertEqual(try CredentialStore(connection: conn, keys: nil).states(appID: app).map(\.kind.rawValue), ["pigeon"])
        let key = try P256PrivateKey.generate()
        let sealed = try registerPigeon(s, app, token: "bird-1", key: key)
        let plain = try registerPigeon(s, app, token: "bird-2")
        let gone = try registerPigeon(s, app, token: "gone-3")
        var q = SendRequest(appID: app, mode: .live, userIDs: ["u1"])
        q.title = "Coo"
        let n = try s.send(q).notificationID
        for d in [sealed, plain, gone] { XCTAssertEqual(try ledger(n)[d]?.charges, 1, "charged at acceptance (push_enqueue)") }

        // The worker tells the database its own table when its readiness gate first finds the
        // schema ready (its loop, `run`), before it claims anything.
        XCTAssertEqual(try conn.exec("DELETE FROM push_platforms WHERE platform = 'pigeon'", []).affectedRowCount, 1)
        let metrics = WorkerMetrics()
        let looping = try worker(table, metrics: metrics)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { looping.run(); done.signal() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, try pigeonRow() == nil || notification(n).status == "pending" || notification(n).status == "sending" {
            Thread.sleep(forTimeInterval: 0.05)
        }
        looping.requestStop()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the worker's loop stopped")
        XCTAssertNotNil(try pigeonRow(), "served again by the worker's readiness gate")
        let w = try worker(table, metrics: metrics)
        try drain(w)

        try assertPigeonDelivered(n, clients: clients.value, sealed: (sealed, key), plain: plain, gone: gone, metrics: metrics)

        // A whole-app audience narrowed to it (push_enqueue's bound, push_split_audience's charges).
        var all = SendRequest(appID: app, mode: .live, userIDs: [])
        all.audience = "all"
        all.platforms = ["pigeon"]
        all.title = "Coo again"
        let broadcast = try s.send(all).notificationID
        try drain(w)
        let broadcastRows = try deliveries(broadcast)
        XCTAssertEqual(Set(broadcastRows.keys), [sealed, plain], "its active devices, none of another platform")
        XCTAssertEqual(broadcastRows.values.map(\.status), ["sent", "sent"])
        for d in [sealed, plain] { XCTAssertEqual(try net(broadcast, d), 1, "charged at send time (R-KIND-5)") }
        try assertLedgerInvariants(broadcast)
    }

    /// Without the table's line: refused at registration by the acceptance service and, for a
    /// caller that skips it, by `push_register_device_v2`; a whole-app audience naming it refused
    /// by both; a device of it already stored (another release served it) fails UNKNOWN_PLATFORM.
    func testWithoutItsTableLineThePlatformIsRefusedAndAStoredDeviceFailsUnknownPlatform() throws {
        let app = try createApp()
        let s = service(.standard)
        try s.servePlatforms()
        XCTAssertThrowsError(try registerPigeon(s, app, token: "bird-1")) { error in
            XCTAssertEqual((error as? AcceptanceError)?.code, .validationError)
            XCTAssertEqual((error as? AcceptanceError)?.field, "platform")
        }
        let validated = try DeviceRegistration.validate(mode: "live", platform: "pigeon", token: "bird-1", userID: "u1",
                                                        apnsEnvironment: nil, encryptionPublicKey: .none,
                                                        platforms: ProviderTable.standard.adding(pigeon()).addressing)
        XCTAssertThrowsError(try DeviceRegistry(connection: conn).register(appID: app, validated)) { error in
            XCTAssertEqual((error as? PushError)?.code, .validationError)
            XCTAssertEqual((error as? PushError)?.field, "platform")
            XCTAssertEqual((error as? PushError)?.message, "platform: must be android, ios, web")
        }
        var all = SendRequest(appID: app, mode: .live, userIDs: [])
        all.audience = "all"
        all.platforms = ["ios", "pigeon"]
        all.title = "Coo"
        XCTAssertThrowsError(try s.send(all)) { error in
            XCTAssertEqual((error as? AcceptanceError)?.field, "platforms")
            XCTAssertEqual((error as? AcceptanceError)?.message,
                           "platforms: when given, 1 to 3 distinct platforms among android, ios, web")
        }
        var direct = EnqueueRequest(appID: app, mode: "live", userIDs: [])
        direct.audience = "all"
        direct.audiencePlatforms = ["ios", "pigeon"]
        direct.title = "Coo"
        XCTAssertThrowsError(try NotificationStore(connection: conn).enqueue(direct)) { error in
            XCTAssertEqual((error as? PGError)?.column, "platforms")
            XCTAssertEqual((error as? PGError)?.message,
                           "VALIDATION_ERROR: platforms: when given, 1 to 3 distinct platforms among android, ios, web")
        }

        let device = try register(app, user: "u1", platform: "android", token: "bird-2")
        try world.setDevicePlatform(device, "pigeon")
        var q = SendRequest(appID: app, mode: .test, userIDs: ["u1"])
        q.title = "Coo"
        let n = try s.send(q).notificationID
        try drain(try worker(.standard, metrics: WorkerMetrics()))
        XCTAssertEqual(try deliveries(n)[device]?.errorCode, "UNKNOWN_PLATFORM")
        XCTAssertTrue(clients.value.isEmpty, "no client was built")
        try assertLedgerInvariants(n)
    }

    /// A set of a kind no descriptor serves is refused VALIDATION_ERROR naming the kind, by the
    /// acceptance service and by the store's table lookup, and nothing is stored (R-APP-3).
    func testASetOfAKindNoDescriptorServesIsRefused() throws {
        let app = try createApp()
        let s = service(.standard)
        XCTAssertThrowsError(try setPigeonCredentials(s, app, loft: "north")) { error in
            let e = error as? AcceptanceError
            XCTAssertEqual(e?.code, .validationError)
            XCTAssertEqual(e?.field, "kind")
            XCTAssertEqual(e?.message, "kind: must be one of apns, fcm, webpush, twilio")
        }
        XCTAssertThrowsError(try ProviderTable.standard.credentialRules(for: CredentialKind(rawValue: "pigeon"))) { error in
            XCTAssertEqual((error as? PushError)?.code, .validationError)
            XCTAssertEqual((error as? PushError)?.field, "kind")
            XCTAssertEqual((error as? PushError)?.message, "kind: pigeon has no credential validation")
        }
        XCTAssertEqual(try CredentialStore(connection: conn, keys: nil).states(appID: app).count, 0)
        XCTAssertEqual(try setPigeonCredentials(service(ProviderTable.standard.adding(pigeon())), app, loft: "north").summary.kind.rawValue,
                       "pigeon", "the same request is stored once the table has its descriptor")
    }

    /// `apps credentials set` takes a kind's endpoint overrides as flags named from its rules'
    /// `overrideKeys` (the built binary): a bad one is refused by the kind's checks, a good one stored.
    func testTheCLIReadsAKindsOverrideFlagsFromItsRules() throws {
        let app = try createApp()
        // A Twilio set's account SID and auth token shapes (as TwilioCredentialTests in PushStoreTests).
        let account = "AC" + String(repeating: "0f", count: 16), token = "0123456789abcdef0123456789abcdef"
        let file = NSTemporaryDirectory() + "pigeon-cli-token-\(UInt32.random(in: 0...UInt32.max))"
        try token.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let env = ["DATABASE_URL": (world as! PGWorld).database.conninfo,
                   CredentialKeys.currentVariable: Base64URL.encode(keys.current), "USER": "tester"]
        func set(_ url: String) throws -> (status: Int32, output: String) {
            try LiveWebPushCLI.run(LiveWebPushCLI.executable, [
                "apps", "credentials", "set", app.uuidString.lowercased(), "--kind", "twilio", "--account-sid",
                account, "--auth-token-file", file, "--from", "+15005550006",
                "--twilio-base-url", url, "--json"], environment: env)
        }
        let bad = try set("http://twilio.example")
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.output.contains("config: twilio_base_url must be an https:// URL"), bad.output)
        let good = try set("https://twilio.example")
        XCTAssertEqual(good.status, 0, good.output)
        XCTAssertEqual(try CredentialStore(connection: conn, keys: nil).states(appID: app).first?.identifiers["twilio_base_url"],
                       "https://twilio.example")
    }

    /// A service that opens its own connection (the CLI's) tells the database its table before its
    /// first registration, so the command line registers a new provider's devices with no step of its own.
    func testTheCLIsServiceServesItsTableBeforeItsFirstRegistration() throws {
        let app = try createApp()
        let database = (world as! PGWorld).database
        let cli = AcceptanceService(connecting: { try database.connect() })
        cli.providers = ProviderTable.standard.adding(pigeon())
        XCTAssertNil(try pigeonRow())
        let device = try registerPigeon(cli, app, token: "bird-1")
        XCTAssertNotNil(try pigeonRow())
        XCTAssertEqual(try DeviceRegistry(connection: conn).list(appID: app, mode: .live).map(\.id), [device])
    }

    /// sql/0024 seeds exactly the standard table's platforms, so telling it the standard table
    /// writes nothing; a changed property is updated, and a platform no longer in a table stays.
    func testTheSeededRowsAreTheStandardTable() throws {
        let store = PlatformStore(connection: conn)
        XCTAssertEqual(try store.served(), ProviderTable.standard.servedPlatforms)
        XCTAssertEqual(ProviderTable.standard.servedPlatforms.map(\.platform), ["android", "ios", "web"])
        XCTAssertEqual(try store.serve(ProviderTable.standard.servedPlatforms), 0, "unchanged rows are not written")
        XCTAssertEqual(try store.serve(ProviderTable.standard.adding(pigeon()).servedPlatforms), 1)
        var changed = try XCTUnwrap(try pigeonRow())
        changed.encryptsItself = true
        XCTAssertEqual(try store.serve([changed]), 1)
        XCTAssertEqual(try pigeonRow(), changed)
        XCTAssertEqual(try store.serve(ProviderTable.standard.servedPlatforms), 0)
        XCTAssertNotNil(try pigeonRow(), "never deleted by a process serving fewer platforms")
    }

    /// A platform that encrypts itself is charged at acceptance without a key when the app requires
    /// encryption, read from `push_platforms` (push_policy_delivers), not from a platform's name.
    func testTheChargePolicyReadsWhichPlatformsEncryptThemselves() throws {
        let app = try createApp(requireEncryption: true)
        let web = try registerWeb(app, user: "u1")
        let ios = try register(app, user: "u1", platform: "ios")
        let first = try enqueue(app, users: ["u1"])
        XCTAssertEqual(try ledger(first)[web]?.charges, 1, "web encrypts itself (R-SEND-11)")
        XCTAssertNil(try ledger(first)[ios], "a keyless iOS device is not delivered to (R-SEND-5)")
        XCTAssertEqual(try conn.exec("UPDATE push_platforms SET encrypts_itself = NOT encrypts_itself WHERE platform IN ('web', 'ios')",
                                     []).affectedRowCount, 2)
        let second = try enqueue(app, users: ["u1"])
        XCTAssertNil(try ledger(second)[web])
        XCTAssertEqual(try ledger(second)[ios]?.charges, 1)
    }

    /// The previous release's entry points on sql/0024, with the table as seeded (that release
    /// never writes it): `push_register_device` (0003's signature) and `push_register_device_v2`
    /// (0006's) register ios, android and web devices and refuse another platform as before, and
    /// `push_enqueue` charges as before.
    func testThePreviousReleasesCallsKeepWorking() throws {
        let app = try createApp(requireEncryption: true)
        let ua = try P256PrivateKey.generate()
        let v1 = try conn.exec("""
            SELECT device_id, created FROM push_register_device($1::uuid, 'test', 'ios', 'old-ios', NULL, NULL, NULL, 'u1',
                                                                'sandbox', 'keep', NULL, NULL)
            """, [.uuid(app)])
        XCTAssertTrue(try v1.bool(0, "created"))
        let v2 = try conn.exec("""
            SELECT device_id, platform FROM push_register_device_v2($1::uuid, 'test', 'android', 'old-android', NULL, NULL, NULL,
                                                                    'u1', NULL, 'keep', NULL, NULL, 1000, 20)
            """, [.uuid(app)])
        XCTAssertEqual(try v2.string(0, "platform"), "android")
        let web = try conn.exec("""
            SELECT device_id FROM push_register_device_v2($1::uuid, 'test', 'web', NULL, 'https://push.example.com/old', $2::bytea,
                                                          $3::bytea, 'u1', NULL, 'keep', NULL, NULL, 1000, 20)
            """, [.uuid(app), .bytea(ua.publicKey.raw), .bytea(Array(repeating: 7, count: 16))])
        let webID = try web.uuid(0, "device_id")
        XCTAssertThrowsError(try conn.exec("""
            SELECT device_id FROM push_register_device_v2($1::uuid, 'test', 'pigeon', 'old-pigeon', NULL, NULL, NULL, 'u1', NULL,
                                                          'keep', NULL, NULL, 1000, 20)
            """, [.uuid(app)])) { error in
            XCTAssertEqual((error as? PGError)?.column, "platform")
        }
        XCTAssertThrowsError(try conn.exec("""
            SELECT device_id FROM push_register_device_v2($1::uuid, 'test', 'android', 'old-android-2', NULL, NULL, NULL, 'u1',
                                                          'sandbox', 'keep', NULL, NULL, 1000, 20)
            """, [.uuid(app)])) { error in
            XCTAssertEqual((error as? PGError)?.column, "apns_environment", "the addressing rule of a plain token, as before")
        }
        let n = try enqueue(app, users: ["u1"])
        XCTAssertEqual(Set(try ledger(n).keys), [webID], "require_encryption: only the web device is charged, as before")
    }
}
