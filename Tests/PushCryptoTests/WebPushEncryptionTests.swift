import XCTest
@testable import PushCrypto

/// RFC 8291 Web Push encryption, checked byte for byte against the RFC 8291 §5 / Appendix A
/// example, plus R-SEND-7's size rule and malformed inputs.
final class WebPushEncryptionTests: XCTestCase {
    private func b64(_ s: String, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        try XCTUnwrap(Base64URL.decode(s), "bad base64url in test data", file: file, line: line)
    }

    // RFC 8291 §5 inputs.
    private var plaintext: [UInt8] { Array("When I grow up, I want to be a watermelon".utf8) }
    private func asPrivate() throws -> [UInt8] { try b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw") }
    private func asPublic() throws -> [UInt8] {
        try b64("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    }
    private func uaPrivate() throws -> [UInt8] { try b64("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94") }
    private func uaPublic() throws -> [UInt8] {
        try b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    }
    private func salt() throws -> [UInt8] { try b64("DGv6ra1nlYgDCS1FRnbzlw") }
    private func auth() throws -> [UInt8] { try b64("BTBZMqHH6r4Tts7J_aSIgg") }
    private func exampleBody() throws -> [UInt8] {
        try b64("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    }

    func testRFC8291ExampleBodyIsReproducedByteForByteFromItsInputs() throws {
        let body = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(),
                                                 recordSize: 4096, padding: 0, salt: salt(),
                                                 ephemeralPrivateKey: asPrivate())
        XCTAssertEqual(body, try exampleBody())
        // RFC 8291 §5's example request says Content-Length 145; its body is 144 bytes.
        XCTAssertEqual(body.count, 144)
        XCTAssertEqual(Base64URL.encode(body.prefix(86)),
                       "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    }

    func testRFC8291IntermediateValuesMatchAppendixA() throws {
        let ecdh = try WebPushEC.sharedSecret(privateKey: asPrivate(), peerPublicKey: uaPublic(), peerField: "p256dh")
        XCTAssertEqual(Base64URL.encode(ecdh), "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs")
        XCTAssertEqual(try WebPushEC.sharedSecret(privateKey: uaPrivate(), peerPublicKey: asPublic(), peerField: "keyid"), ecdh)
        XCTAssertEqual(try WebPushEC.publicKey(privateKey: asPrivate()), try asPublic())
        XCTAssertEqual(try WebPushEC.publicKey(privateKey: uaPrivate()), try uaPublic())
        let ikm = try WebPushEncryption.inputKeyingMaterial(ecdhSecret: ecdh, auth: auth(), userAgentPublicKey: uaPublic(),
                                                            applicationServerPublicKey: asPublic())
        XCTAssertEqual(Base64URL.encode(ikm), "S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg")
        let (cek, nonce) = try WebPushContentCoding.keyAndNonce(ikm: ikm, salt: salt())
        XCTAssertEqual(Base64URL.encode(cek), "oIhVW04MRdy2XN9CiKLxTg")
        XCTAssertEqual(Base64URL.encode(nonce), "4h_95klXJ5E_qnoN")
    }

    func testRFC8291ExampleDecryptsWithUserAgentKeys() throws {
        let plain = try WebPushDecryption.decrypt(body: exampleBody(), userAgentPrivateKey: uaPrivate(), auth: auth())
        XCTAssertEqual(plain, plaintext)
    }

    /// R-SEND-7: an unpadded Web Push body is plaintext + 103 bytes (header 86, delimiter 1, tag 16).
    func testBodyLengthIsPlaintextPlus103PerRSEND7() throws {
        XCTAssertEqual(WebPushEncryption.bodyLength(plaintextLength: 0), 103)
        XCTAssertEqual(WebPushEncryption.bodyLength(plaintextLength: 41), 144)
        XCTAssertEqual(WebPushEncryption.bodyLength(plaintextLength: 3993), 4096)
        for n in [0, 1, 41, 500, 3993] {
            let body = try WebPushEncryption.encrypt(plaintext: [UInt8](repeating: 0x61, count: n),
                                                     p256dh: uaPublic(), auth: auth())
            XCTAssertEqual(body.count, WebPushEncryption.bodyLength(plaintextLength: n), "plaintext \(n)")
        }
    }

    func testPaddingAddsZeroBytesThatDecryptionRemoves() throws {
        let body = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(), padding: 7)
        XCTAssertEqual(body.count, WebPushEncryption.bodyLength(plaintextLength: plaintext.count) + 7)
        XCTAssertEqual(try WebPushDecryption.decrypt(body: body, userAgentPrivateKey: uaPrivate(), auth: auth()), plaintext)
    }

    /// RFC 8291 §3.2: a fresh sender key and salt for every message.
    func testEachMessageUsesAFreshSaltAndEphemeralKey() throws {
        let a = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth())
        let b = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth())
        XCTAssertNotEqual(Array(a[0..<16]), Array(b[0..<16]), "salt reused")
        XCTAssertNotEqual(Array(a[21..<86]), Array(b[21..<86]), "ephemeral key reused")
        XCTAssertEqual(a[20], 65)
        XCTAssertTrue(WebPushEC.isValidPublicKey(Array(a[21..<86])))
        XCTAssertEqual(try WebPushDecryption.decrypt(body: a, userAgentPrivateKey: uaPrivate(), auth: auth()), plaintext)
        XCTAssertEqual(try WebPushDecryption.decrypt(body: b, userAgentPrivateKey: uaPrivate(), auth: auth()), plaintext)
    }

    func testRoundTripWithGeneratedSubscriptionKeys() throws {
        let priv = try WebPushDecryption.generatePrivateKey()
        let pub = try WebPushDecryption.publicKey(privateKey: priv)
        let secret = try WebPushRandom.bytes(16)
        let message = Array("{\"title\":\"Salut\",\"body\":\"à bientôt\"}".utf8)
        let body = try WebPushEncryption.encrypt(plaintext: message, p256dh: pub, auth: secret)
        XCTAssertEqual(try WebPushDecryption.decrypt(body: body, userAgentPrivateKey: priv, auth: secret), message)
        XCTAssertThrowsError(try WebPushDecryption.decrypt(body: body, userAgentPrivateKey: priv,
                                                           auth: [UInt8](repeating: 0, count: 16))) {
            XCTAssertEqual(($0 as? WebPushError)?.code, "DECRYPTION_FAILED")
        }
    }

    // MARK: - Malformed inputs are typed errors

    private func assertError(_ code: String, field: String? = nil, file: StaticString = #filePath, line: UInt = #line,
                             _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let e = error as? WebPushError else { return XCTFail("not a WebPushError: \(error)", file: file, line: line) }
            XCTAssertEqual(e.code, code, "\(e)", file: file, line: line)
            if let field { XCTAssertEqual(e.field, field, "\(e)", file: file, line: line) }
        }
    }

    func testBadP256dhIsAValidationErrorNamingTheField() throws {
        let good = try uaPublic()
        var offCurve = good
        offCurve[64] ^= 0x01
        var compressedMarker = good
        compressedMarker[0] = 0x02
        for key in [[], Array(good.prefix(64)), good + [0], offCurve, compressedMarker, [UInt8](repeating: 0, count: 65)] {
            assertError("VALIDATION_ERROR", field: "p256dh") {
                _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: key, auth: auth())
            }
        }
    }

    func testAuthSecretMustBeSixteenBytes() throws {
        for n in [0, 15, 17, 32] {
            assertError("VALIDATION_ERROR", field: "auth") {
                _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: [UInt8](repeating: 1, count: n))
            }
        }
    }

