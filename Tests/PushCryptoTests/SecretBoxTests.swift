import XCTest
import PushCrypto

/// AES-256-GCM boxes for credentials at rest (R-APP-3 credentials are stored sealed).
final class SecretBoxTests: XCTestCase {
    private func assertOpenFailed(_ box: [UInt8], key: [UInt8], aad: [UInt8] = [], _ note: String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try SecretBox.open(box, key: key, aad: aad), note, file: file, line: line) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .openFailed, "\(note): \(error)", file: file, line: line)
        }
    }

    func testSealThenOpenRoundTripsWithNonceCiphertextTagLayout() throws {
        let key = try SecretBox.generateKey()
        XCTAssertEqual(key.count, 32)
        for plaintext in [[], Array("-----BEGIN PRIVATE KEY-----".utf8), [UInt8](repeating: 7, count: 5000)] {
            let box = try SecretBox.seal(plaintext: plaintext, key: key)
            XCTAssertEqual(box.count, plaintext.count + 12 + 16)
            XCTAssertEqual(try SecretBox.open(box, key: key), plaintext)
        }
    }

    func testEachSealUsesAFreshNonce() throws {
        let key = try SecretBox.generateKey()
        let a = try SecretBox.seal(plaintext: [1, 2, 3], key: key)
        let b = try SecretBox.seal(plaintext: [1, 2, 3], key: key)
        XCTAssertNotEqual(Array(a.prefix(12)), Array(b.prefix(12)))
        XCTAssertNotEqual(a, b)
    }

    func testTamperingAnyPartFailsWithOpenFailed() throws {
        let key = try SecretBox.generateKey()
        let box = try SecretBox.seal(plaintext: Array("service-account".utf8), key: key, aad: Array("app-1".utf8))
        for index in [0, 11, 12, box.count - 17, box.count - 16, box.count - 1] {
            var tampered = box
            tampered[index] ^= 0x80
            assertOpenFailed(tampered, key: key, aad: Array("app-1".utf8), "flip at \(index)")
        }
        assertOpenFailed(box, key: key, aad: Array("app-2".utf8), "other aad")
        assertOpenFailed(box, key: try SecretBox.generateKey(), aad: Array("app-1".utf8), "other key")
        assertOpenFailed(Array(box.prefix(27)), key: key, "shorter than overhead")
        assertOpenFailed(Array(box.dropLast()), key: key, aad: Array("app-1".utf8), "truncated tag")
    }

    func testKeyMustBe32Bytes() {
        for length in [0, 16, 31, 33] {
            let key = [UInt8](repeating: 1, count: length)
            XCTAssertThrowsError(try SecretBox.seal(plaintext: [1], key: key)) { error in
                XCTAssertEqual((error as? CryptoError)?.code, .invalidKeyLength)
            }
            XCTAssertThrowsError(try SecretBox.open([UInt8](repeating: 0, count: 40), key: key)) { error in
                XCTAssertEqual((error as? CryptoError)?.code, .invalidKeyLength)
            }
        }
    }
}
