import XCTest
@testable import PushCore

/// The `data` parser: strict JSON, order kept, typed INVALID_DATA errors (R-SEND-1, R-ENC-9).
final class JSONParserTests: XCTestCase {
    private func assertInvalid(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try JSONParser.parseDataObject(text), "accepted: \(text)", file: file, line: line) { error in
            XCTAssertEqual((error as? PushError)?.code, .invalidData, file: file, line: line)
        }
    }

    func testDataObjectKeepsClientKeyOrder() throws {
        let object = try JSONParser.parseDataObject(#"{"zeta":"1","alpha":{"k2":2,"k1":1},"mid":[3]}"#)
        XCTAssertEqual(object.members.map(\.key), ["zeta", "alpha", "mid"])
        guard case .object(let inner)? = object["alpha"] else { return XCTFail("alpha is not an object") }
        XCTAssertEqual(inner.members.map(\.key), ["k2", "k1"])
        XCTAssertEqual(object["mid"], .array([.number("3")]))
    }

    func testDataMustBeAnObject() {
        for text in ["[]", "\"text\"", "1", "null", "true"] { assertInvalid(text) }
    }

    func testRefusesMalformedJSON() {
        let bad = ["", " ", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{'a':1}", "{\"a\":01}", "{\"a\":1.}",
                   "{\"a\":.5}", "{\"a\":1e}", "{\"a\":-}", "{\"a\":+1}", "{\"a\":tru}", "{\"a\":nul}",
                   "{\"a\":\"x}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":1} x", "{\"a\":[1,]}",
                   "{\"a\":NaN}", "{\"a\":\"\u{01}\"}", "{\"a\":\"line\nbreak\"}"]
        for text in bad { assertInvalid(text) }
    }

    func testRefusesDuplicateKeys() {
        assertInvalid(#"{"a":1,"a":2}"#)
        assertInvalid(#"{"o":{"k":1,"k":1}}"#)
    }

    func testRefusesLoneSurrogates() {
        assertInvalid(#"{"a":"\ud83d"}"#)
        assertInvalid(#"{"a":"\ude00"}"#)
        assertInvalid(#"{"a":"\ud83d\u0041"}"#)
    }

    func testDecodesEscapesAndSurrogatePairs() throws {
        let object = try JSONParser.parseDataObject(#"{"s":"\"\\\/\b\f\n\r\t\u00e9\ud83c\udf89"}"#)
        XCTAssertEqual(object["s"], .string("\"\\/\u{08}\u{0C}\n\r\t\u{E9}\u{1F389}"))
    }

    func testKeepsNumberTextExactly() throws {
        let object = try JSONParser.parseDataObject(#"{"a":0,"b":-0.0,"c":12345678901234567890123,"d":1E-7,"e":2.50}"#)
        XCTAssertEqual(object.members.map(\.value), [.number("0"), .number("-0.0"), .number("12345678901234567890123"),
                                                      .number("1E-7"), .number("2.50")])
    }

    func testAcceptsWhitespaceAroundTokens() throws {
        let object = try JSONParser.parseDataObject(" \t\r\n{ \"a\" :\n[ 1 , { } ] }\n ")
        XCTAssertEqual(object["a"], .array([.number("1"), .object(JSONObject())]))
    }

    func testRefusesNestingDeeperThanLimit() throws {
        let ok = String(repeating: "[", count: JSONParser.maxDepth - 1) + String(repeating: "]", count: JSONParser.maxDepth - 1)
        XCTAssertNoThrow(try JSONParser.parseDataObject("{\"a\":\(ok)}"))
        let deep = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        assertInvalid("{\"a\":\(deep)}")
    }

    func testRefusesInvalidUTF8Bytes() {
        XCTAssertThrowsError(try JSONParser.parse(utf8: [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])) { error in
            XCTAssertEqual((error as? PushError)?.code, .invalidData)
        }
        XCTAssertEqual(try JSONParser.parse(utf8: Array(#"{"a":"é"}"#.utf8)),
                       .object(JSONObject([.init("a", .string("é"))])))
    }

    func testErrorMessageNamesTheOffsetNotTheContent() {
        XCTAssertThrowsError(try JSONParser.parseDataObject(#"{"secret":"value",}"#)) { error in
            let message = (error as? PushError)?.message ?? ""
            XCTAssertTrue(message.contains("byte"), message)
            XCTAssertFalse(message.contains("secret"), message)
        }
    }
}
