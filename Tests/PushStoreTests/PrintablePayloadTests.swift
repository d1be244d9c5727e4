import Foundation
import XCTest
import PushCrypto
@testable import PushStore

/// `NotificationStore.printable`: how a stored test payload is shown (`notifications show`). Text
/// only when every byte is UTF-8 text; a binary body (a Web Push aes128gcm record) in full.
final class PrintablePayloadTests: XCTestCase {
    func testTextStaysTextAndBinaryIsBase64URLInFull() {
        XCTAssertEqual(NotificationStore.printable(Array(#"{"aps":{"alert":"é"}}"#.utf8)), #"{"aps":{"alert":"é"}}"#)
        // A salt starting with 0x00 and the record size's NUL at byte 16 (the aes128gcm header, RFC
        // 8188 section 2.1): read as a C string, this was "" (1 run in 256 of a random salt).
        let header: [UInt8] = [0x00] + Array(repeating: 0x41, count: 15) + [0x00, 0x00, 0x10, 0x00, 0x41]
        XCTAssertEqual(NotificationStore.printable(header), "base64url:" + Base64URL.encode(header))
        let textThenNUL = Array("abc".utf8) + [0x00, 0xff]
        XCTAssertEqual(NotificationStore.printable(textThenNUL), "base64url:" + Base64URL.encode(textThenNUL))
        XCTAssertEqual(NotificationStore.printable([0xc3]), "base64url:ww", "a cut UTF-8 sequence")
        XCTAssertEqual(NotificationStore.printable(Array("a\nb".utf8)), "base64url:YQpi", "control characters")
    }
}
