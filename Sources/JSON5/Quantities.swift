import Foundation

/// Quantities written as text in configs and templates.
public enum Quantities {
    /// Parses a size in bytes: `"512KiB"`, `"1GiB"`, `"20MB"`, `"4096"`, `"100B"` (binary
    /// `KiB` `MiB` `GiB` `TiB`, decimal `kB` `MB` `GB` `TB`). `nil` for anything else
    /// (including fractions of a byte and sizes over 2⁶² bytes).
    public static func bytes(_ text: String) -> Int? {
        let units: [(String, Double)] = [
            ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("TiB", 1_099_511_627_776),
            ("kB", 1e3), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("B", 1), ("", 1),
        ]
        for (unit, factor) in units where text.hasSuffix(unit) {
            let number = text.dropLast(unit.count).trimmingCharacters(in: .whitespaces)
            guard let value = plainDecimal(Substring(number)) else { continue }
            let bytes = value * factor
            guard bytes == bytes.rounded(), bytes <= Double(1 << 62) else { return nil }
            return Int(bytes)
        }
        return nil
    }

    /// A non-negative decimal like `12`, `1.5`, `.5`; nothing else (no sign, exponent, hex).
    public static func plainDecimal(_ text: Substring) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }),
              text.filter({ $0 == "." }).count <= 1, text != "." else { return nil }
        return Double(text.hasPrefix(".") ? "0" + text : String(text))
    }
}
