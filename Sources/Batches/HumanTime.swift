import Foundation

/// Times for people: the local time with its offset from UTC, `2026-11-29 16:04:05 +01:00`.
/// What machines read (report.json, status files, batch ids) stays UTC.
///
/// Made with `localtime_r` (the system's time zone: `TZ`, else `/etc/localtime`) rather than
/// a `DateFormatter`, which builds ICU objects: these run for every hot folder's status.
public enum HumanTime {
    /// `2026-11-29 16:04:05 +01:00` (`+00:00` on a machine set to UTC).
    public static func words(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var p = tm()
        localtime_r(&t, &p)
        let offset = p.tm_gmtoff / 60
        let sign = offset < 0 ? "-" : "+"
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d %@%02d:%02d", p.tm_year + 1900, p.tm_mon + 1, p.tm_mday,
                      p.tm_hour, p.tm_min, p.tm_sec, sign, abs(offset) / 60, abs(offset) % 60)
    }

    /// An ISO 8601 UTC time as the report writes it (`2026-11-29T15:04:05.123Z`) in local
    /// words; text that is not such a time comes back as it is.
    public static func words(isoUTC text: String) -> String {
        date(isoUTC: text).map(words) ?? text
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fff]Z`; `nil` for anything else.
    public static func date(isoUTC text: String) -> Date? {
        let u = Array(text.utf8)
        guard u.count >= 20, u.last == UInt8(ascii: "Z"), u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"),
              u[10] == UInt8(ascii: "T"), u[13] == UInt8(ascii: ":"), u[16] == UInt8(ascii: ":") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var n = 0
            for i in range {
                guard u[i] >= 48, u[i] <= 57 else { return nil }
                n = n * 10 + Int(u[i] - 48)
            }
            return n
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19) else { return nil }
        var fraction = 0.0
        if u.count > 20 {
            guard u[19] == UInt8(ascii: "."), let digits = number(20..<(u.count - 1)) else { return nil }
            fraction = Double(digits) / pow(10, Double(u.count - 21))
        }
        var p = tm()
        p.tm_year = Int32(year - 1900)
        p.tm_mon = Int32(month - 1)
        p.tm_mday = Int32(day)
        p.tm_hour = Int32(hour)
        p.tm_min = Int32(minute)
        p.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: Double(timegm(&p)) + fraction)
    }
}
