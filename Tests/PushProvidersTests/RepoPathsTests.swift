import Foundation
import PushTestSupport
import XCTest

/// The shared test helpers find the repository's files and the fakes' Python the documented way.
final class RepoPathsTests: XCTestCase {
    func testSQLDirectoryIsTheRepositorysMigrationFolder() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: RepoPaths.sqlDirectory)
        XCTAssertTrue(names.contains("0001_schema.up.sql"), "\(RepoPaths.sqlDirectory): \(names)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: RepoPaths.root.appendingPathComponent("Package.swift").path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: RepoPaths.fakesDirectory + "/mkcerts.py"))
    }

    func testFakesPythonOverrideWinsThenVenvThenPath() {
        XCTAssertEqual(RepoPaths.fakesPython(environment: ["PUSHFLEET_FAKES_PYTHON": "/opt/py/bin/python"]),
                       ["/opt/py/bin/python"])
        let venv = RepoPaths.root.appendingPathComponent(".venv/bin/python").path
        let expected = FileManager.default.isExecutableFile(atPath: venv) ? [venv] : ["/usr/bin/env", "python3"]
        XCTAssertEqual(RepoPaths.fakesPython(environment: [:]), expected)
        XCTAssertEqual(RepoPaths.fakesPython(environment: ["PUSHFLEET_FAKES_PYTHON": ""]), expected, "empty = unset")
    }
}
