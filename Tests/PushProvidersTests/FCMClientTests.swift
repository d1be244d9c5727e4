import Foundation
import PushCore
@testable import PushProviders
import PushTestSupport
import XCTest

/// FCM v1 client against `scripts/fakes/fake_fcm.py` over real HTTP/2 + TLS (Firebase's "REST Resource:
/// projects.messages").
final class FCMClientTests: XCTestCase {
    static let project = "demo-project", email = "pushfleet@demo-project.iam.gserviceaccount.com"
    private let servers = StartedFakes()

    override func tearDown() {
        servers.stopAll()
    }

    private func startFake(_ extra: [String] = []) throws -> FakeProviderServer {
        servers.keep(try .startFCM(clientEmail: Self.email, projectID: Self.project, extra: extra))
    }

    private func client(_ fake: FakeProviderServer, email: String = email, timeoutMillis: Int = 10_000,
                        clock: ProviderClock = SystemProviderClock(), keyFile: String = "sa_key.pem",
                        tokenCache: ProviderTokenCache = InMemoryProviderTokenCache()) throws -> FCMClient {
        let account = FCMServiceAccount(projectId: Self.project, clientEmail: email,
                                        privateKeyPEM: try FakeMaterial.text(keyFile), privateKeyId: "kid-1",
                                        tokenURI: fake.baseURL + "/token")
        var config = FCMClient.Configuration()
        config.baseURL = fake.baseURL
        config.requestTimeoutMillis = timeoutMillis
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        return try FCMClient.make(account: account, configuration: config, tokenCache: tokenCache, clock: clock)
    }

    private func push(_ token: String, data: String = #"{"hk":"{\"v\":2}"}"#) -> ProviderRequest {
        let body = #"{"message":{"token":"\#(token)","data":\#(data),"android":{"priority":"HIGH","ttl":"3600s"}}}"#
        return ProviderRequest(deliveryId: 1, deviceToken: token, payload: Array(body.utf8),
                               apnsId: UUID().uuidString.lowercased(), ttlSeconds: 3600)
    }

    // MARK: - Tests

    func testSendsReturnMessageNamesAndShareOneAccessToken() throws {
        let fake = try startFake()
        let fcm = try client(fake)
        let batch = (0..<40).map { push("tok\($0)") }
        let answers = fcm.send(batch) + fcm.send([push("tok-late")])
        XCTAssertEqual(answers.filter { $0.httpStatus == 200 }.count, 41)
        XCTAssertTrue(answers.allSatisfy { $0.messageId?.hasPrefix("projects/\(Self.project)/messages/") ?? false })
        XCTAssertEqual(fake.log("oauth").count, 1, "OAuth2: access token cached")
        let logged = fake.log("push")
        XCTAssertEqual(logged.count, 41)
        XCTAssertEqual(logged.first { $0["token"] as? String == "tok0" }?["body"] as? String,
                       String(decoding: batch[0].payload, as: UTF8.self), "body sent byte for byte")
        XCTAssertEqual(Set(logged.compactMap { ProviderText.int64($0["conn"]) }).count, 1, "multiplexed on one connection")
    }

