import Foundation

/// Prints results for people (text) or scripts (`--json`: one JSON document on stdout).
struct Output {
    let json: Bool

    func emit<T: Encodable>(_ value: T, text: () -> String) {
        if json {
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            e.dateEncodingStrategy = .iso8601
            if let data = try? e.encode(value) {
                FileHandle.standardOutput.write(data)
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        } else {
            print(text())
        }
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
