import Foundation
import XCTest
import PushProviders
import PushTestSupport
@testable import PushCore
import PushCrypto

/// Byte-exact payloads against `honkio_push_v2.json` (R-ENC-3..6, R-ENC-9).
final class PayloadVectorTests: XCTestCase {
    /// The vector's `apns_payload`, written compactly by hand in the R-ENC-9 key order.
    static let expectedAPNs = #"{"aps":{"alert":{"title":"New notification","body":""},"mutable-content":1,"badge":1,"sound":"default"},"hk":{"v":2,"kid":"cHRL-UfvREIeEx3Q","enc":"BPDblkoWAGabKxtOrs52tL2JaFkPPoqNVP8104Q3C7SwOj8mbh1bw7iLBpr7tWEPglEt4X_DX9Y8BVJnrHo1-wg","ct":"SK86q5n7JJTP_HjhHm_7WGk0g2mgJSjE4UyRTnjlQqObn8ntlLw8IJgQ5UasGWOTNuWwmlhl6o-wbXOB9lse8pkvaOlV7SNKs4p54P5nVzLtMoJsp8t8gD1t_m0Y3jSxhoCsRMV-pg"}}"#

    /// The vector's `fcm_data`, written compactly by hand.
    static let expectedFCMData = #"{"hk":"{\"v\":2,\"kid\":\"cHRL-UfvREIeEx3Q\",\"enc\":\"BPDblkoWAGabKxtOrs52tL2JaFkPPoqNVP8104Q3C7SwOj8mbh1bw7iLBpr7tWEPglEt4X_DX9Y8BVJnrHo1-wg\",\"ct\":\"SK86q5n7JJTP_HjhHm_7WGk0g2mgJSjE4UyRTnjlQqObn8ntlLw8IJgQ5UasGWOTNuWwmlhl6o-wbXOB9lse8pkvaOlV7SNKs4p54P5nVzLtMoJsp8t8gD1t_m0Y3jSxhoCsRMV-pg\"}"}"#

    /// The hand-written literals are the vector's structures (checked with Foundation), so the byte
    /// comparisons below compare against the vector itself.
    func testHandWrittenExpectationsEqualTheVectorFile() throws {
        let vector = try HonkioVector.load()
        let apns = try foundationJSON(Array(Self.expectedAPNs.utf8)) as? NSDictionary
        XCTAssertEqual(apns, vector["apns_payload"] as? NSDictionary)
        let fcm = try foundationJSON(Array(Self.expectedFCMData.utf8)) as? NSDictionary
        XCTAssertEqual(fcm, vector["fcm_data"] as? NSDictionary)
        // The compact APNs payload of the vector is 384 bytes.
        XCTAssertEqual(Self.expectedAPNs.utf8.count, 384)
    }

    /// R-ENC-3: the sealed plaintext equals `plaintext_json` byte for byte.
    func testSealedPlaintextMatchesVectorPlaintextJSON() throws {
        let vector = try HonkioVector.load()
        let expected = try XCTUnwrap(vector["plaintext_json"] as? String)
        XCTAssertEqual(SealedPlaintext.bytes(for: HonkioVector.content).text, expected)
    }

    /// R-ENC-2: the envelope JSON equals the vector's `fcm_data.hk` string.
    func testEnvelopeJSONMatchesVectorByteForByte() throws {
        let vector = try HonkioVector.load()
        let envelope = try HonkioVector.envelope(vector)
        let hk = try XCTUnwrap((vector["fcm_data"] as? [String: Any])?["hk"] as? String)
        XCTAssertEqual(envelope.jsonBytes.text, hk)
        XCTAssertEqual(envelope.jsonBytes.count, Envelope.jsonLength(kid: envelope.kid, ctLength: envelope.ct.count))
    }

    /// R-ENC-4, R-ENC-9: the encrypted iOS payload equals the vector's `apns_payload` compact bytes.
    func testEncryptedIOSPayloadMatchesVectorByteForByte() throws {
        let envelope = try HonkioVector.envelope(try HonkioVector.load())
        let body = APNsPayload.encrypted(content: HonkioVector.content, placeholders: AppPlaceholders(), envelope: envelope)
        XCTAssertEqual(body, Array(Self.expectedAPNs.utf8), body.text)
    }

