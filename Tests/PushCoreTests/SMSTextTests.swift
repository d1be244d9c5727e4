import Foundation
import XCTest
@testable import PushCore

/// R-SMS-1 at acceptance: the E.164 form of the phone number and the segment count of the text
/// (3GPP TS 23.038 alphabets, TS 23.040 concatenation).
final class SMSTextTests: XCTestCase {
    func testE164IsAPlusAndEightToFifteenDigitsNotStartingWithZero() {
        for ok in ["+15005550006", "+33612345678", "+12345678", "+123456789012345", "+447700900123"] {
            XCTAssertTrue(SMSText.isE164(ok), ok)
        }
        for bad in ["", "+", "15005550006", "+1234567", "+1234567890123456", "+05005550006", "+1 500 555 0006",
                    "+1-500-555-0006", "+1(500)5550006", "++15005550006", "+1500555000a", " +15005550006",
                    "+15005550006\n", "+١٢٣٤٥٦٧٨٩", "+１２３４５６７８９", "tel:+15005550006"] {
            XCTAssertFalse(SMSText.isE164(bad), bad.debugDescription)
        }
    }

    func testTextIsOneToSixteenHundredCharactersWithoutNUL() {
        XCTAssertNil(SMSText.textProblem("a"))
        XCTAssertNil(SMSText.textProblem(String(repeating: "é", count: 1_600)))
        XCTAssertNil(SMSText.textProblem(String(repeating: "😀", count: 1_600)))
        XCTAssertNotNil(SMSText.textProblem(""))
        XCTAssertNotNil(SMSText.textProblem(String(repeating: "a", count: 1_601)))
        XCTAssertNotNil(SMSText.textProblem("a\u{0}b"))
    }

    func testGSMTextsTake160SeptetsInOnePartAnd153PerPartAfter() {
        XCTAssertEqual(SMSSegments(""), SMSSegments(encoding: .gsm7, count: 0, units: 0))
        XCTAssertEqual(SMSSegments("Your code is 123456"), SMSSegments(encoding: .gsm7, count: 1, units: 19))
        XCTAssertEqual(SMSSegments(String(repeating: "a", count: 160)).count, 1)
        XCTAssertEqual(SMSSegments(String(repeating: "a", count: 161)).count, 2)
        XCTAssertEqual(SMSSegments(String(repeating: "a", count: 306)).count, 2)
        XCTAssertEqual(SMSSegments(String(repeating: "a", count: 307)).count, 3)
        XCTAssertEqual(SMSSegments(String(repeating: "a", count: 1_600)), SMSSegments(encoding: .gsm7, count: 11, units: 1_600))
    }

    func testEveryCharacterOfTheGSMDefaultAlphabetStaysGSM() {
        let alphabet = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
            + "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
        XCTAssertEqual(alphabet.unicodeScalars.count, 127)   // 128 codes less the escape
        let m = SMSSegments(alphabet)
        XCTAssertEqual(m.encoding, .gsm7)
        XCTAssertEqual(m.units, 127)
    }

    func testExtensionCharactersTakeTwoSeptetsAndAreNeverSplit() {
        let ext = "^{}\\[~]|€\u{0C}"
        XCTAssertEqual(SMSSegments(ext), SMSSegments(encoding: .gsm7, count: 1, units: 20))
        XCTAssertEqual(SMSSegments(String(repeating: "€", count: 80)).count, 1)       // 160 septets
        XCTAssertEqual(SMSSegments(String(repeating: "€", count: 81)).count, 2)       // 162 septets
        // 152 septets then an escape pair: it goes whole into the second part.
        let edge = String(repeating: "a", count: 152) + "€" + String(repeating: "a", count: 10)
        XCTAssertEqual(SMSSegments(edge), SMSSegments(encoding: .gsm7, count: 2, units: 164))
        let split = String(repeating: "a", count: 152) + "€" + String(repeating: "a", count: 152)
        XCTAssertEqual(SMSSegments(split).count, 3)   // 152 | 2 + 151 | 1: a part never ends half-way through €
        XCTAssertEqual(SMSSegments(String(repeating: "a", count: 153) + "€" + String(repeating: "a", count: 151)).count, 2)
    }

    func testOneCharacterOutsideGSMMakesTheWholeTextUCS2() {
        XCTAssertEqual(SMSSegments("Votre code : 123456 ✓"), SMSSegments(encoding: .ucs2, count: 1, units: 21))
        XCTAssertEqual(SMSSegments("`").encoding, .ucs2)           // the backtick is not in the GSM alphabet
        XCTAssertEqual(SMSSegments("ç").encoding, .ucs2)           // lower-case c cedilla is not either (Ç is)
        XCTAssertEqual(SMSSegments(String(repeating: "é", count: 200) + "ć").count, 3)   // 201 units: 67 + 67 + 67
        XCTAssertEqual(SMSSegments(String(repeating: "ж", count: 70)).count, 1)
        XCTAssertEqual(SMSSegments(String(repeating: "ж", count: 71)).count, 2)
        XCTAssertEqual(SMSSegments(String(repeating: "ж", count: 134)).count, 2)
        XCTAssertEqual(SMSSegments(String(repeating: "ж", count: 135)).count, 3)
    }

    func testSurrogatePairsCountTwoUnitsAndAreNeverSplit() {
        XCTAssertEqual(SMSSegments("😀"), SMSSegments(encoding: .ucs2, count: 1, units: 2))
        XCTAssertEqual(SMSSegments(String(repeating: "😀", count: 35)).count, 1)   // 70 units
        XCTAssertEqual(SMSSegments(String(repeating: "😀", count: 36)).count, 2)   // 72 units: 66 | 6
        // 66 units, then a pair that does not fit the part's 67th unit.
        let edge = String(repeating: "ж", count: 66) + "😀" + String(repeating: "ж", count: 3)
        XCTAssertEqual(SMSSegments(edge), SMSSegments(encoding: .ucs2, count: 2, units: 71))
        XCTAssertEqual(SMSSegments(String(repeating: "ж", count: 66) + "😀" + String(repeating: "ж", count: 66)).count, 3)
    }
}
