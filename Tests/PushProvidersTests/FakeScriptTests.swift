import Foundation
import PushTestSupport
import XCTest

/// Runs the fakes' own Python self-tests, so that a change to `scripts/fakes` that breaks them fails
/// `scripts/test` (issue 18: the fake's byte-table HPACK Huffman decoder must decode exactly as the
/// `hpack` library does, or the fake would see other headers than the client sent).
final class FakeScriptTests: XCTestCase {
    func testFastHpackDecoderMatchesTheLibrary() throws {
        let process = Process()
        let python = RepoPaths.fakesPython()
        process.executableURL = URL(fileURLWithPath: python[0])
        process.arguments = Array(python.dropFirst()) + [RepoPaths.fakesDirectory + "/test_fast_hpack.py"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("OK"), text)
        XCTAssertTrue(text.contains("Ran 3 tests"), text)
    }
}
