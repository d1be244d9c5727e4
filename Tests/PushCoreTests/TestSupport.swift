import Foundation
import XCTest
import PushCore
import PushCrypto
import PushTestSupport

/// The honkio v2 vector (`Tests/Vectors/honkio_push_v2.json`, read by `TestVectors`), decoded with
/// Foundation so the expectations do not depend on PushCore's own JSON code.
enum HonkioVector {
    static func load() throws -> [String: Any] {
        try XCTUnwrap(try TestVectors.jsonObject(.honkioPushV2) as? [String: Any])
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
