import XCTest
@testable import PushCrypto
import PushTestSupport

/// The honkio envelope v2 vector (`Tests/Vectors/honkio_push_v2.json`; R-ENC-1, R-ENC-2, R-DEV-3).
final class HonkioEnvelopeVectorTests: XCTestCase {
    private func loadVector() throws -> HonkioPushVector {
        let vector = try TestVectors.decode(HonkioPushVector.self, from: .honkioPushV2)
        XCTAssertEqual(vector.suite.mode, "base")
        XCTAssertEqual(vector.suite.kem_id, Int(HPKE.kemID))
        XCTAssertEqual(vector.suite.kdf_id, Int(HPKE.kdfID))
        XCTAssertEqual(vector.suite.aead_id, Int(HPKE.aeadID))
        XCTAssertEqual(Array(vector.suite.info.utf8), EnvelopeSealer.info)
        XCTAssertEqual(vector.suite.aad, "")
        XCTAssertEqual(vector.envelope.v, 2)
        return vector
    }

    private func recipientKey(_ vector: HonkioPushVector) throws -> P256PrivateKey {
        try P256PrivateKey(rawScalar: base64URLBytes(vector.recipient.private_key))
    }

    func testOpeningVectorEnvelopeYieldsPlaintextJSONExactlyRENC1() throws {
        let vector = try loadVector()
        let enc = try base64URLBytes(vector.envelope.enc)
        let ct = try base64URLBytes(vector.envelope.ct)
        let opened = try EnvelopeSealer().open(enc: enc, ct: ct, with: recipientKey(vector))
        XCTAssertEqual(opened, Array(vector.plaintext_json.utf8))
        XCTAssertEqual(opened.count, 87)
        let viaHPKE = try HPKE.open(enc: enc, ciphertext: ct, recipient: recipientKey(vector), info: EnvelopeSealer.info)
        XCTAssertEqual(viaHPKE, Array(vector.plaintext_json.utf8))
    }

    func testSealingWithVectorEphemeralKeyReproducesEncAndCtByteForByte() throws {
        let vector = try loadVector()
        let ephemeral = try P256PrivateKey(rawScalar: base64URLBytes(vector.ephemeral.private_key))
        let recipient = try P256PublicKey(base64URL: vector.recipient.public_key)
        let plaintext = Array(vector.plaintext_json.utf8)
        let sealed = try EnvelopeSealer().seal(plaintext, to: recipient, ephemeral: ephemeral)
        XCTAssertEqual(Base64URL.encode(sealed.enc), vector.envelope.enc)
        XCTAssertEqual(Base64URL.encode(sealed.ct), vector.envelope.ct)
        let viaHPKE = try HPKE.seal(plaintext: plaintext, recipient: recipient, info: EnvelopeSealer.info,
                                    ephemeralPrivateKey: ephemeral)
        XCTAssertEqual(Base64URL.encode(viaHPKE.enc), vector.envelope.enc)
        XCTAssertEqual(Base64URL.encode(viaHPKE.ciphertext), vector.envelope.ct)
    }

    func testDeriveKeyPairFromVectorIKMGivesBothPrivateAndPublicKeys() throws {
        let vector = try loadVector()
        for pair in [vector.recipient, vector.ephemeral] {
            let derived = try P256PrivateKey.deriveKeyPair(ikm: Hex.decode(pair.ikm_hex))
            XCTAssertEqual(Base64URL.encode(derived.rawScalar), pair.private_key)
            XCTAssertEqual(derived.publicKey.base64URL, pair.public_key)
            let fromScalar = try P256PrivateKey(rawScalar: base64URLBytes(pair.private_key))
            XCTAssertEqual(fromScalar.publicKey.base64URL, pair.public_key)
        }
    }

    func testKidIsFirst16CharactersOfBase64URLSHA256OfRawKeyRDEV3() throws {
        let vector = try loadVector()
        let key = try P256PublicKey(base64URL: vector.recipient.public_key)
        XCTAssertEqual(key.kid, "cHRL-UfvREIeEx3Q")
        XCTAssertEqual(key.kid, vector.recipient.kid)
        XCTAssertEqual(key.kid, vector.envelope.kid)
        let recomputed = String(Base64URL.encode(try SHA256.hash(key.raw)).prefix(16))
        XCTAssertEqual(key.kid, recomputed)
        XCTAssertEqual(try P256PublicKey(validatedStoredBytes: key.raw).kid, key.kid)
    }

