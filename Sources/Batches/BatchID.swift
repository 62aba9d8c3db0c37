import Foundation

/// Batch identifiers (README: What a batch folder holds): `YYYYMMDD-HHMMSS-xxxx`, UTC time then 4
/// random hex digits, so they sort by time and two batches in one second still differ.
public enum BatchID {
    /// A new identifier for `date`.
    public static func make(at date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&t, &parts)
        let stamp = String(format: "%04d%02d%02d-%02d%02d%02d", parts.tm_year + 1900, parts.tm_mon + 1,
                           parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
        return stamp + "-" + String(format: "%04x", UInt16.random(in: 0...UInt16.max))
    }

    /// True when `s` has the shape of a batch identifier.
    public static func isValid(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 20, u[8] == UInt8(ascii: "-"), u[15] == UInt8(ascii: "-") else { return false }
        let digits = u[0..<8] + u[9..<15]
        let hex = u[16..<20]
        return digits.allSatisfy { $0 >= 48 && $0 <= 57 }
            && hex.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// The time an identifier was made at (whole seconds, UTC); nil when `id` is not one.
    public static func date(of id: String) -> Date? {
        guard isValid(id) else { return nil }
        let u = Array(id.utf8)
        func number(_ range: Range<Int>) -> Int32 { range.reduce(0) { $0 * 10 + Int32(u[$1] - 48) } }
        var p = tm()
        p.tm_year = number(0..<4) - 1900
        p.tm_mon = number(4..<6) - 1
        p.tm_mday = number(6..<8)
        p.tm_hour = number(9..<11)
        p.tm_min = number(11..<13)
        p.tm_sec = number(13..<15)
        let t = timegm(&p)
        return t == -1 ? nil : Date(timeIntervalSince1970: Double(t))
    }

    /// An ISO 8601 UTC time with milliseconds, as the report writes it.
    public static func timestamp(_ date: Date) -> String {
        let ms = Int((date.timeIntervalSince1970 * 1000).rounded(.down))
        var t = time_t(ms / 1000)
        var p = tm()
        gmtime_r(&t, &p)
        // Digits written by hand: String(format:) goes through CoreFoundation, and a restart at
        // 10,000 hot folders stamps each folder's state (3 % of its CPU, perf).
        var out: [UInt8] = []
        out.reserveCapacity(24)
        func put(_ value: Int32, _ width: Int, then separator: Character) {
            var digits = [UInt8](repeating: UInt8(ascii: "0"), count: width)
            var v = max(0, value)
            for i in stride(from: width - 1, through: 0, by: -1) {
                digits[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
            out += digits
            out.append(UInt8(ascii: separator.unicodeScalars.first!))
        }
        put(p.tm_year + 1900, 4, then: "-")
        put(p.tm_mon + 1, 2, then: "-")
        put(p.tm_mday, 2, then: "T")
        put(p.tm_hour, 2, then: ":")
        put(p.tm_min, 2, then: ":")
        put(p.tm_sec, 2, then: ".")
        put(Int32(ms % 1000), 3, then: "Z")
        return String(decoding: out, as: UTF8.self)
    }
}
