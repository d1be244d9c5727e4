import XCTest
@testable import PushCrypto

final class Base64URLTests: XCTestCase {
    /// RFC 4648 §10 test vectors, unpadded and with the url-safe alphabet.
    func testRFC4648VectorsRoundTripWithoutPadding() {
        let cases: [(String, String)] = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"),
                                         ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in cases {
            XCTAssertEqual(Base64URL.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8))
            XCTAssertEqual(Base64URL.encodedLength(plain.utf8.count), encoded.count)
        }
    }

    func testUsesURLSafeAlphabet() {
        XCTAssertEqual(Base64URL.encode([0xfb, 0xff, 0xbf]), "-_-_")
        XCTAssertEqual(Base64URL.decode("-_-_"), [0xfb, 0xff, 0xbf])
    }

    /// R-SEND-7: an unpadded base64url length is never 4k+1.
    func testRejectsImpossibleLengthsAndForeignCharacters() {
        XCTAssertNil(Base64URL.decode("Zm9vY"))
        XCTAssertNil(Base64URL.decode("Zm9v+g"))
        XCTAssertNil(Base64URL.decode("Zm9v/g"))
        XCTAssertNil(Base64URL.decode("Zh"), "non-zero trailing bits")
        for n in 0..<200 { XCTAssertNotEqual(Base64URL.encodedLength(n) % 4, 1) }
    }
}
