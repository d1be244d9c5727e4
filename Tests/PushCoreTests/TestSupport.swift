import Foundation
import XCTest
import PushCore
import PushCrypto

/// The honkio v2 vector (`shared/vectors/honkio_push_v2.json`), decoded with Foundation so the
/// expectations do not depend on PushCore's own JSON code. Found by walking up from this file:
/// `<repo>/../shared/vectors` in the main checkout, further up from a worktree.
enum HonkioVector {
    static func url() throws -> URL {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<8 {
            let candidate = dir.appendingPathComponent("shared/vectors/honkio_push_v2.json")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        throw VectorMissing(path: #filePath)
    }

    static func load() throws -> [String: Any] {
        let data = try Data(contentsOf: try url())
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The vector's envelope as PushCore's value type.
    static func envelope(_ vector: [String: Any]) throws -> Envelope {
        let env = try XCTUnwrap(vector["envelope"] as? [String: Any])
        let kid = try XCTUnwrap(env["kid"] as? String)
        let enc = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(env["enc"] as? String)))
        let ct = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(env["ct"] as? String)))
        return Envelope(kid: kid, enc: enc, ct: ct)
    }

    /// The vector's plaintext as notification content.
    static let content = NotificationContent(
        title: "Your code", body: "123456",
        data: JSONObject([JSONObject.Member("order", .string("42"))]),
        badge: 1, sound: "default")
}

/// Thrown (a failure, never a skip) when the vector file cannot be found.
struct VectorMissing: Error, CustomStringConvertible {
    let path: String
    var description: String { "shared/vectors/honkio_push_v2.json not found above \(path)" }
}

/// A fake envelope with the right lengths for a plaintext of `plaintextLength` bytes.
func fakeEnvelope(kid: String = "cHRL-UfvREIeEx3Q", plaintextLength: Int) -> Envelope {
    Envelope(kid: kid, enc: [UInt8](repeating: 0x04, count: 65),
             ct: [UInt8](repeating: 0xA5, count: plaintextLength + 16))
}

/// A valid-looking 65-byte key (the planner does not check the curve).
let sampleKey: [UInt8] = [0x04] + [UInt8](repeating: 0x11, count: 64)
let sampleKid = "cHRL-UfvREIeEx3Q"

/// Parses JSON bytes with Foundation (independent of PushCore).
func foundationJSON(_ bytes: [UInt8]) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
}

extension Array where Element == UInt8 {
    /// The bytes as UTF-8 text (for readable assertion failures).
    var text: String { String(decoding: self, as: UTF8.self) }
}