    func testEveryScenarioMapsToItsRawProviderAnswer() throws {
        let fake = try startFake()
        let fcm = try client(fake)
        let requests = [push("unregistered1"), push("badtoken1"), push("mismatch1"), push("quota1"), push("unavailable1"),
                        push("internal1"), push("ratelimit1"), push("html1"), push("numbers", data: #"{"n":1}"#)]
        let a = fcm.send(requests)
        XCTAssertEqual(a[0].httpStatus, 404)
        XCTAssertEqual(a[0].reason, "UNREGISTERED", "R-PRV-1 input")
        XCTAssertEqual(a[1].httpStatus, 400)
        XCTAssertEqual(a[1].reason, "INVALID_ARGUMENT")
        XCTAssertTrue(a[1].namesToken, "R-PRV-1: INVALID_ARGUMENT naming message.token")
        XCTAssertEqual(a[2].reason, "SENDER_ID_MISMATCH", "R-PRV-2 input")
        XCTAssertEqual(a[3].reason, "QUOTA_EXCEEDED")
        XCTAssertEqual(a[3].retryAfterSeconds, 30)
        XCTAssertEqual(a[4].reason, "UNAVAILABLE")
        XCTAssertEqual(a[5].reason, "INTERNAL")
        XCTAssertEqual(a[6].httpStatus, 429)
        XCTAssertEqual(a[6].reason, "RESOURCE_EXHAUSTED", "no FcmError entry: falls back to error.status")
        XCTAssertEqual(a[7].httpStatus, 502)
        XCTAssertNil(a[7].reason, "HTML: status only")
        XCTAssertTrue(a[7].rawDetail?.hasPrefix("unparseable body") ?? false)
        XCTAssertEqual(a[8].reason, "INVALID_ARGUMENT", "projects.messages: data values must be strings")
        XCTAssertFalse(a[8].namesToken, "a data violation does not blame the token")
        XCTAssertEqual(fake.log("push").count, 0)
    }

    func testA401RefreshesTheAccessTokenAndRetriesOnce() throws {
        let fake = try startFake()
        let fcm = try client(fake)
        let answers = fcm.send([push("revoke-1"), push("plain-1")])
        XCTAssertEqual(answers.map(\.httpStatus), [200, 200], "OAuth2: refresh once on 401 and retry")
        XCTAssertEqual(fake.log("oauth").count, 2)
        XCTAssertEqual(fcm.send([push("plain-2")]).first?.httpStatus, 200)
        XCTAssertEqual(fake.log("oauth").count, 2, "the fresh token is kept")
    }

    func testAccessTokenIsReplacedAFewMinutesBeforeExpiresIn() throws {
        let fake = try startFake(["--token-lifetime", "900"])
        // Our clock starts 600 s back so the assertion minted at +600 is not in the fake's future.
        let clock = ManualClock(Int64(Date().timeIntervalSince1970) - 600)
        let fcm = try client(fake, clock: clock)
        XCTAssertEqual(fcm.send([push("a")]).first?.httpStatus, 200)
        clock.advance(599)  // 900 - 300 margin = 600
        XCTAssertEqual(fcm.send([push("b")]).first?.httpStatus, 200)
        XCTAssertEqual(fake.log("oauth").count, 1)
        clock.advance(1)
        XCTAssertEqual(fcm.send([push("c")]).first?.httpStatus, 200)
        XCTAssertEqual(fake.log("oauth").count, 2)
    }

    func testRefusedAssertionAnswersNotSentWithOAuthDetail() throws {
        let fake = try startFake()
        let fcm = try client(fake, email: "someone-else@demo-project.iam.gserviceaccount.com")
        let answers = fcm.send([push("x"), push("y")])
        XCTAssertEqual(answers.map(\.transport), [.notSent, .notSent])
        XCTAssertTrue(answers[0].rawDetail?.hasPrefix("oauth:") ?? false, answers[0].rawDetail ?? "nil")
        XCTAssertTrue(answers[0].rawDetail?.contains("invalid_grant") ?? false)
        XCTAssertEqual(fake.log("push").count, 0)
    }

    /// Issue 11: two service accounts with the same `client_email` and different keys, one shared
    /// cache, both orders: the wrong key never gets the right one's access token (its assertion is
    /// refused: `oauth:invalid_grant`, a credentials problem), the right one is unaffected.
    func testSameClientEmailWithAnotherKeyNeverSharesTheAccessToken() throws {
        for rightFirst in [true, false] {
            let fake = try startFake()
            let cache = InMemoryProviderTokenCache()
            let right = try client(fake, tokenCache: cache)
            let wrong = try client(fake, keyFile: "sa_other_key.pem", tokenCache: cache)
            XCTAssertNotEqual(right.tokenCacheKey, wrong.tokenCacheKey)
            XCTAssertTrue(right.tokenCacheKey.hasPrefix("fcm:\(Self.email):"), right.tokenCacheKey)
            var answers: [String: ProviderAnswer] = [:]
            for (name, c) in rightFirst ? [("right", right), ("wrong", wrong)] : [("wrong", wrong), ("right", right)] {
                answers[name] = try XCTUnwrap(c.send([push("\(name)-\(rightFirst)")]).first)
            }
            XCTAssertEqual(answers["right"]?.httpStatus, 200, "right first: \(rightFirst)")
            let refused = try XCTUnwrap(answers["wrong"])
            XCTAssertEqual(refused.transport, .notSent)
            XCTAssertEqual(refused.reason, "oauth:invalid_grant")
            XCTAssertEqual(ProviderAnswerTable.classify(refused, provider: .fcm, credentialsVerified: false),
                           .credentialsInvalid(reason: "oauth:invalid_grant"))
            XCTAssertEqual(fake.log("push").compactMap { $0["token"] as? String }, ["right-\(rightFirst)"])
            XCTAssertEqual(fake.log("oauth").count, 1, "one token issued, to the right key")
        }
    }

    func testHangingSendTimesOut() throws {
        let fake = try startFake()
        let fcm = try client(fake, timeoutMillis: 1_200)
        let answers = fcm.send([push("hang-1"), push("ok-1")])
        XCTAssertEqual(answers[0].transport, .timeout)
        XCTAssertEqual(answers[1].httpStatus, 200)
    }

    func testAssertionCarriesTheServiceAccountGrantClaims() throws {
        let fake = try startFake()
        let fcm = try client(fake)
        let jwt = try fcm.assertion(now: 1_700_000_000)
        let parts = jwt.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(String(decoding: Base64URLForTests.decode(parts[0]), as: UTF8.self), #"{"alg":"RS256","typ":"JWT","kid":"kid-1"}"#)
        XCTAssertEqual(String(decoding: Base64URLForTests.decode(parts[1]), as: UTF8.self),
                       #"{"iss":"\#(Self.email)","scope":"https://www.googleapis.com/auth/firebase.messaging","aud":"\#(fake.baseURL)/token","iat":1700000000,"exp":1700003600}"#)
    }

    func testServiceAccountJSONParsesAndReportsTypedErrors() throws {
        let good = #"{"type":"service_account","project_id":"p1","private_key_id":"k1","private_key":"PEM","client_email":"a@b.c","token_uri":"https://oauth2.googleapis.com/token"}"#
        let account = try FCMServiceAccount.parse(json: Array(good.utf8))
        XCTAssertEqual(account, FCMServiceAccount(projectId: "p1", clientEmail: "a@b.c", privateKeyPEM: "PEM", privateKeyId: "k1"))
        XCTAssertFalse(account.description.contains("PEM"), "description never shows the key")
        let cases: [(String, String)] = [
            ("not json", "fcm.sa_not_json"), ("[1]", "fcm.sa_not_json"),
            (#"{"type":"authorized_user","project_id":"p"}"#, "fcm.sa_wrong_type"),
            (#"{"project_id":"p","client_email":"a@b.c"}"#, "fcm.sa_missing_field"),
            (#"{"project_id":"","client_email":"a@b.c","private_key":"K"}"#, "fcm.sa_missing_field"),
        ]
        for (text, code) in cases {
            XCTAssertThrowsError(try FCMServiceAccount.parse(json: Array(text.utf8))) { error in
                XCTAssertEqual((error as? FCMCredentialsError)?.code, code, text)
            }
        }
    }
}

/// Test-side base64url decoding (lenient padding).
enum Base64URLForTests {
    static func decode(_ s: String) -> [UInt8] {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map(Array.init) ?? []
    }
}
