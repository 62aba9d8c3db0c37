import Foundation

/// Output file names (reference: Output names): `<stem><suffix>[-<variant>][-<ratio>].<ext>`, or
/// the template's `output.name` pattern. Ratios are written with `x` (`4x5`) because `:` is not
/// allowed in file names on SMB shares.
public enum OutputName {
    /// The name of one output.
    /// - Parameters:
    ///   - pattern: `output.name` (`"{stem}-{variant}-{ratio}"`), or nil for the default form.
    ///   - values: the photo's variables (`PhotoFacts.values`).
    ///   - taken: the names this photo's other outputs already have: a repeat gets `-2`, `-3`…
    public static func file(pattern: String?, suffix: String, values: [String: String], variant: String?,
                            crop: String?, extension ext: String, taken: [String] = []) -> String {
        let ratio = crop.map { $0.replacingOccurrences(of: ":", with: "x") }
        var stem: String
        if let pattern {
            var all = values
            all["variant"] = variant
            all["ratio"] = ratio
            stem = render(pattern, all)
        } else {
            stem = (values["stem"] ?? "") + suffix + (variant.map { "-" + $0 } ?? "") + (ratio.map { "-" + $0 } ?? "")
        }
        var name = fitted(stem, "." + ext), n = 2
        while taken.contains(where: { $0.lowercased() == name.lowercased() }) {
            name = fitted(stem, "-\(n).\(ext)")
            n += 1
        }
        return name
    }

    /// The longest file name Linux allows, in bytes (`NAME_MAX`).
    static let maxBytes = 255

    /// `stem + tail`, the stem cut at a character so the whole stays within `maxBytes`.
    static func fitted(_ stem: String, _ tail: String) -> String {
        let room = maxBytes - tail.utf8.count
        guard stem.utf8.count > room else { return stem + tail }
        var cut = ""
        for character in stem {
            guard cut.utf8.count + character.utf8.count <= room else { break }
            cut.append(character)
        }
        return cut + tail
    }

    /// Characters that separate words in a name: a variable left empty takes one with it.
    static let separators: Set<Character> = ["-", "_", " ", "."]

    /// The pattern with its variables filled in, made safe for a file name: `/`, `\` and `:`
    /// in values become `-`, control characters go, and an empty variable takes one
    /// separator next to it along (`"{stem}-{variant}-{ratio}"` → `IMG_1-1x1`, not
    /// `IMG_1--1x1`).
    static func render(_ pattern: String, _ values: [String: String]) -> String {
        var out = ""
        var dropNextSeparator = false
        for piece in Variables.pieces(pattern) {
            switch piece {
            case .literal(var text):
                if dropNextSeparator, let first = text.first, separators.contains(first) { text.removeFirst() }
                dropNextSeparator = false
                out += text
            case .variable(let name):
                let value = safe(values[name] ?? "")
                if value.isEmpty {
                    if let last = out.last, separators.contains(last) { out.removeLast() } else { dropNextSeparator = true }
                } else {
                    out += value
                    dropNextSeparator = false
                }
            }
        }
        while let first = out.first, separators.contains(first) { out.removeFirst() }
        while let last = out.last, separators.contains(last) { out.removeLast() }
        return out.isEmpty ? "output" : out
    }

    private static func safe(_ value: String) -> String {
        String(value.unicodeScalars.compactMap { scalar -> Character? in
            if scalar.value < 0x20 || scalar.value == 0x7F { return nil }
            return "/\\:".unicodeScalars.contains(scalar) ? "-" : Character(scalar)
        })
    }
}
