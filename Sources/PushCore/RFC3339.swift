import struct Foundation.Date

/// RFC 3339 timestamps in UTC with milliseconds (`2026-11-29T12:00:00.123Z`), written without
/// Foundation's formatters (no locale, no ICU): the same instant always gives the same bytes,
/// which a signed webhook body needs across retries; and read strictly (`parse`), for `send_at`
/// and the CLI's `--send-at`.
public enum RFC3339 {
    /// `date` as `YYYY-MM-DDTHH:MM:SS.mmmZ`: the instant rounded to the microsecond (PostgreSQL's
    /// precision, so that a binary fraction just below a millisecond does not fall to the one
    /// before), then truncated toward the past to the millisecond.
    public static func utcMilliseconds(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let totalMillis = micros >= 0 ? micros / 1000 : -((-micros + 999) / 1000)
        var days = totalMillis / 86_400_000
        var rest = totalMillis % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        let (y, m, d) = civil(fromDays: days)
        let h = rest / 3_600_000, mi = rest / 60_000 % 60, s = rest / 1000 % 60, ms = rest % 1000
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(ms, 3))Z"
    }

    /// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (H. Hinnant's
    /// days-to-civil algorithm; the PostgreSQL timestamp writer uses it too).
    public static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Reads an RFC 3339 `date-time` (section 5.6): `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`,
    /// upper-case `T` and `Z`, at most 40 bytes. Every field is checked against the calendar and
    /// the clock, not carried over: a month has its days (February 29 only in a leap year), the hour
    /// is 00-23, minutes and seconds 00-59 (a leap second, `:60`, is refused: no instant of this
    /// system's clock has it), an offset's hours 00-23 and minutes 00-59. The fraction, of any
    /// length, is kept to the microsecond (PostgreSQL's precision).
    /// - Returns: the instant, or nil for anything else (Foundation's `ISO8601DateFormatter`, used
    ///   before, read `2027-02-30` as March 2 and `+25:00` as `+01:00`).
    public static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.count <= 40 else { return nil }
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var n = 0
            for i in at..<(at + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                n = n * 10 + Int(b[i] - 0x30)
            }
            return n
        }
        guard let year = digits(0, 4), b[4] == 0x2D, let month = digits(5, 2), b[7] == 0x2D, let day = digits(8, 2),
              b[10] == 0x54, let hour = digits(11, 2), b[13] == 0x3A, let minute = digits(14, 2), b[16] == 0x3A,
              let second = digits(17, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 59 else { return nil }
        var i = 19
        var micros = 0
        if b[i] == 0x2E {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if i - start < 6 { micros = micros * 10 + Int(b[i] - 0x30) }
                i += 1
            }
            guard i > start else { return nil }
            for _ in min(6, i - start)..<6 { micros *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetSeconds = 0
        if b[i] == 0x5A {
            guard i + 1 == b.count else { return nil }
        } else {
            guard b[i] == 0x2B || b[i] == 0x2D, i + 6 == b.count, let oh = digits(i + 1, 2), b[i + 3] == 0x3A,
                  let om = digits(i + 4, 2), oh <= 23, om <= 59 else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == 0x2B ? 1 : -1)
        }
        let seconds = days(fromCivil: Int64(year), Int64(month), Int64(day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second - offsetSeconds)
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    /// The days of `month` (1-12) in the proleptic Gregorian `year`.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of `civil(fromDays:)`,
    /// H. Hinnant's days-from-civil).
    public static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func pad(_ n: Int64, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
