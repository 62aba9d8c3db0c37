/// Text made safe for HTML and XML — element content and quoted attributes alike: the one
/// escape of report.html, the web console's and share pages, and the QR code's SVG.
public enum MarkupText {
    /// `text` with `&`, `<`, `>`, `"` and `'` as references, and the C0 controls but tab,
    /// newline and return (which XML 1.0 cannot hold, and HTML calls a parse error) as U+FFFD.
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case _ where c.value < 0x20 && c != "\t" && c != "\n" && c != "\r": out += "\u{FFFD}"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
