import Foundation

/// Output file names (SPEC §3): `<stem><suffix>[-<ratio>].<ext>`, the ratio written with
/// `x` (`4x5`) because `:` is not allowed in file names on SMB shares.
public enum OutputNames {
    /// The name of one output.
    public static func file(stem: String, suffix: String, crop: String?, extension ext: String) -> String {
        var name = stem + suffix
        if let crop { name += "-" + crop.replacingOccurrences(of: ":", with: "x") }
        return name + "." + ext
    }

    /// File stems for a batch, made unique: a second `IMG_1` (say `IMG_1.png` beside
    /// `IMG_1.jpg`) becomes `IMG_1-2`, so no output overwrites another.
    public static func uniqueStems(_ names: [String]) -> [String] {
        var seen: Set<String> = []
        return names.map { name in
            var stem = name
            if let dot = name.lastIndex(of: "."), dot != name.startIndex { stem = String(name[..<dot]) }
            var candidate = stem, n = 2
            while seen.contains(candidate.lowercased()) {
                candidate = "\(stem)-\(n)"
                n += 1
            }
            seen.insert(candidate.lowercased())
            return candidate
        }
    }
}
