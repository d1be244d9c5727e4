import Foundation
import XCTest
import PushTestSupport
import PushCore
import PushCrypto
@testable import PushStore

/// `CredentialStore` against PostgreSQL (R-APP-3, R-APP-4): validation on entry, sealing at rest,
/// replacement semantics, previous-key fallback and key rotation.
final class LiveCredentialStoreTests: XCTestCase {
    var database: PGTestDatabase!
    var conn: PGConnection!
    var appID: UUID!
    var keyA: [UInt8]!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try MigratedTestDatabase.create()
        database = fresh.database
        conn = fresh.connection
        appID = try AppStore(connection: conn).appCreate(name: "creds").id
        keyA = try SecretBox.generateKey()
    }

    override func tearDownWithError() throws {
        conn = nil
        try database?.drop()
        try super.tearDownWithError()
    }

    func store(_ current: [UInt8], previous: [UInt8]? = nil) throws -> CredentialStore {
        CredentialStore(connection: conn, keys: try CredentialKeys(current: current, previous: previous))
    }

    func apnsConfig(topic: String = "com.example.app") -> [String: String] {
        ["team_id": "TEAM123456", "key_id": "KEY1234567", "topic": topic]
    }

    func testSetSealsTheSecretAtRestAndLoadOpensItR_APP_3() throws {
        let p8 = try FakeMaterial.bytes("apns_key.p8")
        let s = try store(keyA).set(appID: appID, kind: .apns, config: apnsConfig(), secret: p8)
        XCTAssertEqual(s.state, .unverified)
        XCTAssertNil(s.firstAcceptedAt)
        XCTAssertEqual(s.identifiers, apnsConfig())
        let raw = try conn.exec("SELECT sealed_secret FROM push_credentials WHERE app_id = $1::uuid", [.uuid(appID)])
        let sealed = try raw.bytes(0, "sealed_secret")
        XCTAssertEqual(sealed.count, p8.count + SecretBox.overhead)
        XCTAssertNil(String(decoding: sealed, as: UTF8.self).range(of: "PRIVATE KEY"))
        let loaded = try store(keyA).load(appID: appID)
        XCTAssertEqual(loaded.map(\.secret), [p8])
        XCTAssertFalse(loaded[0].description.contains("PRIVATE"))
        let fcm = try store(keyA).set(appID: appID, kind: .fcm, config: [:],
                                      secret: try FakeMaterial.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token"))
        XCTAssertEqual(fcm.identifiers["project_id"], FakeMaterial.fcmProject)
        XCTAssertEqual(fcm.identifiers["client_email"], FakeMaterial.fcmClient)
        XCTAssertEqual(try store(keyA).states(appID: appID).map(\.kind), [.apns, .fcm])
    }

    func testInvalidSetsAreRefusedAsValidationErrorsWithoutQuotingTheSecret() throws {
        let p8 = try FakeMaterial.bytes("apns_key.p8")
        let rsa = try FakeMaterial.bytes("sa_key.pem")
        let s = try store(keyA)
        let cases: [(CredentialKind, [String: String], [UInt8], String)] = [
            (.apns, apnsConfig(), rsa, "p8 key"),                                   // an RSA key is not P-256
            (.apns, apnsConfig(), Array("not a key".utf8), "p8 key"),
            (.apns, ["team_id": "SHORT", "key_id": "KEY1234567", "topic": "t"], p8, "team id"),
            (.apns, ["team_id": "TEAM123456", "key_id": "KEY12345678", "topic": "t"], p8, "key id"),
            (.apns, apnsConfig(topic: ""), p8, "topic"),
            (.apns, apnsConfig().merging(["apns_base_url_production": "http://127.0.0.1:1"]) { $1 }, p8, "https"),
            (.apns, apnsConfig().merging(["fcm_base_url": "https://x"]) { $1 }, p8, "override"),
            (.fcm, [:], Array("{".utf8), "not a JSON object"),
            (.fcm, [:], Array(#"{"type":"user","project_id":"p","client_email":"e","private_key":"k"}"#.utf8), "type"),
            (.fcm, [:], Array(#"{"project_id":"p","private_key":"k"}"#.utf8), "client_email"),
            (.fcm, [:], Array(#"{"project_id":"p","client_email":"e","private_key":"k"}"#.utf8), "private_key"),
            (.webpush, [:], p8, "subject"),                                        // RFC 8292 contact required
            (.webpush, ["subject": "mailto:ops@example.com"], rsa, "vapid key"),   // not a P-256 key
            (.webpush, ["subject": "mailto:ops@example.com"], Array("not a pem".utf8), "vapid key"),
        ]
        for (kind, config, secret, needle) in cases {
            XCTAssertThrowsError(try s.set(appID: appID, kind: kind, config: config, secret: secret)) { error in
                let e = error as? PushError
                XCTAssertEqual(e?.code, .validationError, "\(needle)")
                XCTAssertTrue(e?.message.contains(needle) == true, "\(e?.message ?? "") should name \(needle)")
                XCTAssertFalse(e?.message.contains("PRIVATE KEY") == true)
            }
        }
        XCTAssertEqual(try s.states(appID: appID).count, 0)
    }

    func testUnknownOrDeletedAppIsNotFound() throws {
        let p8 = try FakeMaterial.bytes("apns_key.p8")
        XCTAssertThrowsError(try store(keyA).set(appID: UUID(), kind: .apns, config: apnsConfig(), secret: p8)) {
            XCTAssertEqual(($0 as? PushError)?.code, .notFound)
        }
        try AppStore(connection: conn).appDelete(id: appID)
        XCTAssertThrowsError(try store(keyA).set(appID: appID, kind: .apns, config: apnsConfig(), secret: p8)) {
            XCTAssertEqual(($0 as? PushError)?.code, .notFound)
        }
    }

    func testReplacingASetResetsStateAndKeepsFirstAcceptanceForGoodR_APP_3() throws {
        let p8 = try FakeMaterial.bytes("apns_key.p8")
        let first = try store(keyA).set(appID: appID, kind: .apns, config: apnsConfig(), secret: p8)
        _ = try conn.exec("""
            UPDATE push_credentials SET state = 'invalid', invalid_reason = 'TopicDisallowed',
                   first_accepted_at = '2026-01-02T03:04:05Z' WHERE app_id = $1::uuid
            """, [.uuid(appID)])
        let replaced = try store(keyA).set(appID: appID, kind: .apns, config: apnsConfig(topic: "com.example.other"), secret: p8)
        XCTAssertEqual(replaced.state, .unverified)
        XCTAssertNil(replaced.invalidReason)
        XCTAssertEqual(replaced.firstAcceptedAt, ISO8601DateFormatter().date(from: "2026-01-02T03:04:05Z"))
        XCTAssertTrue(replaced.isVerified)
        XCTAssertNotEqual(replaced.version, first.version, "a replaced set has a new version (clients are rebuilt)")
    }

    func testPreviousKeyOpensAndRotateKeyResealsUnderTheCurrentKey() throws {
        let keyB = try SecretBox.generateKey()
        let p8 = try FakeMaterial.bytes("apns_key.p8")
        let before = try store(keyA).set(appID: appID, kind: .apns, config: apnsConfig(), secret: p8)
        XCTAssertThrowsError(try store(keyB).load(appID: appID)) {
            XCTAssertEqual(($0 as? PushError)?.code, .credentialsInvalid)
        }
        XCTAssertEqual(try store(keyB, previous: keyA).load(appID: appID).map(\.secret), [p8])
        XCTAssertEqual(try store(keyB, previous: keyA).rotateKey(), 1)
        XCTAssertEqual(try store(keyB).load(appID: appID).map(\.secret), [p8])
        XCTAssertThrowsError(try store(keyA).load(appID: appID))
        let after = try XCTUnwrap(try store(keyB).states(appID: appID).first)
        XCTAssertEqual(after.keyVersion, before.keyVersion + 1)
        XCTAssertEqual(after.state, before.state)
    }

    func testRotateKeyChangesNothingWhenASetOpensWithNeitherKey() throws {
        let p8 = try FakeMaterial.bytes("apns_key.p8")
        try store(keyA).set(appID: appID, kind: .apns, config: apnsConfig(), secret: p8)
        XCTAssertThrowsError(try store(try SecretBox.generateKey()).rotateKey())
        XCTAssertEqual(try store(keyA).load(appID: appID).map(\.secret), [p8])
    }

    func testCredentialKeysFromEnvironmentNeedBase64URLOf32Bytes() throws {
        XCTAssertThrowsError(try CredentialKeys.fromEnvironment([:]))
        XCTAssertThrowsError(try CredentialKeys.fromEnvironment([CredentialKeys.currentVariable: Base64URL.encode([UInt8](repeating: 1, count: 16))]))
        let a = [UInt8](repeating: 7, count: 32), b = [UInt8](repeating: 9, count: 32)
        let keys = try CredentialKeys.fromEnvironment([CredentialKeys.currentVariable: Base64URL.encode(a),
                                                       CredentialKeys.previousVariable: Base64URL.encode(b)])
        XCTAssertEqual(keys.current, a)
        XCTAssertEqual(keys.previous, b)
    }
}