    func testKeyScheduleIntermediateValuesOfTheHonkioVector() throws {
        let vector = try loadVector()
        let ephemeral = try P256PrivateKey(rawScalar: base64URLBytes(vector.ephemeral.private_key))
        let recipient = try P256PublicKey(base64URL: vector.recipient.public_key)
        let (_, context) = try HPKE.setupBaseSender(recipient: recipient, info: EnvelopeSealer.info, ephemeral: ephemeral)
        XCTAssertEqual(Hex.encode(context.schedule.sharedSecret),
                       "eb721e3487bb7630bd07ec9dfe17f534053d0cd583ac907f1a6800eb169113f1")
        XCTAssertEqual(Hex.encode(context.schedule.keyScheduleContext),
                       "00b88d4e6d91759e65e87c470e8b9141113e9ad5f0c8ceefc1e088c82e69805007"
                       + "e6d4ee56eb7ae284d196357fa223c0474c0069dfffe8b4f73312119738bd94aa")
        XCTAssertEqual(Hex.encode(context.schedule.secret),
                       "a646e348db3333c60e6951b74abe223f89b5f44397a81a8f3978200d6a819bfc")
        XCTAssertEqual(Hex.encode(context.schedule.key), "cacb81f940d652b8eb0210d0160b11d6")
        XCTAssertEqual(Hex.encode(context.schedule.baseNonce), "6007f4ab01f2b12670147ab4")
        XCTAssertEqual(Hex.encode(context.schedule.exporterSecret),
                       "189d7f1dd91d92d7b472b947ccc0b3c5631beba4cdd5c265dda1bcb977551d85")
        XCTAssertEqual(try EnvelopeSealer().keyScheduleContext, context.schedule.keyScheduleContext)
    }

    func testCiphertextLengthIsPlaintextLengthPlus16RSEND7() throws {
        let vector = try loadVector()
        XCTAssertEqual(EnvelopeSealer.ciphertextLength(plaintextLength: 87), 103)
        XCTAssertEqual(try base64URLBytes(vector.envelope.ct).count,
                       EnvelopeSealer.ciphertextLength(plaintextLength: vector.plaintext_json.utf8.count))
        let sealer = try EnvelopeSealer()
        let recipient = try P256PrivateKey.generate().publicKey
        for length in [0, 1, 15, 16, 17, 2871, 4096] {
            let sealed = try sealer.seal([UInt8](repeating: 0x7B, count: length), to: recipient)
            XCTAssertEqual(sealed.ct.count, EnvelopeSealer.ciphertextLength(plaintextLength: length))
            XCTAssertEqual(sealed.enc.count, EnvelopeSealer.encLength)
        }
    }

    func testTamperedCiphertextFailsWithOpenFailed() throws {
        let vector = try loadVector()
        let enc = try base64URLBytes(vector.envelope.enc)
        let ct = try base64URLBytes(vector.envelope.ct)
        let key = try recipientKey(vector)
        let sealer = try EnvelopeSealer()
        for index in [0, 50, ct.count - 17, ct.count - 1] {
            var tampered = ct
            tampered[index] ^= 0x01
            assertOpenFailed(try sealer.open(enc: enc, ct: tampered, with: key), "bit flipped at \(index)")
        }
        assertOpenFailed(try sealer.open(enc: enc, ct: Array(ct.dropLast()), with: key), "truncated")
        assertOpenFailed(try sealer.open(enc: enc, ct: Array(ct.prefix(15)), with: key), "shorter than tag")
        var badEnc = enc
        badEnc[64] ^= 0x01
        assertOpenFailed(try sealer.open(enc: badEnc, ct: ct, with: key), "enc off curve")
        assertOpenFailed(try sealer.open(enc: Array(enc.prefix(33)), ct: ct, with: key), "enc truncated")
        assertOpenFailed(try sealer.open(enc: enc, ct: ct, with: P256PrivateKey.generate()), "wrong recipient")
    }

    func testWrongInfoFailsWithOpenFailed() throws {
        let vector = try loadVector()
        let enc = try base64URLBytes(vector.envelope.enc)
        let ct = try base64URLBytes(vector.envelope.ct)
        assertOpenFailed(try HPKE.open(enc: enc, ciphertext: ct, recipient: recipientKey(vector),
                                       info: Array("honkio-push-v1".utf8)), "info v1")
        assertOpenFailed(try HPKE.open(enc: enc, ciphertext: ct, recipient: recipientKey(vector),
                                       info: EnvelopeSealer.info, aad: [0x00]), "non-empty aad")
    }

    private func assertOpenFailed<T>(_ expression: @autoclosure () throws -> T, _ note: String,
                                     file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try expression(), note, file: file, line: line) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .openFailed, "\(note): \(error)", file: file, line: line)
        }
    }
}
