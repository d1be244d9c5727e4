import Foundation
import XCTest
import PushTestSupport
import PushCore
import PushCrypto
import PushProviders
@testable import PushStore

/// The app's Twilio set (R-APP-3, R-SMS-1): validated on entry, sealed at rest like the push sets,
/// in `push_sms_credentials` (which workers of the previous release never read), re-sealed by a
/// key rotation, and set, shown and removed through `pushfleet apps credentials`.
final class TwilioCredentialTests: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!
    var appID: UUID!
    var keys: CredentialKeys!
    static let account = "AC" + String(repeating: "0f", count: 16)
    static let token = "0123456789abcdef0123456789abcdef"

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        appID = try AppStore(connection: conn).appCreate(name: "sms-creds").id
        keys = try CredentialKeys(current: SecretBox.generateKey())
    }

    override func tearDownWithError() throws {
        conn = nil
        try database?.drop()
        try super.tearDownWithError()
    }

    private var store: CredentialStore { CredentialStore(connection: conn, keys: keys) }

    func testATwilioSetIsSealedInATableOfItsOwnAndListedWithThePushSets() throws {
        let s = try store.set(appID: appID, kind: .twilio, config: ["account_sid": Self.account, "from": "+15005550006"],
                              secret: Array(Self.token.utf8))
        XCTAssertEqual(s.kind, .twilio)
        XCTAssertEqual(s.state, .unverified)
        XCTAssertEqual(s.identifiers, ["account_sid": Self.account, "from": "+15005550006"])
        let raw = try conn.exec("SELECT provider, sealed_secret FROM push_sms_credentials WHERE app_id = $1::uuid", [.uuid(appID)])
        XCTAssertEqual(try raw.string(0, "provider"), "twilio")
        let sealed = try raw.bytes(0, "sealed_secret")
        XCTAssertEqual(sealed.count, Self.token.utf8.count + SecretBox.overhead)
        XCTAssertNil(String(decoding: sealed, as: UTF8.self).range(of: Self.token))
        XCTAssertEqual(try conn.exec("SELECT count(*)::int AS n FROM push_credentials").int(0, "n"), 0,
                       "push_credentials, which earlier workers read whole, holds no twilio row")
        try store.set(appID: appID, kind: .apns, config: ["team_id": "TEAM123456", "key_id": "KEY1234567", "topic": "com.example.app"],
                      secret: try FakeMaterial.bytes("apns_key.p8"))
        XCTAssertEqual(try store.states(appID: appID).map(\.kind), [.apns, .twilio])
        XCTAssertEqual(try store.load(appID: appID).first { $0.summary.kind == .twilio }?.secret, Array(Self.token.utf8))
        XCTAssertNil(ProviderTable.standard.provider(for: CredentialKind.twilio), "never a push provider's set")
    }

    func testAnAPIKeyAndAMessagingServiceAreAccepted() throws {
        let key = "SK" + String(repeating: "ab", count: 16), service = "MG" + String(repeating: "cd", count: 16)
        let s = try store.set(appID: appID, kind: .twilio,
                              config: ["account_sid": Self.account, "api_key_sid": key, "messaging_service_sid": service,
                                       "twilio_base_url": "https://api.twilio.example"],
                              secret: Array("a-secret-of-an-api-key-0123456789".utf8))
        XCTAssertEqual(s.identifiers["api_key_sid"], key)
        XCTAssertEqual(s.identifiers["messaging_service_sid"], service)
        XCTAssertNil(s.identifiers["from"])
    }

    func testBadSetsAreRefusedWithoutQuotingTheSecret() throws {
        let ok = ["account_sid": Self.account, "from": "+15005550006"]
        func refused(_ config: [String: String], _ secret: String = TwilioCredentialTests.token, _ why: String) {
            XCTAssertThrowsError(try store.set(appID: appID, kind: .twilio, config: config, secret: Array(secret.utf8)), why) { e in
                let p = e as? PushError
                XCTAssertEqual(p?.code, .validationError, "\(why): \(e)")
                XCTAssertFalse(p?.message.contains(secret) ?? true, "\(why): quotes the secret")
            }
        }
        refused(["account_sid": "AC123", "from": "+15005550006"], Self.token, "short account sid")
        refused(["account_sid": "XX" + String(repeating: "0f", count: 16), "from": "+15005550006"], Self.token, "not AC")
        refused(ok.merging(["api_key_sid": "SK12"]) { $1 }, Self.token, "short api key")
        refused(["account_sid": Self.account], Self.token, "no sender")
        refused(ok.merging(["messaging_service_sid": "MG" + String(repeating: "0", count: 32)]) { $1 }, Self.token, "two senders")
        for from in ["+0123456789", "15005550006x", "a-sender-id-far-too-long", "1234", "Acme!"] {
            refused(["account_sid": Self.account, "from": from], Self.token, "from \(from)")
        }
        refused(ok, "short-secret", "short secret")
        refused(ok, "0123456789abcdef 0123456789abcdef", "a space in the secret")
        refused(ok.merging(["twilio_base_url": "http://127.0.0.1:1"]) { $1 }, Self.token, "plain http override")
        refused(ok.merging(["apns_base_url_sandbox": "https://x.example"]) { $1 }, Self.token, "another kind's override")
        for from in ["+15005550006", "12345", "Acme", "Acme Bank 1"] {
            XCTAssertNoThrow(try store.set(appID: appID, kind: .twilio, config: ["account_sid": Self.account, "from": from],
                                           secret: Array(Self.token.utf8)), from)
        }
    }

    func testReplacingKeepsTheFirstAcceptanceAndRotationReSealsIt() throws {
        try store.set(appID: appID, kind: .twilio, config: ["account_sid": Self.account, "from": "+15005550006"],
                      secret: Array(Self.token.utf8))
        _ = try conn.exec("UPDATE push_sms_credentials SET state = 'verified', first_accepted_at = now() - interval '1 day'")
        let replaced = try store.set(appID: appID, kind: .twilio, config: ["account_sid": Self.account, "from": "Acme"],
                                     secret: Array(Self.token.utf8))
        XCTAssertEqual(replaced.state, .unverified)
        XCTAssertNotNil(replaced.firstAcceptedAt, "R-APP-3: kept for good")
        let next = try CredentialKeys(current: SecretBox.generateKey(), previous: keys.current)
        XCTAssertEqual(try CredentialStore(connection: conn, keys: next).rotateKey(), 1)
        let onlyNew = try CredentialKeys(current: next.current)
        XCTAssertEqual(try CredentialStore(connection: conn, keys: onlyNew).load(appID: appID).first?.secret, Array(Self.token.utf8))
        XCTAssertEqual(try CredentialStore(connection: conn, keys: onlyNew).states(appID: appID).first?.keyVersion, 2)
        XCTAssertThrowsError(try store.load(appID: appID), "the old key no longer opens it")
        XCTAssertTrue(try store.remove(appID: appID, kind: .twilio))
        XCTAssertFalse(try store.remove(appID: appID, kind: .twilio))
        XCTAssertTrue(try store.states(appID: appID).isEmpty)
    }

    func testTheCLISetsShowsAndRemovesATwilioSet() throws {
        let file = NSTemporaryDirectory() + "twilio-token-\(UInt32.random(in: 0...UInt32.max))"
        try (Self.token + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let env = ["DATABASE_URL": database.conninfo, CredentialKeys.currentVariable: Base64URL.encode(keys.current),
                   "USER": "tester"]
        let app = appID.uuidString.lowercased()
        let set = try LiveWebPushCLI.run(LiveWebPushCLI.executable, [
            "apps", "credentials", "set", app, "--kind", "twilio", "--account-sid", Self.account,
            "--auth-token-file", file, "--from", "+15005550006", "--json"], environment: env)
        XCTAssertEqual(set.status, 0, set.output)
        XCTAssertFalse(set.output.contains(Self.token))
        XCTAssertEqual(try store.load(appID: appID).first?.secret, Array(Self.token.utf8), "the file's newline dropped")
        let show = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["apps", "credentials", "show", app], environment: env)
        XCTAssertTrue(show.output.contains("twilio  state=unverified"), show.output)
        XCTAssertTrue(show.output.contains("account_sid=\(Self.account)"), show.output)
        XCTAssertFalse(show.output.contains(Self.token))
        let missing = try LiveWebPushCLI.run(LiveWebPushCLI.executable, [
            "apps", "credentials", "set", app, "--kind", "twilio", "--account-sid", Self.account, "--from", "+15005550006",
            "--json"], environment: env)
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.output.contains("auth-token-file"), missing.output)
        let removed = try LiveWebPushCLI.run(LiveWebPushCLI.executable, ["apps", "credentials", "remove", app, "--kind", "twilio"],
                                             environment: env)
        XCTAssertEqual(removed.status, 0, removed.output)
        XCTAssertTrue(try store.states(appID: appID).isEmpty)
        // Issue 15 part 5: both changes audited with the operator's login, the refused set not at all.
        let audit = try conn.exec("""
            SELECT action || ' ' || (details->>'kind') || ' by ' || actor AS line FROM push_audit_events
             WHERE app_id = $1::uuid ORDER BY created_at
            """, [.uuid(appID)])
        XCTAssertEqual(try audit.rows.map { try audit.string($0, "line") },
                       ["credentials.set twilio by cli:tester", "credentials.removed twilio by cli:tester"])
    }
}
