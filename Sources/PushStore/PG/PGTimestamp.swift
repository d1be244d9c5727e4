import PushCore
import struct Foundation.Date

/// Text form of `timestamptz` values, both ways, without Foundation's formatters (which are slow
/// and locale-dependent). Times are kept as whole microseconds since the Unix epoch, PostgreSQL's
/// own resolution.
///
/// PostgreSQL's `infinity` and `-infinity` read as `Date.distantFuture` and `Date.distantPast`
/// (later, and earlier, than any time this product writes), so one such row never fails a whole
/// read; a date beyond PostgreSQL's range (after the year 290,000 or before 4713 BC, or infinite)
/// is written as `infinity` / `-infinity`, which the SQL functions refuse as not finite. No date
/// traps the conversion (`pushfleet send --send-at +1e300s`, issue 13).
enum PGTimestamp {
    /// Seconds since the epoch of the latest date written as a time: PostgreSQL's own limit is
    /// 294,276 AD, and microseconds must also fit an Int64.
    static let latestSeconds: Double = 9_200_000_000_000
    /// Seconds since the epoch of PostgreSQL's earliest time (4714-11-24 BC).
    static let earliestSeconds: Double = -210_866_803_200

    /// Microseconds since 1970-01-01T00:00:00Z, rounded to the nearest microsecond; nil for a date
    /// outside PostgreSQL's range (or not finite).
    static func microseconds(_ date: Date) -> Int64? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= earliestSeconds, seconds < latestSeconds else { return nil }
        return Int64((seconds * 1_000_000).rounded())
    }

    /// The date as ISO-8601 UTC text with six fractional digits, e.g. `2026-11-29T12:16:08.123456Z`
    /// (years before 1 AD carry PostgreSQL's ` BC` suffix); `infinity` / `-infinity` beyond the
    /// range (see the type's note).
    static func format(_ date: Date) -> String {
        guard let micros = microseconds(date) else {
            return date.timeIntervalSince1970 < 0 ? "-infinity" : "infinity"
        }
        let perDay: Int64 = 86_400_000_000
        let days = floorDiv(micros, perDay)
        var rest = micros - days * perDay
        let (y, m, d) = RFC3339.civil(fromDays: days)
        let hour = rest / 3_600_000_000; rest -= hour * 3_600_000_000
        let minute = rest / 60_000_000; rest -= minute * 60_000_000
        let second = rest / 1_000_000; rest -= second * 1_000_000
        let bc = y <= 0
        var s = pad(bc ? 1 - y : y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2)
        s += "T" + pad(hour, 2) + ":" + pad(minute, 2) + ":" + pad(second, 2) + "." + pad(rest, 6) + "Z"
        return bc ? s + " BC" : s
    }

    /// Parses PostgreSQL's ISO output of `timestamptz`, `timestamp` or `date`:
    /// `YYYY-MM-DD[( |T)HH:MM:SS[.ffffff]][Z|±HH[:MM[:SS]]][ BC]`. A value without an offset is
    /// taken as UTC; `infinity` and `-infinity` as `Date.distantFuture` / `distantPast`. Returns nil
    /// for anything else.
    static func parse(_ text: String) -> Date? {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        guard let micros = parseMicroseconds(text) else { return nil }
        let seconds = floorDiv(micros, 1_000_000)
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros - seconds * 1_000_000) / 1_000_000)
    }

    /// As `parse`, as whole microseconds since the epoch.
    static func parseMicroseconds(_ text: String) -> Int64? {
        var bytes = Array(text.utf8)
        var bc = false
        if bytes.count > 3, bytes.suffix(3).elementsEqual(" BC".utf8) { bc = true; bytes.removeLast(3) }
        var p = Parser(bytes: bytes)
        guard var year = p.number(minDigits: 1, maxDigits: 7), p.take(UInt8(ascii: "-")),
              let month = p.number(minDigits: 2, maxDigits: 2), p.take(UInt8(ascii: "-")),
              let day = p.number(minDigits: 2, maxDigits: 2),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        if bc { year = 1 - year }
        var micros = RFC3339.days(fromCivil: year, month, day) * 86_400_000_000
        if p.atEnd { return micros }
        guard p.take(UInt8(ascii: " ")) || p.take(UInt8(ascii: "T")),
              let hour = p.number(minDigits: 2, maxDigits: 2), p.take(UInt8(ascii: ":")),
              let minute = p.number(minDigits: 2, maxDigits: 2), p.take(UInt8(ascii: ":")),
              let second = p.number(minDigits: 2, maxDigits: 2),
              hour <= 24, minute <= 59, second <= 60 else { return nil }
        micros += ((hour * 60 + minute) * 60 + second) * 1_000_000
        if p.take(UInt8(ascii: ".")) {
            var scale: Int64 = 100_000
            var fraction: Int64 = 0
            var count = 0
            while let digit = p.digit() {
                count += 1
                if count <= 6 { fraction += digit * scale; scale /= 10 }
                else if count == 7, digit >= 5 { fraction += 1 }
            }
            guard count > 0 else { return nil }
            micros += fraction
        }
        if p.take(UInt8(ascii: "Z")) {
        } else if let sign: Int64 = p.take(UInt8(ascii: "+")) ? 1 : (p.take(UInt8(ascii: "-")) ? -1 : nil) {
            guard let oh = p.number(minDigits: 2, maxDigits: 2) else { return nil }
            var offset = oh * 3600
            let colon = p.take(UInt8(ascii: ":"))
            if let om = p.number(minDigits: 2, maxDigits: 2) {
                offset += om * 60
                if colon, p.take(UInt8(ascii: ":")) {
                    guard let os = p.number(minDigits: 2, maxDigits: 2) else { return nil }
                    offset += os
                }
            } else if colon { return nil }
            micros -= sign * offset * 1_000_000
        }
        return p.atEnd ? micros : nil
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, days since 1970-01-01)

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func pad(_ n: Int64, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// A cursor over ASCII bytes.
    private struct Parser {
        let bytes: [UInt8]
        var i = 0
        var atEnd: Bool { i == bytes.count }

        mutating func take(_ b: UInt8) -> Bool {
            guard i < bytes.count, bytes[i] == b else { return false }
            i += 1
            return true
        }

        mutating func digit() -> Int64? {
            guard i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 else { return nil }
            i += 1
            return Int64(bytes[i - 1] - 48)
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            var value: Int64 = 0
            var count = 0
            while count < maxDigits, let d = digit() { value = value * 10 + d; count += 1 }
            return count >= minDigits ? value : nil
        }
    }
}
