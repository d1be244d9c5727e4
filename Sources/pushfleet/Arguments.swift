import Foundation
import PushCore

/// A parsed command line: positional words and `--name value` / `--flag` options.
/// Options may repeat (`--user a --user b`); `--name=value` is accepted too.
struct Arguments {
    var positional: [String] = []
    var options: [String: [String]] = [:]
    var flags: Set<String> = []

    /// Options that take no value.
    static let flagNames: Set<String> = ["json", "help", "watch", "remove-key", "until-drained", "allow-loopback-endpoints", "h",
                                         "version"]

    init(_ args: [String]) throws {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a.hasPrefix("--") || (a.hasPrefix("-") && a.count == 2) {
                var name = String(a.drop(while: { $0 == "-" }))
                var value: String? = nil
                if let eq = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if value == nil && Self.flagNames.contains(name) {
                    flags.insert(name)
                } else {
                    if value == nil {
                        guard i + 1 < args.count else { throw CLIError.usage("--\(name) needs a value") }
                        i += 1
                        value = args[i]
                    }
                    options[name, default: []].append(value!)
                }
            } else {
                positional.append(a)
            }
            i += 1
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// Refuses options a command does not know (a misspelt `--titel` must not be ignored).
    func allowOnly(_ allowed: Set<String>) throws {
        let common: Set<String> = ["json", "help", "h"]
        for name in Set(options.keys).union(flags) where !allowed.contains(name) && !common.contains(name) {
            throw CLIError.usage("unknown option --\(name.prefix(40)) for this command (see --help)")
        }
    }
    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }

    func required(_ name: String) throws -> String {
        guard let v = value(name) else { throw CLIError.usage("--\(name) is required") }
        return v
    }

    func int(_ name: String) throws -> Int? {
        guard let v = value(name) else { return nil }
        guard let n = Int(v) else { throw CLIError.usage("--\(name) must be a whole number, got \(v.prefix(40))") }
        return n
    }

    /// A decimal number (its range is the acceptance service's to judge); nil when absent. Read as
    /// the API reads a JSON number (`JSONValue.double(fromNumberText:)`): beyond a double's range,
    /// above or below (a non-zero value that would read as 0), is refused like any non-number.
    /// - Throws: `CLIError.usage` for text that is not a number.
    func number(_ name: String) throws -> Double? {
        guard let v = value(name) else { return nil }
        guard let d = JSONValue.double(fromNumberText: v) else {
            throw CLIError.usage("--\(name) must be a finite number within a double's range, got \(v.prefix(40))")
        }
        return d
    }

    /// A number of seconds (or any decimal) that must lie in `range`; nil when absent.
    /// - Throws: `CLIError.usage` for text that is not a finite number or is out of range.
    func seconds(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let v = value(name) else { return nil }
        guard let d = Double(v), d.isFinite, range.contains(d) else {
            throw CLIError.usage("--\(name) must be a number of seconds from \(range.lowerBound) to \(range.upperBound), got \(v.prefix(40))")
        }
        return d
    }

    /// A whole number that must lie in `range`; nil when absent.
    /// - Throws: `CLIError.usage` otherwise.
    func int(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let n = try int(name) else { return nil }
        guard range.contains(n) else {
            throw CLIError.usage("--\(name) must be from \(range.lowerBound) to \(range.upperBound), got \(n)")
        }
        return n
    }

    func bool(_ name: String) throws -> Bool? {
        guard let v = value(name) else { return nil }
        switch v.lowercased() {
        case "true", "on", "yes", "1": return true
        case "false", "off", "no", "0": return false
        default: throw CLIError.usage("--\(name) must be true or false")
        }
    }

    /// A UUID, or for `--app`, `--device` and `--account` also its prefixed form (R-API-4: the
    /// CLI accepts both).
    func uuid(_ name: String) throws -> UUID? {
        guard let v = value(name) else { return nil }
        let kinds: [String: IDKind] = ["app": .app, "device": .device, "account": .account]
        if let kind = kinds[name] {
            guard let u = PrefixedID.parseLenient(v, as: kind) else {
                throw CLIError.usage("--\(name) must be a \(kind.rawValue)_... id or a UUID")
            }
            return u
        }
        guard let u = UUID(uuidString: v) else { throw CLIError.usage("--\(name) must be a UUID") }
        return u
    }

    /// Parses RFC 3339 instants (`2026-11-29T12:00:00Z`, with fractional seconds or an offset;
    /// `RFC3339.parse`, which refuses dates and times the calendar does not have) and relative
    /// forms `+30s`, `+5m`, `+2h` (a finite, non-negative number). Throws a usage error otherwise;
    /// a far time (`+1e300s`) is a date the acceptance refuses, never a trap.
    func date(_ name: String, now: Date = Date()) throws -> Date? {
        guard let v = value(name) else { return nil }
        if v.hasPrefix("+") {
            let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
            guard let unit = v.last, let scale = units[unit], let n = Double(v.dropFirst().dropLast()),
                  n.isFinite, n >= 0, (n * scale).isFinite else {
                throw CLIError.usage("--\(name): a relative time is +N followed by s, m or h, N a finite number, got \(v.prefix(40))")
            }
            return now.addingTimeInterval(n * scale)
        }
        if let d = RFC3339.parse(v) { return d }
        throw CLIError.usage("--\(name): unparseable time \"\(v.prefix(40))\" (use RFC 3339, e.g. 2026-11-29T12:00:00Z, or +30s)")
    }
}

/// The process arguments read from their bytes, so that invalid UTF-8 is refused rather than
/// replaced (`CommandLine.arguments` decodes with U+FFFD).
enum RawArguments {
    /// The arguments after the program name, and the index of the first that is not valid UTF-8.
    static func read() -> (arguments: [String], firstInvalid: Int?) {
        var out: [String] = []
        var invalid: Int?
        for i in 1 ..< Int(CommandLine.argc) {
            guard let p = CommandLine.unsafeArgv[i] else { continue }
            if let s = String(validatingCString: p) {
                out.append(s)
            } else {
                if invalid == nil { invalid = out.count }
                out.append(String(decoding: UnsafeRawBufferPointer(start: p, count: strlen(p)), as: UTF8.self))
            }
        }
        return (out, invalid)
    }
}

/// A command-line failure with a stable code and an exit status.
struct CLIError: Error, CustomStringConvertible {
    var code: String
    var message: String
    var exitCode: Int32

    static func usage(_ m: String) -> CLIError { CLIError(code: "USAGE", message: m, exitCode: 64) }
    var description: String { "\(code): \(message)" }
}
