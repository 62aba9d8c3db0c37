import Finishing
import Foundation
import System

/// A batch's file stems (the names themselves are made with each photo: `OutputName`).
public enum OutputNames {
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
            let stem = PhotoFacts.stem(name)
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

    /// The room a stem has in an output name of `template`'s: `NAME_MAX` less the longest
    /// suffix, variant (`-thumb`) and crop label (`-16x9`) of its recipes and the longest
    /// extension (`.heic`). (A name pattern is cut to `NAME_MAX` where it is made: `OutputName`.)
    public static func stemRoom(_ template: Template) -> Int {
        let recipes = template.recipes
        let suffix = recipes.map { $0.recipe.output.suffix.utf8.count }.max() ?? 0
        let variant = recipes.map { ($0.variant?.utf8.count).map { $0 + 1 } ?? 0 }.max() ?? 0
        let crop = recipes.flatMap { $0.recipe.crops.map { $0.label.utf8.count + 1 } }.max() ?? 0
        return FileName.maxLength - suffix - variant - crop - ".jpeg".utf8.count
    }
}
