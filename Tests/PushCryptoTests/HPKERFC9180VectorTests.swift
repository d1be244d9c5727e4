import XCTest
@testable import PushCrypto
import PushTestSupport

/// RFC 9180 Appendix A.3 official vector for mode 0, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256,
/// AES-128-GCM (the file and its source: Tests/Vectors/README.md). Suites for other
/// KEMs/KDFs/AEADs are not in the file and not supported (only kem 0x0010 / kdf 0x0001 / aead 0x0001
/// are implemented).
final class HPKERFC9180VectorTests: XCTestCase {
    private func loadVector() throws -> HPKETestVector {
        let entries = try TestVectors.decode([HPKETestVector].self, from: .hpkeRFC9180P256)
        XCTAssertEqual(entries.count, 1)
        let vector = try XCTUnwrap(entries.first)
        XCTAssertEqual(vector.mode, 0)
        XCTAssertEqual(vector.kem_id, Int(HPKE.kemID))
        XCTAssertEqual(vector.kdf_id, Int(HPKE.kdfID))
        XCTAssertEqual(vector.aead_id, Int(HPKE.aeadID))
        return vector
    }

    func testDeriveKeyPairReproducesVectorKeysRFC9180Section7_1_3() throws {
        let vector = try loadVector()
        let ephemeral = try P256PrivateKey.deriveKeyPair(ikm: Hex.decode(vector.ikmE))
        XCTAssertEqual(Hex.encode(ephemeral.rawScalar), vector.skEm)
        XCTAssertEqual(Hex.encode(ephemeral.publicKey.raw), vector.pkEm)
        let recipient = try P256PrivateKey.deriveKeyPair(ikm: Hex.decode(vector.ikmR))
        XCTAssertEqual(Hex.encode(recipient.rawScalar), vector.skRm)
        XCTAssertEqual(Hex.encode(recipient.publicKey.raw), vector.pkRm)
        XCTAssertEqual(Hex.encode(try P256PrivateKey(rawScalar: Hex.decode(vector.skRm)).publicKey.raw), vector.pkRm)
    }

    func testSenderKeyScheduleMatchesEveryVectorValue() throws {
        let vector = try loadVector()
        let ephemeral = try P256PrivateKey(rawScalar: Hex.decode(vector.skEm))
        let recipient = try P256PublicKey(raw: Hex.decode(vector.pkRm))
        let (enc, context) = try HPKE.setupBaseSender(recipient: recipient, info: Hex.decode(vector.info),
                                                     ephemeral: ephemeral)
        XCTAssertEqual(Hex.encode(enc), vector.enc)
        assertSchedule(context.schedule, matches: vector)
    }

    func testRecipientKeyScheduleMatchesEveryVectorValue() throws {
        let vector = try loadVector()
        let recipient = try P256PrivateKey(rawScalar: Hex.decode(vector.skRm))
        let context = try HPKE.setupBaseRecipient(enc: Hex.decode(vector.enc), privateKey: recipient,
                                                  info: Hex.decode(vector.info))
        assertSchedule(context.schedule, matches: vector)
    }

    func testAll257SequencedEncryptionsMatchNonceAndCiphertext() throws {
        let vector = try loadVector()
        XCTAssertEqual(vector.encryptions.count, 257)
        let ephemeral = try P256PrivateKey(rawScalar: Hex.decode(vector.skEm))
        let recipientKey = try P256PrivateKey(rawScalar: Hex.decode(vector.skRm))
        let info = try Hex.decode(vector.info)
        var (_, sender) = try HPKE.setupBaseSender(recipient: recipientKey.publicKey, info: info, ephemeral: ephemeral)
        var receiver = try HPKE.setupBaseRecipient(enc: Hex.decode(vector.enc), privateKey: recipientKey, info: info)
        for (seq, record) in vector.encryptions.enumerated() {
            XCTAssertEqual(sender.sequence, UInt64(seq))
            XCTAssertEqual(Hex.encode(sender.nonce(sequence: UInt64(seq))), record.nonce, "nonce of seq \(seq)")
            let ct = try sender.seal(plaintext: Hex.decode(record.pt), aad: Hex.decode(record.aad))
            XCTAssertEqual(Hex.encode(ct), record.ct, "ct of seq \(seq)")
            let pt = try receiver.open(ciphertext: Hex.decode(record.ct), aad: Hex.decode(record.aad))
            XCTAssertEqual(Hex.encode(pt), record.pt, "pt of seq \(seq)")
        }
        XCTAssertEqual(sender.sequence, 257)
        XCTAssertEqual(receiver.sequence, 257)
    }

    func testExportsMatchVectorOnBothSides() throws {
        let vector = try loadVector()
        XCTAssertEqual(vector.exports.count, 3)
        let ephemeral = try P256PrivateKey(rawScalar: Hex.decode(vector.skEm))
        let recipientKey = try P256PrivateKey(rawScalar: Hex.decode(vector.skRm))
        let info = try Hex.decode(vector.info)
        let (_, sender) = try HPKE.setupBaseSender(recipient: recipientKey.publicKey, info: info, ephemeral: ephemeral)
        let receiver = try HPKE.setupBaseRecipient(enc: Hex.decode(vector.enc), privateKey: recipientKey, info: info)
        for export in vector.exports {
            let context = try Hex.decode(export.exporter_context)
            XCTAssertEqual(Hex.encode(try sender.export(context: context, length: export.L)), export.exported_value)
            XCTAssertEqual(Hex.encode(try receiver.export(context: context, length: export.L)), export.exported_value)
        }
    }

    func testPublicOneShotSealWithVectorEphemeralGivesFirstEncryption() throws {
        let vector = try loadVector()
        let first = try XCTUnwrap(vector.encryptions.first)
        let recipientKey = try P256PrivateKey(rawScalar: Hex.decode(vector.skRm))
        let sealed = try HPKE.seal(plaintext: Hex.decode(first.pt), recipient: recipientKey.publicKey,
                                   info: Hex.decode(vector.info), aad: Hex.decode(first.aad),
                                   ephemeralPrivateKey: P256PrivateKey(rawScalar: Hex.decode(vector.skEm)))
        XCTAssertEqual(Hex.encode(sealed.enc), vector.enc)
        XCTAssertEqual(Hex.encode(sealed.ciphertext), first.ct)
        let opened = try HPKE.open(enc: sealed.enc, ciphertext: sealed.ciphertext, recipient: recipientKey,
                                   info: Hex.decode(vector.info), aad: Hex.decode(first.aad))
        XCTAssertEqual(Hex.encode(opened), first.pt)
    }

    private func assertSchedule(_ schedule: HPKEKeySchedule, matches vector: HPKETestVector,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(Hex.encode(schedule.sharedSecret), vector.shared_secret, "shared_secret", file: file, line: line)
        XCTAssertEqual(Hex.encode(schedule.keyScheduleContext), vector.key_schedule_context, "key_schedule_context",
                       file: file, line: line)
        XCTAssertEqual(Hex.encode(schedule.secret), vector.secret, "secret", file: file, line: line)
        XCTAssertEqual(Hex.encode(schedule.key), vector.key, "key", file: file, line: line)
        XCTAssertEqual(Hex.encode(schedule.baseNonce), vector.base_nonce, "base_nonce", file: file, line: line)
        XCTAssertEqual(Hex.encode(schedule.exporterSecret), vector.exporter_secret, "exporter_secret",
                       file: file, line: line)
    }
}
