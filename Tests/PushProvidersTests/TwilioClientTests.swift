import Foundation
import PushCore
@testable import PushProviders
import PushTestSupport
import XCTest

/// Twilio's Messages resource against `scripts/fakes/fake_twilio.py` (HTTP/1.1 over TLS, real
/// sockets): the form fields and basic auth the fake checks, the answers' raw shapes, and one
/// connection per request (R-SMS-1: a request is written at most once).
final class TwilioClientTests: XCTestCase {
    static let account = "AC" + String(repeating: "a1", count: 16)
    static let token = String(repeating: "f0", count: 16)
    static let keySID = "SK" + String(repeating: "b2", count: 16)
    static let keySecret = "key-secret-0123456789abcdef012345"
    private let servers = StartedFakes()

    override func tearDown() {
        servers.stopAll()
    }

    private func startFake(_ extra: [String] = []) throws -> FakeProviderServer {
        servers.keep(try .startTwilio(accountSID: Self.account, authToken: Self.token, apiKeySID: Self.keySID,
                                      apiKeySecret: Self.keySecret, extra: extra))
    }

    private func client(_ fake: FakeProviderServer, username: String = account, secret: String = token,
                        sender: TwilioClient.Sender = .from("+15005550006"), timeoutMillis: Int = 5_000) throws -> TwilioClient {
        var c = TwilioClient.Configuration(accountSID: Self.account, username: username, secret: secret, sender: sender)
        c.baseURL = fake.baseURL
        c.requestTimeoutMillis = timeoutMillis
        c.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        return try TwilioClient.make(configuration: c)
    }

    private func sms(_ to: String, _ body: String = "Your code is 123456") -> SMSRequest {
        SMSRequest(to: to, body: body, reference: UUID().uuidString.lowercased())
    }

    func testTheFormFieldsAndBasicAuthAreTwiliosAndTheSIDComesBack() throws {
        let fake = try startFake()
        let body = "Code: 42 & 43 = «ok» +100% 😀\nline"
        let answers = try client(fake).send([sms("+33612345678", body)])
        XCTAssertEqual(answers.count, 1)
        XCTAssertEqual(answers[0].transport, .response)
        XCTAssertEqual(answers[0].httpStatus, 201)
        let sid = try XCTUnwrap(answers[0].messageId)
        XCTAssertTrue(sid.hasPrefix("SM") && sid.count == 34, sid)
        XCTAssertEqual(answers[0].rawDetail, "queued")
        let request = try XCTUnwrap(fake.log("request").first)
        XCTAssertEqual(request["path"] as? String, "/2010-04-01/Accounts/\(Self.account)/Messages.json")
        XCTAssertEqual(request["auth_user"] as? String, Self.account)
        XCTAssertEqual(request["auth_ok"] as? Bool, true)
        XCTAssertEqual(request["content_type"] as? String, "application/x-www-form-urlencoded")
        let form = try XCTUnwrap(request["form"] as? [String: [String]])
        XCTAssertEqual(form, ["To": ["+33612345678"], "From": ["+15005550006"], "Body": [body]], "decoded byte for byte")
        let message = try XCTUnwrap(fake.log("message").first)
        XCTAssertEqual(message["sid"] as? String, sid)
        XCTAssertEqual(message["body"] as? String, body)
        XCTAssertEqual(SMSAttemptDecision.decide(answers[0], failedAttempts: 0, deferrals: 0, now: Date(),
                                                 deadline: .distantFuture, jitter: 0).next, .final(.queued))
    }

    func testAnAPIKeyAndAMessagingServiceWork() throws {
        let fake = try startFake()
        let service = "MG" + String(repeating: "c3", count: 16)
        let answers = try client(fake, username: Self.keySID, secret: Self.keySecret,
                                 sender: .messagingService(service)).send([sms("+15551234567")])
        XCTAssertEqual(answers.map(\.httpStatus), [201])
        XCTAssertEqual(answers[0].rawDetail, "accepted")
        let request = try XCTUnwrap(fake.log("request").first)
        XCTAssertEqual(request["auth_user"] as? String, Self.keySID)
        XCTAssertEqual(request["form"] as? [String: [String]],
                       ["To": ["+15551234567"], "MessagingServiceSid": [service], "Body": ["Your code is 123456"]])
    }

    func testAWrongSecretIsA401ThatInvalidatesTheSet() throws {
        let fake = try startFake()
        let answers = try client(fake, secret: "wrong").send([sms("+15551234567")])
        XCTAssertEqual(answers[0].httpStatus, 401)
        XCTAssertEqual(answers[0].reason, "20003")
        XCTAssertEqual(SMSAnswerTable.classify(answers[0]), .credentialsInvalid(providerCode: "20003"))
        XCTAssertTrue(fake.log("message").isEmpty)
    }

