import XCTest
@testable import PushCore
import PushCrypto

/// R-ENC-9 escaping and compact output.
final class JSONWriterTests: XCTestCase {
    private func quoted(_ s: String) -> String {
        var out = [UInt8]()
        JSONWriter.appendString(s, to: &out)
        XCTAssertEqual(out.count, JSONWriter.quotedLength(s), "quotedLength must match the written length")
        return out.text
    }

    func testEscapesOnlyQuoteBackslashAndControlCharacters() {
        XCTAssertEqual(quoted(#"a"b"#), #""a\"b""#)
        XCTAssertEqual(quoted(#"a\b"#), #""a\\b""#)
        XCTAssertEqual(quoted("plain ascii ~!@#$%^&*()"), "\"plain ascii ~!@#$%^&*()\"")
    }

    func testUsesShortFormsForBackspaceFormFeedNewlineReturnTab() {
        XCTAssertEqual(quoted("\u{08}\u{0C}\n\r\t"), #""\b\f\n\r\t""#)
    }

    func testOtherControlCharactersUseLowercaseUnicodeEscapes() {
        XCTAssertEqual(quoted("\u{00}\u{01}\u{0B}\u{1F}\u{1b}"), #""\u0000\u0001\u000b\u001f\u001b""#)
    }

    func testNeverEscapesSlashDeleteOrNonASCII() {
        XCTAssertEqual(quoted("https://x/y"), "\"https://x/y\"")
        XCTAssertEqual(quoted("\u{7F}"), "\"\u{7F}\"")
        let unicode = "café – 日本 🎉 \u{2028}\u{2029}"
        XCTAssertEqual(quoted(unicode), "\"\(unicode)\"")
        XCTAssertEqual(Array(quoted(unicode).utf8).count, unicode.utf8.count + 2, "raw UTF-8, no \\u escapes")
    }

    func testEmptyString() {
        XCTAssertEqual(quoted(""), "\"\"")
    }

    func testWritesCompactValuesInOrderWithNumbersVerbatim() {
        let value = JSONValue.object(JSONObject([
            .init("z", .number("1.50")), .init("a", .array([.null, .bool(true), .bool(false), .number("-0"), .number("1e3")])),
            .init("m", .object(JSONObject())), .init("s", .string("x/y")), .init("e", .array([])),
        ]))
        XCTAssertEqual(JSONWriter.string(value), #"{"z":1.50,"a":[null,true,false,-0,1e3],"m":{},"s":"x/y","e":[]}"#)
    }

    func testRoundTripOfClientTextKeepsKeyOrderAndNumberText() throws {
        let text = #"{ "b" : 1.0 , "a":[1, 2E+5, -3.25e-2], "c":{"y":null,"x":"\/\u00e9\n"} }"#
        let value = try JSONParser.parse(text)
        XCTAssertEqual(JSONWriter.string(value), #"{"b":1.0,"a":[1,2E+5,-3.25e-2],"c":{"y":null,"x":"/é\n"}}"#)
    }

    func testLongStringsWithEscapesAtBothEnds() {
        let middle = String(repeating: "abc", count: 1000)
        XCTAssertEqual(quoted("\"" + middle + "\n"), "\"\\\"" + middle + "\\n\"")
    }
}

/// The envelope's base64url fast path agrees with PushCrypto's Base64URL for every length and byte.
final class Base64URLWriterTests: XCTestCase {
    func testMatchesPushCryptoBase64URLForManyInputs() {
        var rng = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var out: [UInt8] = [0x7b]
            Base64URLWriter.append(bytes, to: &out)
            XCTAssertEqual(Array(out.dropFirst()).text, Base64URL.encode(bytes), "length \(length)")
        }
        var all = [UInt8]()
        Base64URLWriter.append(Array(0...255), to: &all)
        XCTAssertEqual(all.text, Base64URL.encode(Array(0...255) as [UInt8]))
    }
}
