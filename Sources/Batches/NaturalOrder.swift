/// Natural sort of file names (reference: From arrival to batch): digit runs compare as numbers, so
/// `IMG_2` comes before `IMG_10`; the rest compares case-insensitively, then exactly, so the order
/// is total.
public enum NaturalOrder {
    /// True when `a` sorts before `b`.
    public static func less(_ a: String, _ b: String) -> Bool {
        let c = compare(a, b)
        return c != 0 ? c < 0 : a < b
    }

    /// -1, 0 or 1 ignoring case; digit runs by value (then by length, so `01` < `1` ties are stable).
    static func compare(_ a: String, _ b: String) -> Int {
        let x = Array(a.lowercased().unicodeScalars), y = Array(b.lowercased().unicodeScalars)
        var i = 0, j = 0
        while i < x.count && j < y.count {
            if isDigit(x[i]) && isDigit(y[j]) {
                let si = i, sj = j
                while i < x.count && isDigit(x[i]) { i += 1 }
                while j < y.count && isDigit(y[j]) { j += 1 }
                let da = x[si..<i].drop { $0 == "0" }, db = y[sj..<j].drop { $0 == "0" }
                if da.count != db.count { return da.count < db.count ? -1 : 1 }
                for (p, q) in zip(da, db) where p != q { return p.value < q.value ? -1 : 1 }
                if (i - si) != (j - sj) { return (i - si) < (j - sj) ? -1 : 1 }
            } else {
                if x[i] != y[j] { return x[i].value < y[j].value ? -1 : 1 }
                i += 1; j += 1
            }
        }
        if i < x.count { return 1 }
        if j < y.count { return -1 }
        return 0
    }

    private static func isDigit(_ s: Unicode.Scalar) -> Bool { s.value >= 48 && s.value <= 57 }
}
