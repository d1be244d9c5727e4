import XCTest
@testable import PushStore

/// Parameter text forms, checked without a server (the round trips are in PGRoundTripTests).
final class PGValueEncodingTests: XCTestCase {
    func testArrayLiteralQuotesEveryElementAndEscapesQuotesAndBackslashes() throws {
        let literal = try PGValue.textArray(["a", "b\"c", "d\\e", "x,y", "{z}", " s "]).encoded()
        XCTAssertEqual(literal, #"{"a","b\"c","d\\e","x,y","{z}"," s "}"#)
    }

    func testArrayLiteralWritesNilAsBareNullAndKeepsNullTextAndEmptyStringQuoted() throws {
        XCTAssertEqual(try PGValue.textArray([nil, "NULL", ""]).encoded(), #"{NULL,"NULL",""}"#)
        XCTAssertEqual(try PGValue.textArray([]).encoded(), "{}")
        XCTAssertEqual(try PGValue.int64Array([1, nil, -9_223_372_036_854_775_808]).encoded(),
                       #"{"1",NULL,"-9223372036854775808"}"#)
        XCTAssertEqual(try PGValue.boolArray([true, false, nil]).encoded(), #"{"t","f",NULL}"#)
    }

    func testByteaIsLowerCaseHexAfterBackslashX() throws {
        XCTAssertEqual(try PGValue.bytea([0x00, 0xAB, 0x7f, 0xff]).encoded(), #"\x00ab7fff"#)
        XCTAssertEqual(try PGValue.bytea([]).encoded(), #"\x"#)
        // Inside an array the element's backslash is escaped once more.
        XCTAssertEqual(try PGValue.byteaArray([[0x01], nil, []]).encoded(), #"{"\\x01",NULL,"\\x"}"#)
    }

    func testByteaArrayLiteralIsTheGeneralLiteralOfEachElementsHexForm() throws {
        for _ in 0..<200 {
            let elements: [[UInt8]?] = (0..<Int.random(in: 0...6)).map { _ in
                Bool.random() && Bool.random() ? nil : (0..<Int.random(in: 0...40)).map { _ in UInt8.random(in: 0...255) }
            }
            XCTAssertEqual(PGValue.byteaArrayLiteral(elements), PGValue.arrayLiteral(elements.map { $0.map(PGValue.hex) }))
        }
    }

    func testTextHoldingNulByteIsRefusedWithEncodeError() {
        for value in [PGValue.text("a\u{0}b"), .textArray(["ok", "bad\u{0}"])] {
            XCTAssertThrowsError(try value.encoded()) { error in
                XCTAssertEqual((error as? PGError)?.code, .encode)
            }
        }
    }

    func testDateIsISO8601UTCWithSixFractionDigits() throws {
        XCTAssertEqual(try PGValue.date(Date(timeIntervalSince1970: 0)).encoded(), "1970-01-01T00:00:00.000000Z")
        XCTAssertEqual(try PGValue.date(Date(timeIntervalSince1970: 0.000001)).encoded(), "1970-01-01T00:00:00.000001Z")
        XCTAssertEqual(try PGValue.date(Date(timeIntervalSince1970: -0.5)).encoded(), "1969-12-31T23:59:59.500000Z")
        XCTAssertEqual(try PGValue.date(Date(timeIntervalSince1970: 1_795_868_168.123456)).encoded(),
                       "2026-11-28T12:16:08.123456Z")
        XCTAssertEqual(try PGValue.date(Date(timeIntervalSince1970: 951_782_400)).encoded(), "2000-02-29T00:00:00.000000Z")
    }

    func testDoubleSpecialValuesUsePostgresSpelling() throws {
        XCTAssertEqual(try PGValue.double(.infinity).encoded(), "Infinity")
        XCTAssertEqual(try PGValue.double(-.infinity).encoded(), "-Infinity")
        XCTAssertEqual(try PGValue.double(.nan).encoded(), "NaN")
        XCTAssertEqual(try PGValue.double(0.1).encoded(), "0.1")
    }

    func testLiteralsMapToTextIntBoolDouble() {
        let values: [PGValue?] = ["x", 7, true, 2.5, nil]
        XCTAssertEqual(values, [.text("x"), .int(7), .bool(true), .double(2.5), nil])
        for scalar in [PGValue.text("x"), .int(1), .int64(1), .bool(true), .double(1), .date(Date()), .uuid(UUID()), .bytea([])] {
            XCTAssertEqual(scalar.typeOID, 0, "scalars go untyped: the server types them from context")
        }
        XCTAssertEqual(PGValue.uuidArray([]).typeOID, 2951)
    }

    func testTimestampParserReadsOffsetsFractionsDatesAndBC() throws {
        func micros(_ s: String) -> Int64? { PGTimestamp.parseMicroseconds(s) }
        XCTAssertEqual(micros("1970-01-01 00:00:00+00"), 0)
        XCTAssertEqual(micros("1970-01-01 05:30:00+05:30"), 0)
        XCTAssertEqual(micros("1969-12-31 23:00:00-01"), 0)
        XCTAssertEqual(micros("1970-01-01 00:00:00.5+00"), 500_000)
        XCTAssertEqual(micros("1970-01-01T00:00:00.000001Z"), 1)
        XCTAssertEqual(micros("1970-01-02"), 86_400_000_000)
        XCTAssertEqual(micros("1970-01-01 00:00:00"), 0, "no offset is read as UTC")
        XCTAssertEqual(micros("1970-01-01 00:00:00+00:00:10"), -10_000_000)
        XCTAssertNotNil(micros("0044-03-15 12:00:00+00 BC"))
        XCTAssertLessThan(micros("0001-01-01 00:00:00+00 BC")!, micros("0001-01-01 00:00:00+00")!)
        for bad in ["", "infinity", "-infinity", "2026-13-01", "2026-01-01 25:00", "2026-01-01 10:00:00+", "garbage"] {
            XCTAssertNil(micros(bad), bad)
        }
    }

    /// PostgreSQL's infinities read as the distant dates, and dates beyond its range (or not
    /// finite) are written as them, never trapping the microsecond conversion (issue 13:
    /// `pushfleet send --send-at +1e300s` crashed in `PGTimestamp.microseconds`).
    func testInfinitiesReadAsDistantDatesAndFarDatesAreWrittenAsInfinity() throws {
        XCTAssertEqual(PGTimestamp.parse("infinity"), .distantFuture)
        XCTAssertEqual(PGTimestamp.parse("-infinity"), .distantPast)
        for (seconds, text) in [(1e300, "infinity"), (9.3e12, "infinity"), (Double.infinity, "infinity"),
                                (-1e300, "-infinity"), (-Double.infinity, "-infinity")] {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertNil(PGTimestamp.microseconds(date))
            XCTAssertEqual(PGTimestamp.format(date), text)
            XCTAssertEqual(try PGValue.date(date).encoded(), text)
        }
        XCTAssertNotNil(PGTimestamp.microseconds(Date(timeIntervalSince1970: 9.1e12)), "year 290,000 still a time")
        XCTAssertEqual(PGTimestamp.parseMicroseconds(PGTimestamp.format(.distantFuture)), PGTimestamp.microseconds(.distantFuture))
    }

    func testTimestampFormatAndParseAgreeAcrossCenturies() throws {
        for seconds in [-62_135_596_800.0, -1.25, 0, 946_684_799.999999, 253_402_300_799.0, 1_795_868_168.000001] {
            let date = Date(timeIntervalSince1970: seconds)
            let text = PGTimestamp.format(date)
            XCTAssertEqual(PGTimestamp.parseMicroseconds(text), PGTimestamp.microseconds(date), text)
        }
    }
}
