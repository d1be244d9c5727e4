import struct Foundation.UUID
import typealias Foundation.uuid_t

/// The kinds of object the API and the webhooks name with a type prefix (R-API-4): the prefix, an
/// underscore, then the stored UUID's 32 lower-case hex digits without dashes (`pdev_0f1e...`).
/// `pdev_`, `papp_` and `pnot_` are R-API-4's; the others follow the same shape (product decision).
public enum IDKind: String, Sendable, Hashable, CaseIterable {
    /// A device (`pdev_`).
    case device = "pdev"
    /// A push app (`papp_`).
    case app = "papp"
    /// A notification (`pnot_`).
    case notification = "pnot"
    /// An account (`pacc_`), the owner of apps and keys (R-API-1).
    case account = "pacc"
    /// An API key's id (`pkey_`; never the key itself, R-API-3).
    case apiKey = "pkey"
    /// A webhook event (`pevt_`: the `id` of a webhook body, `push_events.public_id`).
    case event = "pevt"
    /// A webhook endpoint (`pwh_`).
    case webhookEndpoint = "pwh"
    /// An audit event (`paud_`, issue 15 part 5).
    case auditEvent = "paud"
}

/// Formats and parses prefixed ids (R-API-4). Pure.
public enum PrefixedID {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `kind` + `_` + the UUID's 32 lower-case hex digits.
    public static func format(_ kind: IDKind, _ id: UUID) -> String {
        var out = Array(kind.rawValue.utf8)
        out.reserveCapacity(out.count + 33)
        out.append(UInt8(ascii: "_"))
        withUnsafeBytes(of: id.uuid) { raw in
            for b in raw {
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The UUID of a well-formed prefixed id of `kind`, else nil (the API answers a malformed id
    /// with 404, R-API-4). Strict: exactly the prefix, `_` and 32 lower-case hex digits.
    public static func parse(_ text: String, as kind: IDKind) -> UUID? {
        let bytes = Array(text.utf8)
        let prefix = Array(kind.rawValue.utf8)
        guard bytes.count == prefix.count + 33, bytes.starts(with: prefix), bytes[prefix.count] == UInt8(ascii: "_") else {
            return nil
        }
        return uuid(fromHex: bytes[(prefix.count + 1)...])
    }

    /// The CLI's reading (R-API-4: "the CLI accepts both forms"): a prefixed id of `kind`, or a
    /// UUID in its usual dashed form (either case). Nil for anything else.
    public static func parseLenient(_ text: String, as kind: IDKind) -> UUID? {
        if let id = parse(text, as: kind) { return id }
        guard text.utf8.count == 36 else { return nil }
        return UUID(uuidString: text)
    }

    /// `message` with each dashed UUID that follows `word` and a space ("notification 27d6a44e-...")
    /// written as a prefixed id of `kind`, so a message the storage layer wrote names objects the
    /// way the API does (R-API-4). Pure; text other than such UUIDs is kept byte for byte.
    public static func prefixing(_ kind: IDKind, after word: String, in message: String) -> String {
        let text = Array(message.utf8), marker = Array((word + " ").utf8)
        var out: [UInt8] = [], i = 0
        out.reserveCapacity(text.count)
        while i < text.count {
            if text[i...].starts(with: marker) {
                out += marker
                i += marker.count
                if text.count - i >= 36, let id = UUID(uuidString: String(decoding: text[i..<(i + 36)], as: UTF8.self)) {
                    out += Array(format(kind, id).utf8)
                    i += 36
                }
            } else {
                out.append(text[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func uuid(fromHex hex: ArraySlice<UInt8>) -> UUID? {
        guard hex.count == 32 else { return nil }
        var raw = [UInt8](repeating: 0, count: 16)
        var i = hex.startIndex
        for k in 0..<16 {
            guard let hi = nibble(hex[i]), let lo = nibble(hex[i + 1]) else { return nil }
            raw[k] = hi << 4 | lo
            i += 2
        }
        return raw.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
