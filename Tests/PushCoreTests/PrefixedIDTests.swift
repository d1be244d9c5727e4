import Foundation
import XCTest
import PushCore

/// R-API-4: prefix + the UUID's 32 lower-case hex digits without dashes; anything else is no id.
final class PrefixedIDTests: XCTestCase {
    func testFormatAndParseRoundTrip() {
        let id = UUID(uuidString: "0F8FAD5B-D9CB-469F-A165-70867728950E")!
        XCTAssertEqual(PrefixedID.format(.device, id), "pdev_0f8fad5bd9cb469fa16570867728950e")
        for kind in IDKind.allCases {
            let text = PrefixedID.format(kind, id)
            XCTAssertEqual(PrefixedID.parse(text, as: kind), id)
        }
        XCTAssertEqual(IDKind.allCases.map(\.rawValue), ["pdev", "papp", "pnot", "pacc", "pkey", "pevt", "pwh", "paud"])
    }

    func testMalformedIdsParseToNil() {
        let good = "pevt_0f8fad5bd9cb469fa16570867728950e"
        XCTAssertNil(PrefixedID.parse(good, as: .device), "another type's prefix")
        XCTAssertNil(PrefixedID.parse(good.uppercased(), as: .event), "upper case")
        XCTAssertNil(PrefixedID.parse("pevt_0F8FAD5BD9CB469FA16570867728950E", as: .event), "upper-case hex")
        XCTAssertNil(PrefixedID.parse(String(good.dropLast()), as: .event), "31 digits")
        XCTAssertNil(PrefixedID.parse(good + "0", as: .event), "33 digits")
        XCTAssertNil(PrefixedID.parse("pevt_0f8fad5b-d9cb-469f-a165-70867728950e", as: .event), "dashes")
        XCTAssertNil(PrefixedID.parse("pevt_0f8fad5bd9cb469fa16570867728950g", as: .event), "not hex")
        XCTAssertNil(PrefixedID.parse("0f8fad5b-d9cb-469f-a165-70867728950e", as: .event), "a plain UUID is not an API id")
        XCTAssertEqual(PrefixedID.parseLenient("0F8FAD5B-D9CB-469F-A165-70867728950E", as: .event),
                       UUID(uuidString: "0F8FAD5B-D9CB-469F-A165-70867728950E"), "operators' tools accept plain UUIDs")
    }

    func testRFC3339MillisecondsInUTC() {
        XCTAssertEqual(RFC3339.utcMilliseconds(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(RFC3339.utcMilliseconds(Date(timeIntervalSince1970: 951_782_400.5)), "2000-02-29T00:00:00.500Z")
        XCTAssertEqual(RFC3339.utcMilliseconds(Date(timeIntervalSince1970: -0.001)), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(RFC3339.utcMilliseconds(Date(timeIntervalSince1970: 4_102_444_799.999)), "2099-12-31T23:59:59.999Z")
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for t in stride(from: 0.0, to: 4e9, by: 86_399_123.457) {
            XCTAssertEqual(RFC3339.utcMilliseconds(Date(timeIntervalSince1970: t)).prefix(19),
                           f.string(from: Date(timeIntervalSince1970: t)).prefix(19), "\(t)")
        }
    }
}
