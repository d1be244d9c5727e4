import Foundation
import XCTest
import PushCrypto

/// Locates and decodes the shared vector files. The package root is found by walking up from this
/// file to the folder holding `Package.swift`; vectors live in `<root>/../shared/vectors` (the
/// main checkout). Worktrees sit one level deeper, so further ancestors' `shared/vectors` are
/// tried next; `PUSH_VECTORS_DIR` overrides both. A missing file fails the test (never a skip).
enum VectorFiles {
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    static func url(_ name: String, file: StaticString = #filePath) throws -> URL {
        var candidates: [URL] = []
        if let override = ProcessInfo.processInfo.environment["PUSH_VECTORS_DIR"] {
            candidates.append(URL(fileURLWithPath: override).appendingPathComponent(name))
        }
        let root = try packageRoot()
        var ancestor = root.deletingLastPathComponent()
        while true {
            candidates.append(ancestor.appendingPathComponent("shared/vectors").appendingPathComponent(name))
            let parent = ancestor.deletingLastPathComponent()
            if parent.path == ancestor.path { break }
            ancestor = parent
        }
        if let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0.path) }) {
            return found
        }
        throw Missing(description: "vector file \(name) not found; tried: "
                      + candidates.map(\.path).joined(separator: ", ") + " (set PUSH_VECTORS_DIR to override)")
    }

    static func decode<T: Decodable>(_ type: T.Type, from name: String) throws -> T {
        let data = try Data(contentsOf: url(name))
        return try JSONDecoder().decode(T.self, from: data)
    }

    private static func packageRoot() throws -> URL {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
            let parent = dir.deletingLastPathComponent()
            if parent.path == dir.path { throw Missing(description: "no Package.swift above \(#filePath)") }
            dir = parent
        }
        return dir
    }
}

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
