import Foundation
import XCTest
@testable import PushStore

/// The queue's array parsers (`PGArrayText.uuids`, `PGArrayText.strings`) read what PostgreSQL
/// prints, byte for byte: checked against the server's own output of `uuid[]` and `text[]` values,
/// nasty strings included, and against malformed input.
final class PGArrayParsingTests: PGTestCase {
    func testUUIDArraysPrintedByPostgreSQLParseBackExactly() throws {
        for count in [0, 1, 2, 17, 500] {
            let ids = (0..<count).map { _ in UUID() }
            let r = try conn.exec("SELECT $1::uuid[]::text AS v", [.uuidArray(ids)])
            XCTAssertEqual(try PGArrayText.uuids(try r.string(0, "v")), ids, "\(count) elements")
        }
    }

    func testTheUUIDFastPathRefusesWhatIsNotAPlainUUIDArray() throws {
        let u = UUID().uuidString.lowercased()
        for text in ["{\(u)", "\(u)}", "{\(u),}", "{,\(u)}", "{\(u);\(u)}", "{\(u.dropLast())x}", "{ \(u)}"] {
            var t = text
            XCTAssertNil(t.withUTF8 { PGUUIDText.parseArray(bytes: $0) }, text)
            XCTAssertThrowsError(try PGArrayText.uuids(text), text)
        }
        XCTAssertEqual(try PGArrayText.uuids("{\"\(u)\"}"), [UUID(uuidString: u)!],
                       "a quoted element goes to the general parser")
        var upper = "{\(u.uppercased())}"
        XCTAssertEqual(upper.withUTF8 { PGUUIDText.parseArray(bytes: $0) }, [UUID(uuidString: u)!])
    }

    func testTextArraysPrintedByPostgreSQLParseBackExactly() throws {
        let strings = PGRoundTripTests.nastyStrings.filter { $0.utf8.count < 1000 && !$0.contains("\u{0}") }
        let r = try conn.exec("SELECT $1::text[]::text AS v", [.textArray(strings)])
        XCTAssertEqual(try PGArrayText.strings(try r.string(0, "v")), strings)
        XCTAssertEqual(try PGArrayText.strings("{}"), [])
        XCTAssertThrowsError(try PGArrayText.strings("a,b"))
        XCTAssertThrowsError(try PGArrayText.strings("{"))
    }
}
