@testable import PushProviders
import XCTest

/// The byte-level response header handling of `CurlEasy` (issue 18): status lines, names
/// lower-cased, values trimmed, first value wins, lines without a colon skipped.
final class ResponseHeaderParserTests: XCTestCase {
    private func status(_ line: String) -> Int? {
        Array(line.utf8).withUnsafeBytes { ResponseHeaderParser.statusCode($0) }
    }

    private func parse(_ lines: [String]) -> [String: String] {
        var buffer = ByteBuffer(capacity: 16)
        defer { buffer.deallocate() }
        for line in lines {
            buffer.append(line)
            buffer.append(UInt8(ascii: "\n"))
        }
        return ResponseHeaderParser.parse(buffer)
    }

    func testStatusLines() {
        XCTAssertEqual(status("HTTP/2 200"), 200)
        XCTAssertEqual(status("HTTP/1.1 404 Not Found"), 404)
        XCTAssertEqual(status("HTTP/2  503"), 503)
        XCTAssertEqual(status("HTTP/2 20"), 0, "not three digits")
        XCTAssertNil(status("apns-id: HTTP/2 200"))
        XCTAssertNil(status("HTTP"))
    }

    func testFieldsAreLowerCasedTrimmedAndTheFirstValueWins() {
        let headers = parse(["Apns-ID:  abc \t", "retry-after:7", "apns-id: second", "no colon here", ":bad", "x-empty:"])
        XCTAssertEqual(headers["apns-id"], "abc")
        XCTAssertEqual(headers["retry-after"], "7")
        XCTAssertEqual(headers["x-empty"], "")
        XCTAssertEqual(headers.count, 3, "\(headers)")
    }

    func testByteBufferGrowsAndKeepsItsContent() {
        var buffer = ByteBuffer(capacity: 16)
        defer { buffer.deallocate() }
        let text = String(repeating: "0123456789", count: 50)
        buffer.append(text)
        buffer.append([1, 2, 3])
        XCTAssertEqual(buffer.count, 503)
        XCTAssertEqual(Array(buffer.bytes.prefix(10)), Array("0123456789".utf8))
        XCTAssertEqual(Array(buffer.bytes.suffix(3)), [1, 2, 3])
        buffer.count = 0
        buffer.append("x")
        XCTAssertEqual(Array(buffer.bytes), [UInt8(ascii: "x")])
    }
}
