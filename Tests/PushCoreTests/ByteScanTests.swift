import PushCore
import XCTest

/// `String.containsUTF8Byte` (the record path's NUL guard before PostgreSQL text, and the test-mode
/// simulator's endpoint check) answers what the generic `utf8.contains` answers, at every position.
final class ByteScanTests: XCTestCase {
    func testAgreesWithTheGenericScanAtEveryPosition() {
        XCTAssertFalse("".containsUTF8Byte(0))
        for length in [1, 2, 15, 16, 17, 64, 600, 1_100] {
            let plain = String(repeating: "a", count: length)
            XCTAssertFalse(plain.containsUTF8Byte(0), "\(length)")
            for at in Set([0, length / 2, length - 1]) {
                var bytes = Array(plain.utf8)
                bytes[at] = 0
                let s = String(decoding: bytes, as: UTF8.self)
                XCTAssertTrue(s.containsUTF8Byte(0), "NUL at \(at) of \(length)")
                XCTAssertEqual(s.containsUTF8Byte(0), s.utf8.contains(0))
            }
        }
        let token = "https://push.example/send/abc"
        XCTAssertTrue(token.containsUTF8Byte(UInt8(ascii: "/")))
        XCTAssertFalse(String(repeating: "f0", count: 32).containsUTF8Byte(UInt8(ascii: "/")))
        XCTAssertFalse("é中🙂".containsUTF8Byte(0), "multi-byte scalars hold no zero byte")
        XCTAssertTrue("é中🙂".containsUTF8Byte(0xF0), "the emoji's first byte")
        let substringCopy = String("xx\u{0}yy".dropFirst())
        XCTAssertTrue(substringCopy.containsUTF8Byte(0))
    }
}