    /// R-ENC-5: the encrypted Android `data` equals the vector's `fcm_data`.
    func testEncryptedAndroidDataMatchesVectorByteForByte() throws {
        let vector = try HonkioVector.load()
        let envelope = try HonkioVector.envelope(vector)
        let message = FCMMessage.encrypted(token: "tok", content: HonkioVector.content, envelope: envelope)
        XCTAssertEqual(message.dataJSON.text, Self.expectedFCMData)
        let hk = try XCTUnwrap((vector["fcm_data"] as? [String: Any])?["hk"] as? String)
        XCTAssertEqual(message.data, [FCMMessage.DataEntry("hk", hk)])
        // "hk" + the envelope string = 276 bytes under the R-SEND-7 measure.
        XCTAssertEqual(message.ruleSize, 276)
    }

    /// The planner's encrypted path renders the same bytes as the direct builders, for the vector.
    func testPlannedEncryptedDeliveriesRenderTheVectorPayloads() throws {
        let envelope = try HonkioVector.envelope(try HonkioVector.load())
        let planner = DeliveryPlanner(content: HonkioVector.content, placeholders: AppPlaceholders(),
                                      requireEncryption: false, mode: .live)
        let key = sampleKey
        guard case .send(let ios) = planner.plan(DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .sandbox, publicKey: key, kid: envelope.kid)),
              case .sealed(let plaintext, let template) = ios.body else { return XCTFail("iOS not planned encrypted") }
        XCTAssertEqual(plaintext, SealedPlaintext.bytes(for: HonkioVector.content))
        XCTAssertEqual(try template.render(envelope: envelope), .body(Array(Self.expectedAPNs.utf8)))
        XCTAssertEqual(ios.finalSize, 384)

        guard case .send(let android) = planner.plan(DeviceSnapshot(platform: "android", token: "t", publicKey: key, kid: envelope.kid)),
              case .sealed(_, let fcmTemplate) = android.body,
              case .fcm(let message) = try fcmTemplate.render(envelope: envelope) else { return XCTFail("Android not planned encrypted") }
        XCTAssertEqual(message.dataJSON.text, Self.expectedFCMData)
        XCTAssertEqual(android.finalSize, 276)
    }

    /// R-ENC-6, R-SEND-10: the full FCM request body keeps the collapse key and priority outside the envelope.
    func testFCMEncryptedRequestBodyShape() throws {
        let envelope = try HonkioVector.envelope(try HonkioVector.load())
        var content = HonkioVector.content
        content.collapseKey = "otp"
        content.priority = .normal
        let body = FCMMessage.encrypted(token: "fcm-token", content: content, envelope: envelope).requestBody(ttlSeconds: 123)
        let expected = #"{"message":{"token":"fcm-token","data":"# + Self.expectedFCMData
            + #","android":{"priority":"NORMAL","ttl":"123s","collapse_key":"otp"}}}"#
        XCTAssertEqual(body.text, expected)
    }

    /// A template refuses an envelope that does not match its plan (wrong kid or lengths).
    func testTemplateRefusesMismatchedEnvelope() throws {
        let planner = DeliveryPlanner(content: HonkioVector.content, placeholders: AppPlaceholders(),
                                      requireEncryption: true, mode: .live)
        guard case .send(let planned) = planner.plan(DeviceSnapshot(platform: "ios", token: "t", apnsEnvironment: .sandbox, publicKey: sampleKey, kid: sampleKid)),
              case .sealed(let plaintext, let template) = planned.body else { return XCTFail("not sealed") }
        let good = fakeEnvelope(plaintextLength: plaintext.count)
        XCTAssertNoThrow(try template.render(envelope: good))
        let bad = [
            Envelope(kid: "AAAAAAAAAAAAAAAA", enc: good.enc, ct: good.ct),
            Envelope(kid: sampleKid, enc: Array(good.enc.dropLast()), ct: good.ct),
            Envelope(kid: sampleKid, enc: good.enc, ct: good.ct + [0]),
        ]
        for envelope in bad {
            XCTAssertThrowsError(try template.render(envelope: envelope)) { error in
                XCTAssertEqual((error as? PushError)?.code, .envelopeMismatch)
            }
        }
    }
}
