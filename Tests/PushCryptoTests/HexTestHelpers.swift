import Foundation
import XCTest
import PushCrypto

/// Hex helpers for vectors.
enum Hex {
    struct Invalid: Error {}

    static func decode(_ text: String) throws -> [UInt8] {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { throw Invalid() }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { throw Invalid() }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func encode(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Decodes base64url or fails the test with a message.
func base64URLBytes(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
    try XCTUnwrap(Base64URL.decode(text), "not base64url: \(text.prefix(12))…", file: file, line: line)
}