    func testScenariosGiveTheirRawAnswers() throws {
        let fake = try startFake(["--retry-after", "3"])
        let c = try client(fake, timeoutMillis: 1_500)
        let answers = c.send([sms("+15005550001"), sms("+15005550002"), sms("+19990000429"), sms("+19990000503"),
                              sms("+19990000500"), sms("+19990000408"), sms("+19990000499")])
        XCTAssertEqual(answers[0].httpStatus, 400)
        XCTAssertEqual(answers[0].reason, "21211")
        XCTAssertEqual(answers[0].rawDetail, "HTTP 400 code 21211", "the message quoting the number is not kept")
        XCTAssertEqual(answers[1].reason, "21612")
        XCTAssertEqual(answers[2].httpStatus, 429)
        XCTAssertEqual(answers[2].retryAfterSeconds, 3)
        XCTAssertEqual(answers[3].httpStatus, 503)
        XCTAssertEqual(answers[3].retryAfterSeconds, 3)
        XCTAssertEqual(answers[4].httpStatus, 500)
        XCTAssertEqual(answers[5].transport, .timeout, "request written, no answer")
        XCTAssertEqual(answers[6].transport, .connectionError, "request written, connection closed")
        let verdicts = answers.map(SMSAnswerTable.classify)
        XCTAssertEqual(verdicts, [.rejected(providerCode: "21211"), .rejected(providerCode: "21612"),
                                  .retry(deferral: true, retryAfter: 3), .retry(deferral: true, retryAfter: 3),
                                  .unknown, .unknown, .unknown])
        XCTAssertEqual(fake.log("request").count, 7, "each request written once: none resent by libcurl")
    }

    func testEveryRequestHasAConnectionOfItsOwn() throws {
        let fake = try startFake()
        let c = try client(fake)
        let answers = c.send((0..<3).map { sms("+1555000000\($0)") }) + c.send([sms("+15550000009")])
        XCTAssertEqual(answers.map(\.httpStatus), [201, 201, 201, 201])
        let connections = Set(fake.log("request").compactMap { $0["conn"] as? Int })
        XCTAssertEqual(connections.count, 4)
        XCTAssertEqual(fake.log("connection").count, 4)
    }

    func testARefusedConnectionIsNotSentAndRetried() throws {
        // A port nobody listens on: the kernel refuses the connection before anything is written.
        let fake = try startFake()
        let port = fake.port
        fake.stop()
        var c = TwilioClient.Configuration(accountSID: Self.account, username: Self.account, secret: Self.token,
                                           sender: .from("+15005550006"))
        c.baseURL = "https://127.0.0.1:\(port)"
        c.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        let answer = try TwilioClient.make(configuration: c).send([sms("+15551234567")])[0]
        XCTAssertEqual(answer.transport, .notSent)
        XCTAssertEqual(SMSAnswerTable.classify(answer), .retry(deferral: false, retryAfter: nil))
    }

    func testFormEncodingEscapesEverythingButUnreserved() {
        XCTAssertEqual(FormURLEncoding.encode([("To", "+1 2"), ("Body", "a&b=c%d~e.f_g-h/é")]),
                       "To=%2B1%202&Body=a%26b%3Dc%25d~e.f_g-h%2F%C3%A9")
        XCTAssertEqual(String(decoding: TwilioClient.formBody(SMSRequest(to: "+15551234567", body: "hi", reference: "r"),
                                                              sender: .messagingService("MG1")), as: UTF8.self),
                       "To=%2B15551234567&MessagingServiceSid=MG1&Body=hi")
    }

    func testTheSimulatorAnswersByTwiliosMagicNumbersWithoutANetwork() {
        let sim = SMSSimulator()
        let id = "6d1381c8-c56a-414b-9f26-80834721eb26"
        let answers = sim.send(["+15005550001", "+15005550002", "+15005550003", "+15005550004", "+15005550009",
                                "+33612345678"].map { SMSRequest(to: $0, body: "x", reference: id) })
        XCTAssertEqual(answers.map(\.httpStatus), [400, 400, 400, 400, 400, 201])
        XCTAssertEqual(answers.map(\.reason), ["21211", "21612", "21408", "21610", "21614", nil])
        XCTAssertEqual(answers[5].messageId, "SM6d1381c8c56a414b9f2680834721eb26")
        XCTAssertEqual(String(decoding: SMSSimulator.request(SMSRequest(to: "+33612345678", body: "Code 1", reference: id)),
                              as: UTF8.self), "To=%2B33612345678&From=%2B15005550006&Body=Code%201")
    }
}
