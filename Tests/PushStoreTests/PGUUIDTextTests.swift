import Foundation
import XCTest
@testable import PushStore

/// `PGUUIDText` must agree with Foundation byte for byte: the canonical lower-case form out
/// (what PostgreSQL prints and APNs `apns-id` uses), and the canonical form in, either case.
final class PGUUIDTextTests: XCTestCase {
    func testFormatMatchesFoundationLowercasedForRandomAndEdgeUUIDs() {
        var samples = (0..<500).map { _ in UUID() }
        samples.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        samples.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        for u in samples {
            XCTAssertEqual(PGUUIDText.format(u), u.uuidString.lowercased())
            XCTAssertEqual(PGUUIDText.parse(PGUUIDText.format(u)), u)
            XCTAssertEqual(PGUUIDText.parse(u.uuidString), u, "upper case is accepted too")
        }
    }

    func testParseRejectsExactlyWhatFoundationRejects() {
        let good = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let cases = [good, good.uppercased(), "", "0f8fad5bd9cb469fa16570867728950e", good + "0", String(good.dropLast()),
                     "0f8fad5b-d9cb-469f-a165-70867728950g", "0f8fad5b_d9cb-469f-a165-70867728950e",
                     "0f8fad5-bd9cb-469f-a165-70867728950e", "{0f8fad5b-d9cb-469f-a165-70867728950}",
                     "0f8fad5b-d9cb-469f-a165-70867728950é"]
        for text in cases {
            XCTAssertEqual(PGUUIDText.parse(text), UUID(uuidString: text), "input \(text)")
        }
        // Foundation's sscanf-based parser skips leading blanks; PostgreSQL never prints them, and
        // a stray blank means a corrupt value, so the canonical parser refuses it.
        XCTAssertNil(PGUUIDText.parse(" 0f8fad5b-d9cb-469f-a165-70867728950"))
    }
}
