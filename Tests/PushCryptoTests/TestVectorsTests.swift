import Foundation
import PushCrypto
import PushTestSupport
import XCTest

/// The vectors live in the repository (`Tests/Vectors/`), byte for byte as published, and a
/// missing one fails loudly with its path.
final class TestVectorsTests: XCTestCase {
    /// SHA-256 of each file as published; `Tests/Vectors/README.md` states the same values.
    static let published: [TestVectors.File: String] = [
        .honkioPushV2: "983ba390f695a94fc52dfbcdf4f8afdb32630920294d9190f0d1cc268e156a81",
        .hpkeRFC9180P256: "5f04ad46c0329744026d5e63f1592cc276876aef663c44ad59b32ef150d2a22f",
        .pushfleetIDsOnlyV1: "c8a1b7471277553ebd002c7307bdf674915221bc089603e1a7c77e384f95e041",
    ]

    func testEachVectorFileIsByteForByteThePublishedOne() throws {
        let readme = try String(contentsOf: TestVectors.directory.appendingPathComponent("README.md"), encoding: .utf8)
        for file in TestVectors.File.allCases {
            let expected = try XCTUnwrap(Self.published[file], "no published hash for \(file.rawValue)")
            let digest = try SHA256.hash([UInt8](TestVectors.data(file)))
            XCTAssertEqual(Hex.encode(digest), expected, "\(file.rawValue) differs from the published file")
            XCTAssertTrue(readme.contains("`\(file.rawValue)` | `\(expected)`"),
                          "Tests/Vectors/README.md must state \(file.rawValue)'s SHA-256")
        }
    }

    func testTheFolderHoldsExactlyTheKnownVectorsAndTheirNote() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: TestVectors.directory.path).sorted()
        XCTAssertEqual(names, (TestVectors.File.allCases.map(\.rawValue) + ["README.md"]).sorted())
        XCTAssertEqual(TestVectors.directory.deletingLastPathComponent().deletingLastPathComponent().path,
                       RepoPaths.root.path, "the vectors are read from inside the repository")
    }

    func testAMissingVectorThrowsWithItsPathNeverSkips() {
        XCTAssertThrowsError(try TestVectors.data(named: "absent_vector.json")) { error in
            let missing = error as? TestVectors.Missing
            XCTAssertNotNil(missing, "\(error)")
            XCTAssertEqual(missing?.path, TestVectors.directory.appendingPathComponent("absent_vector.json").path)
            XCTAssertTrue("\(error)".contains("git checkout -- Tests/Vectors/"), "\(error)")
            XCTAssertFalse(error is XCTSkip)
        }
    }
}
