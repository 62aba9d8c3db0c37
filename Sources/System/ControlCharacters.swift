/// Characters that change how the text around them is shown without being seen themselves:
/// C0 and C1 controls (a terminal's escape sequences start with ESC, U+001B, or CSI, U+009B),
/// DEL, the line and paragraph separators, and Unicode's bidirectional controls (U+202E, RIGHT-TO-LEFT
/// OVERRIDE, shows `photo‮gpj.exe` as `photoexe.jpg`). A name or a log line from a person must never carry
/// them: names are cleaned of them, log text shows them escaped.
public enum ControlCharacters {
    /// Whether `scalar` is one of them.
    public static func contains(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // ARABIC LETTER MARK, LEFT-TO-RIGHT and RIGHT-TO-LEFT MARK, the embeddings and
        // overrides, the isolates.
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        // LINE SEPARATOR, PARAGRAPH SEPARATOR: a new line by another name.
        case 0x2028, 0x2029: true
        default: false
        }
    }

    /// `text` with each of them written as `\xHH` (below U+0100) or `\u{HHHH}`: every other
    /// character as it is. Text without them is returned unchanged (no copy).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: contains) else { return text }
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 8)
        for scalar in text.unicodeScalars {
            guard contains(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            out += scalar.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{" + hex + "}"
        }
        return out
    }
}
