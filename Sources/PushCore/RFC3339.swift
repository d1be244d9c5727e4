import struct Foundation.Date

/// RFC 3339 timestamps in UTC with milliseconds (`2026-11-29T12:00:00.123Z`), written without
/// Foundation's formatters (no locale, no ICU): the same instant always gives the same bytes,
/// which a signed webhook body needs across retries.
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

    private static func pad(_ n: Int64, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