    func testBadTestInputsAreRefused() throws {
        assertError("INVALID_PARAMETER", field: "salt") {
            _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(), salt: [1, 2, 3])
        }
        assertError("INVALID_PRIVATE_KEY") {
            _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(),
                                              ephemeralPrivateKey: [UInt8](repeating: 0, count: 32))
        }
        assertError("INVALID_PRIVATE_KEY") {
            _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(),
                                              ephemeralPrivateKey: [UInt8](repeating: 0xff, count: 32))
        }
        assertError("INVALID_PARAMETER", field: "padding") {
            _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(), padding: -1)
        }
    }

    /// RFC 8291 §4: rs must exceed plaintext + delimiter + padding + tag (one record only).
    func testRecordSizeMustExceedTheSealedRecord() throws {
        let fits = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(),
                                                 recordSize: UInt32(plaintext.count + 18))
        XCTAssertEqual(try WebPushDecryption.decrypt(body: fits, userAgentPrivateKey: uaPrivate(), auth: auth()), plaintext)
        assertError("INVALID_PARAMETER", field: "recordSize") {
            _ = try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: uaPublic(), auth: auth(),
                                              recordSize: UInt32(plaintext.count + 17))
        }
    }

    func testTruncatedBodiesAreRefusedAtEveryLength() throws {
        let body = try exampleBody()
        for n in 0..<body.count {
            XCTAssertThrowsError(try WebPushDecryption.decrypt(body: Array(body.prefix(n)), userAgentPrivateKey: uaPrivate(),
                                                               auth: auth()), "prefix \(n)") { error in
                let code = (error as? WebPushError)?.code
                XCTAssertTrue(["TRUNCATED", "DECRYPTION_FAILED", "INVALID_HEADER"].contains(code ?? ""), "\(n): \(error)")
            }
        }
    }

    func testAnyFlippedCiphertextOrTagByteFailsAuthentication() throws {
        let body = try exampleBody()
        for i in 86..<body.count {
            var bad = body
            bad[i] ^= 0x80
            assertError("DECRYPTION_FAILED") {
                _ = try WebPushDecryption.decrypt(body: bad, userAgentPrivateKey: uaPrivate(), auth: auth())
            }
        }
    }

    func testDecryptionRefusesAKeyIdThatIsNotAPoint() throws {
        var bad = try exampleBody()
        bad[21 + 64] ^= 0x01
        assertError("INVALID_HEADER") {
            _ = try WebPushDecryption.decrypt(body: bad, userAgentPrivateKey: uaPrivate(), auth: auth())
        }
    }

    /// RFC 8291 §4: a push message is a single record.
    func testDecryptionRefusesMultipleRecords() throws {
        var body = try exampleBody()
        body[16..<20] = [0, 0, 0, 40]
        assertError("MULTIPLE_RECORDS") {
            _ = try WebPushDecryption.decrypt(body: body, userAgentPrivateKey: uaPrivate(), auth: auth())
        }
    }
}
