import Foundation
import System

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
    /// `IMG_1.jpg`) becomes `IMG_1-2`, so no output overwrites another. A stem longer than
    /// `maxBytes` (UTF-8) is cut at a character, so every name made from it stays within
    /// `NAME_MAX`: a 255-byte photo name still gets outputs.
    public static func uniqueStems(_ names: [String], maxBytes: Int = FileName.maxLength) -> [String] {
        var seen: Set<String> = []
        func cut(_ text: String, _ room: Int) -> String {
            String(decoding: FileName.prefix(of: Array(text.utf8), maxCount: max(1, room)), as: UTF8.self)
        }
        return names.map { name in
            var stem = name
            if let dot = name.lastIndex(of: "."), dot != name.startIndex { stem = String(name[..<dot]) }
            var candidate = cut(stem, maxBytes), n = 2
            while seen.contains(candidate.lowercased()) {
                let tag = "-\(n)"
                candidate = cut(stem, maxBytes - tag.utf8.count) + tag
                n += 1
            }
            seen.insert(candidate.lowercased())
            return candidate
        }
    }

    /// The room a stem has in an output name of `template`'s: `NAME_MAX` less the suffix,
    /// the longest crop label (`-16x9`) and the longest extension (`.heic`).
    public static func stemRoom(suffix: String, cropLabels: [String]) -> Int {
        let crop = cropLabels.map { $0.utf8.count + 1 }.max() ?? 0
        return FileName.maxLength - suffix.utf8.count - crop - ".jpeg".utf8.count
    }
}
