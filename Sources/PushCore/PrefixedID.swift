import struct Foundation.UUID

/// Ids as the API and webhooks show them (R-API-4): a type prefix followed by the UUID's 32
/// lower-case hex digits without dashes, e.g. `pdev_0f8fad5bd9cb469fa16570867728950e`.
/// `pdev_`, `papp_` and `pnot_` are R-API-4's; `pevt_` (webhook event) and `pwh_` (webhook
/// endpoint) follow the same shape (product decision). A malformed id parses to nil (the API's 404).
public enum PrefixedID {
    /// What an id names, with its prefix as the raw value.
    public enum Kind: String, Sendable, CaseIterable {
        /// A device (R-API-4).
        case device = "pdev_"
        /// A push app (R-API-4).
        case app = "papp_"
        /// A notification (R-API-4).
        case notification = "pnot_"
        /// A webhook event (the `id` of a webhook body, `push_events.public_id`).
        case event = "pevt_"
        /// A webhook endpoint.
        case webhookEndpoint = "pwh_"
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `kind.rawValue` + the 32 lower-case hex digits of `id`.
    public static func format(_ id: UUID, _ kind: Kind) -> String {
        var out = Array(kind.rawValue.utf8)
        out.reserveCapacity(out.count + 32)
        withUnsafeBytes(of: id.uuid) { raw in
            for b in raw {
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The UUID of `text` when it is exactly `kind`'s prefix and 32 lower-case hex digits; nil otherwise.
    public static func parse(_ text: String, _ kind: Kind) -> UUID? {
        let bytes = Array(text.utf8)
        let prefix = Array(kind.rawValue.utf8)
        guard bytes.count == prefix.count + 32, bytes.starts(with: prefix) else { return nil }
        var raw = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 {
            guard let hi = nibble(bytes[prefix.count + 2 * i]), let lo = nibble(bytes[prefix.count + 2 * i + 1]) else {
                return nil
            }
            raw[i] = hi << 4 | lo
        }
        return UUID(uuid: (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                           raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]))
    }

    /// `parse(text, kind)`, or a canonical UUID string (either case; for operators' tools such as
    /// the CLI, which print plain UUIDs).
    public static func parseLenient(_ text: String, _ kind: Kind) -> UUID? {
        parse(text, kind) ?? UUID(uuidString: text)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
