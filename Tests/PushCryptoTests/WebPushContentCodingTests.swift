import XCTest
@testable import PushCrypto

/// RFC 8188 `aes128gcm` content coding, against the RFC 8188 §3.1 and §3.2 examples
/// (§3.1's text says 54 octets; its bytes are 53).
final class WebPushContentCodingTests: XCTestCase {
    private func b64(_ s: String) throws -> [UInt8] { try XCTUnwrap(Base64URL.decode(s), "bad base64url in test data") }

    private let walrus = Array("I am the walrus".utf8)
    private func ikm31() throws -> [UInt8] { try b64("yqdlZ-tYemfogSmv7Ws5PQ") }
    private func body31() throws -> [UInt8] { try b64("I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg") }
    private func ikm32() throws -> [UInt8] { try b64("BO3ZVPxUlnLORbVGMpbT1Q") }
    private func body32() throws -> [UInt8] {
        try b64("uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA")
    }

    private func assertCode(_ code: String, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual(($0 as? WebPushError)?.code, code, "\($0)", file: file, line: line)
        }
    }

    // MARK: - RFC 8188 §3.1

    func testRFC8188Section31DecryptsToTheWalrus() throws {
        let body = try body31()
        XCTAssertEqual(body.count, 53, "RFC 8188 §3.1 says 54 octets, the bytes are 53")
        XCTAssertEqual(try WebPushContentCoding.decrypt(body: body, ikm: ikm31()), walrus)
    }

    func testRFC8188Section31KeyScheduleMatchesThePublishedValues() throws {
        let (cek, nonce) = try WebPushContentCoding.keyAndNonce(ikm: ikm31(), salt: b64("I1BsxtFttlv3u_Oo94xnmw"))
        XCTAssertEqual(Base64URL.encode(cek), "_wniytB-ofscZDh4tbSjHw")
        XCTAssertEqual(Base64URL.encode(nonce), "Bcs8gkIRKLI8GeI8")
    }

    func testRFC8188Section31IsReproducedByteForByte() throws {
        let body = try WebPushContentCoding.encrypt(plaintext: walrus, ikm: ikm31(), salt: b64("I1BsxtFttlv3u_Oo94xnmw"),
                                                    keyID: [], recordSize: 4096)
        XCTAssertEqual(body, try body31())
    }

    // MARK: - RFC 8188 §3.2 (two records, rs 25, key id "a1")

    func testRFC8188Section32MultiRecordDecryptsToTheWalrus() throws {
        let body = try body32()
        XCTAssertEqual(body.count, 73)
        let header = try WebPushContentHeader.parse(body)
        XCTAssertEqual(header.recordSize, 25)
        XCTAssertEqual(header.keyID, Array("a1".utf8))
        XCTAssertEqual(header.length, 23)
        XCTAssertEqual(try WebPushContentCoding.decrypt(body: body, ikm: ikm32()), walrus)
    }

    func testRFC8188Section32IsReproducedByteForByteFromItsRecordPlan() throws {
        let salt = Array(try body32()[0..<16])
        let records = [WebPushContentCoding.Record(data: Array(walrus[0..<7]), padding: 1),
                       WebPushContentCoding.Record(data: Array(walrus[7...]), padding: 0)]
        let body = try WebPushContentCoding.encrypt(records: records, ikm: ikm32(), salt: salt,
                                                    keyID: Array("a1".utf8), recordSize: 25)
        XCTAssertEqual(body, try body32())
    }

    func testNonFinalRecordsMustFillTheRecordSize() throws {
        let records = [WebPushContentCoding.Record(data: Array(walrus[0..<6])), WebPushContentCoding.Record(data: Array(walrus[6...]))]
        XCTAssertThrowsError(try WebPushContentCoding.encrypt(records: records, ikm: ikm32(), salt: [UInt8](repeating: 0, count: 16),
                                                              recordSize: 25)) {
            XCTAssertEqual(($0 as? WebPushError)?.field, "records")
        }
    }

    /// RFC 8188 §2: the nonce of record i is NONCE XOR i (96-bit big-endian).
    func testRecordNonceXorsTheSequenceNumberIntoTheLowBytes() {
        let base: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        XCTAssertEqual(WebPushContentCoding.recordNonce(base, index: 0), base)
        XCTAssertEqual(WebPushContentCoding.recordNonce(base, index: 1), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10])
        XCTAssertEqual(WebPushContentCoding.recordNonce(base, index: 0x0102), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 9])
    }

    // MARK: - Malformed bodies

    /// Dropping the last record leaves a final record marked 0x01: truncation (RFC 8188 §2).
    func testDroppingTheLastRecordIsDetectedAsTruncation() throws {
        let body = try body32()
        assertCode("TRUNCATED") { _ = try WebPushContentCoding.decrypt(body: Array(body.prefix(48)), ikm: ikm32()) }
    }

    func testHeaderOnlyAndShortRecordsAreTruncated() throws {
        let body = try body31()
        for n in [0, 5, 20, 21, 30, 37] {
            assertCode("TRUNCATED") { _ = try WebPushContentCoding.decrypt(body: Array(body.prefix(n)), ikm: ikm31()) }
        }
    }

    func testRecordSizeBelowEighteenIsAnInvalidHeader() throws {
        var body = try body31()
        body[16..<20] = [0, 0, 0, 17]
        assertCode("INVALID_HEADER") { _ = try WebPushContentCoding.decrypt(body: body, ikm: ikm31()) }
    }

    func testWrongKeyOrAlteredTagFailsAuthentication() throws {
        var body = try body31()
        assertCode("DECRYPTION_FAILED") { _ = try WebPushContentCoding.decrypt(body: body, ikm: ikm32()) }
        body[body.count - 1] ^= 1
        assertCode("DECRYPTION_FAILED") { _ = try WebPushContentCoding.decrypt(body: body, ikm: ikm31()) }
    }

    func testRecordsWithoutOrWithForeignDelimitersAreRefused() throws {
        let ikm = try ikm31(), salt = [UInt8](repeating: 7, count: 16)
        let (key, nonce) = try WebPushContentCoding.keyAndNonce(ikm: ikm, salt: salt)
        let header = try WebPushContentHeader(salt: salt, recordSize: 4096, keyID: []).encoded()
        for (padded, code) in [([0x61, 0x00, 0x00], "INVALID_PADDING"), ([0x00, 0x00], "INVALID_PADDING"),
                               ([0x61, 0x03], "INVALID_PADDING"), ([0x61, 0x01], "TRUNCATED")] as [([UInt8], String)] {
            let body = header + (try WebPushAESGCM.seal(key: key, nonce: nonce, plaintext: padded))
            assertCode(code) { _ = try WebPushContentCoding.decrypt(body: body, ikm: ikm) }
        }
    }

    func testEncryptRefusesBadHeaderFields() throws {
        let ikm = try ikm31()
        XCTAssertThrowsError(try WebPushContentCoding.encrypt(plaintext: walrus, ikm: ikm, salt: [1])) {
            XCTAssertEqual(($0 as? WebPushError)?.field, "salt")
        }
        XCTAssertThrowsError(try WebPushContentCoding.encrypt(plaintext: walrus, ikm: ikm, salt: [UInt8](repeating: 0, count: 16),
                                                              recordSize: 17)) {
            XCTAssertEqual(($0 as? WebPushError)?.field, "recordSize")
        }
        XCTAssertThrowsError(try WebPushContentCoding.encrypt(plaintext: walrus, ikm: ikm, salt: [UInt8](repeating: 0, count: 16),
                                                              keyID: [UInt8](repeating: 0, count: 256))) {
            XCTAssertEqual(($0 as? WebPushError)?.field, "keyID")
        }
    }
}
