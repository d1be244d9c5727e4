import Foundation
import XCTest
import PushCore
import PushCrypto

/// R-API-4 ids, R-API-1/R-API-3 key texts and R-API-2 permissions: the pure rules.
final class IdentifierTests: XCTestCase {
    func testPrefixedIDsAreThePrefixAnd32LowerCaseHexDigits() throws {
        let id = try XCTUnwrap(UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"))
        XCTAssertEqual(PrefixedID.format(.device, id), "pdev_0f1e2d3c4b5a69788796a5b4c3d2e1f0")
        XCTAssertEqual(PrefixedID.format(.app, id), "papp_0f1e2d3c4b5a69788796a5b4c3d2e1f0")
        XCTAssertEqual(PrefixedID.format(.notification, id), "pnot_0f1e2d3c4b5a69788796a5b4c3d2e1f0")
        for kind in IDKind.allCases {
            XCTAssertEqual(PrefixedID.parse(PrefixedID.format(kind, id), as: kind), id)
        }
        for _ in 0..<200 {
            let u = UUID()
            XCTAssertEqual(PrefixedID.parse(PrefixedID.format(.device, u), as: .device), u)
        }
    }

    func testMalformedIDsDoNotParse() throws {
        let good = "pdev_0f1e2d3c4b5a69788796a5b4c3d2e1f0"
        XCTAssertNotNil(PrefixedID.parse(good, as: .device))
        for bad in ["papp_0f1e2d3c4b5a69788796a5b4c3d2e1f0",   // another kind
                    "pdev_0F1E2D3C4B5A69788796A5B4C3D2E1F0",   // upper case
                    "pdev_0f1e2d3c4b5a69788796a5b4c3d2e1f",    // 31 digits
                    "pdev_0f1e2d3c4b5a69788796a5b4c3d2e1f00",  // 33 digits
                    "pdev-0f1e2d3c4b5a69788796a5b4c3d2e1f0", "pdev_0f1e2d3c4b5a69788796a5b4c3d2e1g0",
                    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "", "pdev_", "pdév_0f1e2d3c4b5a69788796a5b4c3d2e1f"] {
            XCTAssertNil(PrefixedID.parse(bad, as: .device), bad)
        }
        // The CLI also takes the dashed UUID, in either case.
        XCTAssertNotNil(PrefixedID.parseLenient("0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", as: .device))
        XCTAssertNotNil(PrefixedID.parseLenient(good, as: .device))
        XCTAssertNil(PrefixedID.parseLenient("0f1e2d3c4b5a69788796a5b4c3d2e1f0", as: .device))
    }

    func testStorageMessagesNameObjectsByPrefixedID() throws {
        let id = try XCTUnwrap(UUID(uuidString: "27d6a44e-6227-4399-93dd-32dbef2960e7"))
        XCTAssertEqual(PrefixedID.prefixing(.notification, after: "notification",
                                            in: "the idempotency key was used for notification \(id.uuidString.lowercased()) with another title"),
                       "the idempotency key was used for notification pnot_27d6a44e6227439993dd32dbef2960e7 with another title")
        XCTAssertEqual(PrefixedID.prefixing(.notification, after: "notification", in: "notification \(id.uuidString) cannot be cancelled"),
                       "notification pnot_27d6a44e6227439993dd32dbef2960e7 cannot be cancelled", "upper case too")
        for kept in ["no notification", "notification 27d6a44e-6227-4399-93dd", "notification x27d6a44e-6227-4399-93dd-32dbef2960e7",
                     "notifications 27d6a44e-6227-4399-93dd-32dbef2960e7", "é notification ü", ""] {
            XCTAssertEqual(PrefixedID.prefixing(.notification, after: "notification", in: kept), kept)
        }
    }

    func testKeysAreTheModePrefixAnd32Base62Characters() throws {
        var g = SystemRandomNumberGenerator()
        var seen = Set<String>()
        var counts = [UInt8: Int]()
        for mode in Mode.allCases {
            for _ in 0..<500 {
                let key = APIKeyFormat.generate(mode: mode, using: &g)
                XCTAssertTrue(key.hasPrefix("mk_\(mode.rawValue)_"), key)
                XCTAssertEqual(key.utf8.count, 8 + 32)
                XCTAssertEqual(APIKeyFormat.mode(of: key), mode)
                XCTAssertEqual(APIKeyFormat.displayPrefix(key), String(key.prefix(14)))
                XCTAssertTrue(seen.insert(key).inserted)
                for b in key.utf8.dropFirst(8) { counts[b, default: 0] += 1 }
            }
        }
        // 32 base62 characters carry 32 * log2(62) = 190.5 bits (issue: at least 128).
        XCTAssertGreaterThan(Double(APIKeyFormat.randomLength) * log2(62), 128)
        // Every one of the 62 characters shows up, none far more than the others (32,000 draws).
        XCTAssertEqual(counts.count, 62)
        XCTAssertLessThan(Double(counts.values.max()!) / Double(counts.values.min()!), 1.6)
    }

    func testMalformedKeysHaveNoMode() {
        for bad in ["", "mk_test_", "mk_test_" + String(repeating: "a", count: 31), "mk_test_" + String(repeating: "a", count: 33),
                    "mk_prod_" + String(repeating: "a", count: 32), "sk_test_" + String(repeating: "a", count: 32),
                    "mk_test_" + String(repeating: "a", count: 31) + "-", "MK_TEST_" + String(repeating: "a", count: 32)] {
            XCTAssertNil(APIKeyFormat.mode(of: bad), bad)
        }
    }

    func testOnlyTheSHA256OfTheKeyIsStored() throws {
        let key = "mk_test_" + String(repeating: "A", count: 32)
        XCTAssertEqual(try APIKeyFormat.hash(key), try SHA256.hash(Array(key.utf8)))
        XCTAssertEqual(try APIKeyFormat.hash(key).count, 32)
        // FIPS 180-2 "abc" vector, through the same call.
        XCTAssertEqual(try APIKeyFormat.hash("abc").map { String(format: "%02x", $0) }.joined(),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testPermissionsParseTheIssuesSpellingAndCanonicalise() throws {
        let p = try APIPermissions(parsing: "push_devices:wd,push:rw,push_apps:rw")
        XCTAssertTrue(p.allows(.pushDevices, .write))
        XCTAssertTrue(p.allows(.pushDevices, .delete))
        XCTAssertTrue(p.allows(.push, .read))
        XCTAssertTrue(p.allows(.push, .write))
        XCTAssertTrue(p.allows(.pushApps, .read))
        XCTAssertFalse(p.allows(.webhooks, .read))
        XCTAssertEqual(p.text, "push_devices:wd,push:rw,push_apps:rw")
        XCTAssertEqual(try APIPermissions(parsing: "push_apps:wr,push_devices:dw").text, "push_devices:wd,push_apps:rw")
        let devicesOnly = try APIPermissions(parsing: "push_devices:w")
        XCTAssertFalse(devicesOnly.allows(.pushDevices, .delete))
        XCTAssertFalse(devicesOnly.allows(.push, .read))
    }

    func testBadPermissionsAreRefusedNamingThePart() {
        for (bad, words) in [("", "at least one"), ("push", "not resource:letters"), ("push:", "not resource:letters"),
                             ("pushes:rw", "unknown resource"), ("push_devices:r", "takes wd"), ("push:d", "takes rw"),
                             ("push:rw,push:r", "given twice"), ("push:rw,", "not resource:letters")] {
            XCTAssertThrowsError(try APIPermissions(parsing: bad), bad) { e in
                let error = e as? PushError
                XCTAssertEqual(error?.code, .validationError, bad)
                XCTAssertTrue(error?.message.contains(words) ?? false, "\(bad): \(error?.message ?? "")")
            }
        }
    }
}
