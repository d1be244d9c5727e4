import Foundation

/// Prints results for people (text) or scripts (`--json`: one JSON document on stdout).
struct Output {
    let json: Bool

    func emit<T: Encodable>(_ value: T, text: () -> String) {
        if json {
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            e.dateEncodingStrategy = .iso8601
            e.keyEncodingStrategy = .convertToSnakeCase
            if let data = try? e.encode(value) {
                // Foundation writes UUIDs upper-case; the text output, PostgreSQL and APNs use lower-case.
                let text = String(decoding: data, as: UTF8.self)
                FileHandle.standardOutput.write(Data(Self.lowercasingUUIDs(text).utf8))
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        } else {
            print(text())
        }
    }
}

extension Output {
    /// Lower-cases every canonical UUID in `text`.
    static func lowercasingUUIDs(_ text: String) -> String {
        guard let re = try? NSRegularExpression(pattern: "[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}") else {
            return text
        }
        var out = text
        for m in re.matches(in: text, range: NSRange(text.startIndex..., in: text)).reversed() {
            if let r = Range(m.range, in: out) { out.replaceSubrange(r, with: out[r].lowercased()) }
        }
        return out
    }
}

/// `{"key": value}` for small JSON answers.
struct KV: Encodable {
    var fields: [String: String]
    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(fields)
    }
}

func iso(_ d: Date?) -> String {
    guard let d else { return "-" }
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.string(from: d)
}
