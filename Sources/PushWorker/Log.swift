import Foundation

/// Structured logs: one JSON object per line on standard error, with `ts`, `level`, `event`
/// (Oban-style `component.action`: `queue.claim`, `batch.record`, ...) and flat fields.
/// Callers pass identifiers and counts only: never a full device token (use `Log.redact`), a key,
/// a credential or notification content. Level from `PUSHFLEET_LOG_LEVEL` (debug|info|warn|error),
/// read here only: the servers pass it on to libmicrohttpd's logger in the C shim when they start.
public final class Log: @unchecked Sendable {
    /// Severity, ordered.
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warn, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warn", "error"][rawValue] }
    }

    /// The process-wide logger.
    public static let shared = Log(level: Log.level(from: ProcessInfo.processInfo.environment["PUSHFLEET_LOG_LEVEL"]))

    /// Lowest level written.
    public var minimum: Level
    private let lock = NSLock()
    private let sink: (@Sendable (String) -> Void)?

    /// - Parameter sink: where lines go instead of standard error (tests read them); nil: standard error.
    public init(level: Level, sink: (@Sendable (String) -> Void)? = nil) {
        minimum = level
        self.sink = sink
    }

    /// Parses `debug|info|warn|error` (default info).
    public static func level(from text: String?) -> Level {
        switch text?.lowercased() {
        case "debug": return .debug
        case "warn", "warning": return .warn
        case "error": return .error
        default: return .info
        }
    }

    /// A device token shortened for logs: its first 6 characters and its length.
    public static func redact(_ token: String) -> String {
        "\(token.prefix(6))…(\(token.count))"
    }

    // The fields are an autoclosure, built only when the line is written: a debug line on the
    // claim-to-record path (one per job at `batch.record`) cost a dictionary, its hashing and the
    // boxing of each value at every level (callgrind: docs/bench.md, "Where the targets are missed").
    public func debug(_ event: String, _ fields: @autoclosure () -> [String: Any] = [:]) { write(.debug, event, fields) }
    public func info(_ event: String, _ fields: @autoclosure () -> [String: Any] = [:]) { write(.info, event, fields) }
    public func warn(_ event: String, _ fields: @autoclosure () -> [String: Any] = [:]) { write(.warn, event, fields) }
    public func error(_ event: String, _ fields: @autoclosure () -> [String: Any] = [:]) { write(.error, event, fields) }

    /// `date` as RFC 3339 UTC with milliseconds, e.g. `2026-11-29T15:10:03.612Z` (what
    /// `ISO8601DateFormatter` with fractional seconds prints), written with `gmtime_r` and digits:
    /// Foundation's formatter goes through ICU and showed in worker profiles.
    public static func timestamp(_ date: Date) -> String {
        let t = date.timeIntervalSince1970
        let whole = t.rounded(.down)
        var seconds = time_t(whole)
        let millis = min(999, max(0, Int(((t - whole) * 1000).rounded(.down))))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var out = [UInt8]()
        out.reserveCapacity(24)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4); out.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2); out.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2); out.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2); out.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2); out.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2); out.append(UInt8(ascii: "."))
        digits(millis, 3); out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    private func write(_ level: Level, _ event: String, _ makeFields: () -> [String: Any]) {
        guard level >= minimum else { return }
        let fields = makeFields()
        var line = "{\"ts\":\"\(Self.timestamp(Date()))\",\"level\":\"\(level.name)\",\"event\":"
        Self.appendJSONString(event, to: &line)
        for key in fields.keys.sorted() {
            line += ","
            Self.appendJSONString(key, to: &line)
            line += ":"
            switch fields[key] {
            case let v as Int: line += String(v)
            case let v as Int64: line += String(v)
            case let v as Double: line += v.isFinite ? String(v) : "null"
            case let v as Bool: line += v ? "true" : "false"
            case let v as UUID: Self.appendJSONString(v.uuidString.lowercased(), to: &line)
            case let v?: Self.appendJSONString(String(describing: v), to: &line)
            case nil: line += "null"
            }
        }
        line += "}\n"
        lock.withLock {
            if let sink { sink(line) } else { FileHandle.standardError.write(Data(line.utf8)) }
        }
    }

    private static func appendJSONString(_ s: String, to out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        out += "\""
    }
}
