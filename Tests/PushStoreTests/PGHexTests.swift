import XCTest
@testable import PushStore

/// `PGHex.append`, the one hex writer of bytea values (the batch record's payloads, `PGValue.bytea`
/// and bytea array literals): two lower-case digits per byte, after what the buffer held.
final class PGHexTests: XCTestCase {
    func testEveryByteValueAfterExistingContent() {
        let bytes = (0...255).map(UInt8.init) + [0xab, 0x00, 0xff]
        var out = Array("pre:".utf8)
        PGHex.append(bytes, to: &out)
        let expected = "pre:" + bytes.map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(String(decoding: out, as: UTF8.self), expected)
        var empty = Array("x".utf8)
        PGHex.append([], to: &empty)
        XCTAssertEqual(empty, Array("x".utf8))
    }

    func testTheWritersThatShareIt() throws {
        XCTAssertEqual(try PGValue.bytea([0x0a, 0xf0]).encoded(), "\\x0af0")
        XCTAssertEqual(try PGValue.byteaArray([[0x01], nil, []]).encoded(), #"{"\\x01",NULL,"\\x"}"#)
        var w = RecordJSON.Writer()
        w.begin()
        w.hex("payload", [0x7b, 0x00, 0xff])
        w.end()
        XCTAssertEqual(String(decoding: w.out, as: UTF8.self), #"{"payload":"\\x7b00ff"}"#)
    }
}
